//! The control channel of a two-machine test: `sluice test SCENARIO --peer ADDR` asks a `sluice test
//! serve` host to receive the scenario's flows and, when they are done, for what it received.
//!
//! Both ends hold a shared key from a file. The server opens each connection with 32 random bytes
//! (the session's nonce); every message after that is a frame of a 4-byte big-endian length, a JSON
//! body, and an HMAC-SHA256 tag over the nonce, the direction, the message's number in its direction
//! and the body. A host without the key cannot start or steer a test, a recorded message does not
//! replay into another session or out of order, and a server's message cannot be reflected back to it.
//! A frame that is too long, fails its tag or is not a message is refused with a reason, and the
//! connection ends.

use std::fmt;
use std::io::{self, Read, Write};
use std::path::Path;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The longest body a frame may carry.
pub const MAX_BODY: usize = 1 << 16;
/// The shortest key a key file may hold, bytes.
pub const MIN_KEY: usize = 16;
/// Bytes of the session nonce.
const NONCE: usize = 32;
/// Bytes of a frame's tag.
const TAG: usize = 32;

/// A message of the control channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// Client: receive a test's flows.
    Start {
        /// The receiver-driven algorithm whose receiver side runs at the server, if the flows' is one.
        algorithm: Option<String>,
        /// Its parameters, `KEY=VALUE`.
        params: Vec<String>,
        /// The server host's line rate, bit/s (its token pacer's rate).
        line_rate_bps: u64,
        /// The base RTT receiver controllers are told, ns.
        base_rtt_ns: u64,
        /// Receiver threads.
        threads: usize,
        /// The longest the server receives before it stops on its own, ns.
        limit_ns: u64,
    },
    /// Server: receiving on this UDP port of the control connection's address.
    Ready {
        /// The data port.
        port: u16,
    },
    /// Client: the flows are done; stop and report.
    Stop,
    /// Server: what it received (the receiver's `--stats` JSON).
    Stats {
        /// The counters.
        stats: serde_json::Value,
    },
    /// Either end: the request was refused, and why.
    Error {
        /// What was wrong.
        message: String,
    },
}

/// Why a frame was refused.
#[derive(Debug)]
pub enum ControlError {
    /// The connection failed or ended.
    Io(io::Error),
    /// A frame announced a body longer than [`MAX_BODY`].
    TooLong(usize),
    /// A frame's tag did not verify: another key, a replayed, reordered or reflected message, or a
    /// damaged one.
    BadTag,
    /// A verified body that is not a message.
    Malformed(String),
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::Io(e) => write!(f, "connection: {e}"),
            ControlError::TooLong(n) => write!(f, "a frame of {n} bytes, more than the {MAX_BODY} allowed"),
            ControlError::BadTag => {
                f.write_str("a message failed authentication (another key, or a replayed or damaged message)")
            }
            ControlError::Malformed(why) => write!(f, "a malformed message: {why}"),
        }
    }
}

impl From<io::Error> for ControlError {
    fn from(e: io::Error) -> Self {
        ControlError::Io(e)
    }
}

/// Reads the shared key from `path`: its bytes without surrounding whitespace, at least [`MIN_KEY`]; on
/// Unix the file must not be readable by others than its owner, as ssh asks of private keys.
pub fn read_key(path: &Path) -> Result<Vec<u8>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("--key {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_err(|e| format!("--key {}: {e}", path.display()))?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "--key {}: readable by others than its owner (mode {:o}); `chmod 600` it",
                path.display(),
                mode & 0o777
            ));
        }
    }
    let key = bytes.trim_ascii().to_vec();
    if key.len() < MIN_KEY {
        return Err(format!("--key {}: {} bytes, fewer than the {MIN_KEY} a key needs", path.display(), key.len()));
    }
    Ok(key)
}

/// Which end of the channel this is: it tags what it sends with its own direction and checks the
/// other's on what it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client = 0,
    Server = 1,
}

