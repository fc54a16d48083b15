//! The two-machine test's control channel (`sluice test --peer` and `sluice test serve`): frames a peer
//! sends, from a stray host's bytes to a key holder's authenticated messages.
//!
//! The channel is compiled here from the `sluice` crate's source file, as `codec` compiles the kernel
//! agent's: depending on the command-line crate would build everything it runs.

// The file's doc links point at items this crate keeps private; they resolve in `sluice`.
#[allow(dead_code, rustdoc::private_intra_doc_links)]
#[path = "../../sluice/src/test_control.rs"]
mod channel;

use std::io::{self, Read, Write};

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use channel::{Channel, ControlError, Message};

/// The key of the fuzzed channel.
const KEY: &[u8] = b"the fuzzed channel's shared key";
/// The session nonce of authenticated inputs.
const NONCE: [u8; 32] = [7; 32];

/// An input as a stream: reads come from the input, writes go nowhere.
struct Wire<'a>(&'a [u8]);

impl Read for Wire<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Wire<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The first byte chooses: even, the rest is raw bytes after the nonce, as any host may send them; odd,
/// the rest is message bodies split at 0 bytes, each framed and tagged as the server holding the key
/// would. Every frame is received until one is refused; none may panic, and an accepted message must
/// encode to a body that decodes to itself (numbers within a few ulps).
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let stream = if mode % 2 == 0 { rest.to_vec() } else { authenticated(rest) };
    let Ok(mut client) = Channel::connect(Wire(&stream), KEY) else { return };
    loop {
        match client.receive() {
            Ok(message) => {
                let body = serde_json::to_vec(&message).expect("a message encodes");
                let again: Message = serde_json::from_slice(&body).expect("an encoded message decodes");
                let (a, b) = (serde_json::to_value(&message), serde_json::to_value(&again));
                assert!(same(&a.expect("a value"), &b.expect("a value")), "{message:?} does not round-trip: {again:?}");
            }
            Err(e) => {
                drop(e.to_string());
                return;
            }
        }
    }
}

/// Whether two JSON values are equal, floating-point numbers within a few units in the last place:
/// serde_json reads a number's shortest text back to a neighbouring double at times (without its
/// `float_roundtrip` parser), so a counter of the server's stats may come back one ulp off.
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() => (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs()),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The nonce, then each body of `bodies` (split at 0 bytes) framed and tagged in the server's
/// direction with its number: the layout `test_control` documents.
fn authenticated(bodies: &[u8]) -> Vec<u8> {
    let mut stream = NONCE.to_vec();
    for (number, body) in bodies.split(|&b| b == 0).enumerate() {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(KEY).expect("any key length");
        mac.update(&NONCE);
        mac.update(&[1]);
        mac.update(&(number as u64).to_be_bytes());
        mac.update(body);
        stream.extend_from_slice(&(body.len() as u32).to_be_bytes());
        stream.extend_from_slice(body);
        stream.extend_from_slice(&mac.finalize().into_bytes());
    }
    stream
}