/// One authenticated control connection.
pub struct Channel<S> {
    stream: S,
    key: Vec<u8>,
    nonce: [u8; NONCE],
    side: Side,
    sent: u64,
    received: u64,
}

impl<S: Read + Write> Channel<S> {
    /// The server's end: sends a fresh nonce first.
    pub fn accept(mut stream: S, key: &[u8]) -> Result<Channel<S>, ControlError> {
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).map_err(|e| ControlError::Io(io::Error::other(e.to_string())))?;
        stream.write_all(&nonce)?;
        stream.flush()?;
        Ok(Channel { stream, key: key.to_vec(), nonce, side: Side::Server, sent: 0, received: 0 })
    }

    /// The client's end: reads the server's nonce.
    pub fn connect(mut stream: S, key: &[u8]) -> Result<Channel<S>, ControlError> {
        let mut nonce = [0u8; NONCE];
        stream.read_exact(&mut nonce)?;
        Ok(Channel { stream, key: key.to_vec(), nonce, side: Side::Client, sent: 0, received: 0 })
    }

    /// The connection, for its settings (timeouts).
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Sends `message`.
    pub fn send(&mut self, message: &Message) -> Result<(), ControlError> {
        let body = serde_json::to_vec(message).map_err(|e| ControlError::Malformed(e.to_string()))?;
        let tag = self.tag(self.side, self.sent, &body);
        self.sent += 1;
        let mut frame = Vec::with_capacity(4 + body.len() + TAG);
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(&body);
        frame.extend_from_slice(&tag);
        self.stream.write_all(&frame)?;
        self.stream.flush()?;
        Ok(())
    }

    /// Receives the next message, verified.
    pub fn receive(&mut self) -> Result<Message, ControlError> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len)?;
        let len = u32::from_be_bytes(len) as usize;
        if len > MAX_BODY {
            return Err(ControlError::TooLong(len));
        }
        let mut body = vec![0u8; len + TAG];
        self.stream.read_exact(&mut body)?;
        let tag = body.split_off(len);
        let other = if self.side == Side::Client { Side::Server } else { Side::Client };
        let mac = self.mac(other, self.received, &body);
        mac.verify_slice(&tag).map_err(|_| ControlError::BadTag)?;
        self.received += 1;
        serde_json::from_slice(&body).map_err(|e| ControlError::Malformed(e.to_string()))
    }

    fn tag(&self, side: Side, number: u64, body: &[u8]) -> [u8; TAG] {
        self.mac(side, number, body).finalize().into_bytes().into()
    }

    fn mac(&self, side: Side, number: u64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(&self.nonce);
        mac.update(&[side as u8]);
        mac.update(&number.to_be_bytes());
        mac.update(body);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    const KEY: &[u8] = b"0123456789abcdef-shared";

    fn pair(server_key: &[u8], client_key: &[u8]) -> (Channel<UnixStream>, Channel<UnixStream>) {
        let (a, b) = UnixStream::pair().unwrap();
        let server = Channel::accept(a, server_key).unwrap();
        let client = Channel::connect(b, client_key).unwrap();
        (server, client)
    }

    fn start() -> Message {
        Message::Start {
            algorithm: None,
            params: vec![],
            line_rate_bps: 10_000_000_000,
            base_rtt_ns: 20_000,
            threads: 2,
            limit_ns: 5_000_000_000,
        }
    }

    #[test]
    fn messages_go_both_ways_with_the_same_key() {
        let (mut server, mut client) = pair(KEY, KEY);
        client.send(&start()).unwrap();
        assert_eq!(server.receive().unwrap(), start());
        server.send(&Message::Ready { port: 5301 }).unwrap();
        assert_eq!(client.receive().unwrap(), Message::Ready { port: 5301 });
        client.send(&Message::Stop).unwrap();
        assert_eq!(server.receive().unwrap(), Message::Stop);
    }

    #[test]
    fn another_key_fails_authentication() {
        let (mut server, mut client) = pair(KEY, b"0123456789abcdef-guessed");
        client.send(&start()).unwrap();
        assert!(matches!(server.receive(), Err(ControlError::BadTag)));
    }

    /// Writes raw bytes into the server's end, as a stray or hostile host would.
    fn raw(bytes: &[u8]) -> ControlError {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut server = Channel::accept(a, KEY).unwrap();
        let mut nonce = [0u8; NONCE];
        b.read_exact(&mut nonce).unwrap();
        b.write_all(bytes).unwrap();
        drop(b);
        server.receive().unwrap_err()
    }

    #[test]
    fn oversized_truncated_and_unauthenticated_frames_are_refused() {
        assert!(matches!(raw(&u32::MAX.to_be_bytes()), ControlError::TooLong(_)));
        assert!(matches!(raw(&[0, 0, 0, 10, b'{']), ControlError::Io(_)), "a frame cut short");
        let mut unsigned = 2u32.to_be_bytes().to_vec();
        unsigned.extend_from_slice(b"{}");
        unsigned.extend_from_slice(&[0u8; TAG]);
        assert!(matches!(raw(&unsigned), ControlError::BadTag));
    }

    #[test]
    fn a_replayed_or_reflected_message_fails_authentication() {
        // Replay: the client's first message again, captured off the wire.
        let (a, b) = UnixStream::pair().unwrap();
        let mut server = Channel::accept(a, KEY).unwrap();
        let mut client = Channel::connect(b.try_clone().unwrap(), KEY).unwrap();
        client.send(&Message::Stop).unwrap();
        let mut frame = vec![0u8; 4 + br#"{"kind":"stop"}"#.len() + TAG];
        server.stream.read_exact(&mut frame).unwrap();
        let mut replay = UnixStream::pair().unwrap();
        replay.1.write_all(&frame).unwrap();
        replay.1.write_all(&frame).unwrap();
        let mut listening = Channel {
            stream: replay.0,
            key: KEY.to_vec(),
            nonce: server.nonce,
            side: Side::Server,
            sent: 0,
            received: 0,
        };
        assert_eq!(listening.receive().unwrap(), Message::Stop, "the original verifies");
        assert!(matches!(listening.receive(), Err(ControlError::BadTag)), "its replay does not");
        // Reflection: the server's own message sent back to it.
        let mut reflect = UnixStream::pair().unwrap();
        let mut speaker = Channel {
            stream: reflect.0.try_clone().unwrap(),
            key: KEY.to_vec(),
            nonce: server.nonce,
            side: Side::Server,
            sent: 0,
            received: 0,
        };
        speaker.send(&Message::Stop).unwrap();
        let mut echoed = vec![0u8; frame.len()];
        reflect.1.read_exact(&mut echoed).unwrap();
        reflect.1.write_all(&echoed).unwrap();
        assert!(matches!(speaker.receive(), Err(ControlError::BadTag)));
    }

    #[test]
    fn an_authenticated_body_that_is_no_message_is_malformed() {
        let (mut server, mut client) = pair(KEY, KEY);
        let body = br#"{"kind":"launch","missiles":1}"#;
        let tag = client.tag(Side::Client, 0, body);
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        frame.extend_from_slice(&tag);
        client.stream.write_all(&frame).unwrap();
        assert!(matches!(server.receive(), Err(ControlError::Malformed(_))));
    }

    #[test]
    fn key_files_must_be_private_and_long_enough() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sluice-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        std::fs::write(&path, "short\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(read_key(&path).unwrap_err().contains("fewer than the 16"));
        std::fs::write(&path, "0123456789abcdef0123\n").unwrap();
        assert_eq!(read_key(&path).unwrap(), b"0123456789abcdef0123");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_key(&path).unwrap_err().contains("chmod 600"));
        assert!(read_key(&dir.join("missing")).unwrap_err().contains("missing"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
