//! Streamed traces of CC variables. Each traced flow has its own bounded, wait-free ring (`rtrb`, one
//! producer and one consumer): whenever one of its algorithm's variables changes, the flow's tap pushes
//! a record, and a writer thread drains every ring into `trace.csv` as the run goes. Memory stays
//! bounded however long the run: a record that finds its ring full is dropped and counted, so a writer
//! that falls behind costs records, never the datapath's pace.
//!
//! The file has the simulator's columns (`time_ns,flow,variable,value`); a row is written for a variable
//! when its value changes (all of them at a flow's first record). A writer drains its rings in turns,
//! so one flow's rows are in time order and rows of different flows interleave by turn. One writer
//! takes the rings of one endpoint (one sender thread): a single writer for eight sender threads fell
//! behind at 3.2 million rows/s (BENCHMARKS.md).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use rtrb::{Consumer, Producer, RingBuffer};
use sluice_core::Time;
use sluice_results::csv::{write_trace_row, TRACE_HEADER};
use sluice_results::{TraceRecorder, TraceSink};

/// Records one traced flow's ring holds by default: 1,024 records of 32 bytes, 32 KB per flow.
pub const DEFAULT_RING_RECORDS: usize = 1024;

/// How long the writer sleeps when it found every ring empty.
const IDLE: Duration = Duration::from_micros(200);

/// One changed variable of one flow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRecord {
    /// When it changed, picoseconds on the endpoint's clock.
    pub time: Time,
    /// The variable's name, as the algorithm's `trace` reports it.
    pub name: &'static str,
    /// Its new value.
    pub value: f64,
}

/// What the taps of one endpoint recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapCounters {
    /// Records pushed into rings.
    pub records: u64,
    /// Records dropped because their ring was full (the writer fell behind).
    pub dropped: u64,
}

impl TapCounters {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &TapCounters) {
        self.records += o.records;
        self.dropped += o.dropped;
    }
}

/// Where endpoints get rings for their traced flows: a handle on a [`TraceWriter`], cloned for each
/// endpoint (each sender thread).
#[derive(Clone)]
pub struct TraceStream {
    rings: mpsc::Sender<(u64, Consumer<TraceRecord>)>,
    capacity: usize,
    interval: Time,
}

impl TraceStream {
    /// A tap for flow `flow`, its ring handed to the writer.
    pub fn tap(&self, flow: u64) -> TraceTap {
        let (ring, drain) = RingBuffer::new(self.capacity);
        // A writer that has ended takes no more rings: the tap's records then fill its ring and are
        // counted as dropped.
        let _ = self.rings.send((flow, drain));
        TraceTap { ring, last: Vec::new(), interval: self.interval, last_time: None }
    }
}

/// The producing end of one traced flow: pushes the variables that changed.
pub struct TraceTap {
    ring: Producer<TraceRecord>,
    /// The values last recorded, in the order the algorithm reports them.
    last: Vec<(&'static str, f64)>,
    interval: Time,
    last_time: Option<Time>,
}

impl TraceTap {
    /// Pushes a record at `now` of each variable `report` reports whose value changed since the last
    /// record (every variable the first time), unless the last record is less than the interval old.
    pub fn record(&mut self, now: Time, report: &mut dyn FnMut(&mut TraceSink<'_>), counters: &mut TapCounters) {
        if self.last_time.is_some_and(|t| now < t + self.interval) {
            return;
        }
        let (last, ring) = (&mut self.last, &mut self.ring);
        let mut k = 0;
        let mut changed = false;
        report(&mut |name, value| {
            let same = last.get(k).is_some_and(|&(n, v)| n == name && v.to_bits() == value.to_bits());
            if !same {
                match last.get_mut(k) {
                    Some(slot) => *slot = (name, value),
                    None => last.push((name, value)),
                }
                changed = true;
                match ring.push(TraceRecord { time: now, name, value }) {
                    Ok(()) => counters.records += 1,
                    Err(_) => counters.dropped += 1,
                }
            }
            k += 1;
        });
        if changed {
            self.last_time = Some(now);
        }
    }
}

/// How one traced flow keeps its variables: rows in memory, written when the run ends, or records
/// streamed through its ring.
pub enum FlowTracer {
    /// Rows kept in memory ([`TraceRecorder`]).
    Kept(TraceRecorder),
    /// Changes streamed to the writer.
    Streamed(TraceTap),
}

impl FlowTracer {
    /// Records what `report` reports at `now`; streamed records are counted in `counters`.
    pub fn record(&mut self, now: Time, report: &mut dyn FnMut(&mut TraceSink<'_>), counters: &mut TapCounters) {
        match self {
            FlowTracer::Kept(rows) => rows.record(now, report),
            FlowTracer::Streamed(tap) => tap.record(now, report, counters),
        }
    }

    /// The kept rows, if kept.
    pub fn kept(&self) -> Option<&TraceRecorder> {
        match self {
            FlowTracer::Kept(rows) => Some(rows),
            FlowTracer::Streamed(_) => None,
        }
    }
}

/// The thread that drains every ring into the trace file.
pub struct TraceWriter {
    handle: JoinHandle<io::Result<u64>>,
    stop: Arc<AtomicBool>,
}

impl TraceWriter {
    /// Starts a writer into `out` (the header first) for rings of `capacity` records whose taps record
    /// at most every `interval` (0: every change); returns it and the stream endpoints take taps from.
    pub fn start<W: Write + Send + 'static>(out: W, capacity: usize, interval: Time) -> (TraceWriter, TraceStream) {
        let (rings, registered) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let handle = std::thread::spawn(move || drain(out, &registered, &stopping));
        (TraceWriter { handle, stop }, TraceStream { rings, capacity: capacity.max(1), interval })
    }

    /// Drains what the rings still hold, once every tap's records are in (call it after the endpoints
    /// are done), and returns the records written.
    pub fn finish(self) -> io::Result<u64> {
        self.stop.store(true, Ordering::Release);
        self.handle.join().map_err(|_| io::Error::other("the trace writer thread panicked"))?
    }
}

fn drain<W: Write>(
    out: W,
    registered: &mpsc::Receiver<(u64, Consumer<TraceRecord>)>,
    stop: &AtomicBool,
) -> io::Result<u64> {
    let mut out = io::BufWriter::with_capacity(1 << 20, out);
    writeln!(out, "{TRACE_HEADER}")?;
    let mut rings: Vec<(u64, Consumer<TraceRecord>)> = Vec::new();
    let mut written = 0;
    loop {
        // Read before the pass: a stop seen here came after every record was pushed, so a pass that
        // then moves nothing has emptied every ring.
        let stopping = stop.load(Ordering::Acquire);
        rings.extend(registered.try_iter());
        let mut moved = 0;
        for (flow, ring) in &mut rings {
            let n = ring.slots();
            let Ok(chunk) = ring.read_chunk(n) else { continue };
            for r in chunk {
                write_trace_row(&mut out, r.time, *flow, r.name, r.value)?;
            }
            moved += n as u64;
        }
        written += moved;
        rings.retain(|(_, ring)| !(ring.is_abandoned() && ring.is_empty()));
        if moved == 0 {
            if stopping {
                break;
            }
            out.flush()?;
            std::thread::sleep(IDLE);
        }
    }
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A `Write` whose bytes the test reads after the writer ends.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn report<'a>(values: &'a [(&'static str, f64)]) -> impl FnMut(&mut TraceSink<'_>) + 'a {
        move |out| values.iter().for_each(|&(n, v)| out(n, v))
    }

    #[test]
    fn only_changed_variables_are_written() {
        let file = Shared::default();
        let (writer, stream) = TraceWriter::start(file.clone(), 64, 0);
        let mut tap = stream.tap(7);
        let mut c = TapCounters::default();
        tap.record(1_000, &mut report(&[("cwnd", 10.0), ("alpha", 1.0)]), &mut c);
        tap.record(2_000, &mut report(&[("cwnd", 10.0), ("alpha", 1.0)]), &mut c);
        tap.record(3_000, &mut report(&[("cwnd", 5.0), ("alpha", 1.0)]), &mut c);
        drop(tap);
        assert_eq!(writer.finish().unwrap(), 3);
        assert_eq!(c, TapCounters { records: 3, dropped: 0 });
        let text = String::from_utf8(file.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "time_ns,flow,variable,value\n1.000,7,cwnd,10\n1.000,7,alpha,1\n3.000,7,cwnd,5\n");
    }

    #[test]
    fn a_full_ring_drops_and_counts_and_the_interval_spaces_records() {
        let file = Shared::default();
        let (writer, stream) = TraceWriter::start(file.clone(), 4, 1_000);
        // The writer may drain between any two pushes, so how many of 1,000 changes a ring of 4 drops
        // depends on timing; the counts add up either way.
        let mut tap = stream.tap(1);
        let mut c = TapCounters::default();
        tap.record(0, &mut report(&[("rate", 1.0)]), &mut c);
        tap.record(500, &mut report(&[("rate", 2.0)]), &mut c);
        assert_eq!(c.records + c.dropped, 1, "a change within the interval waits");
        for k in 1..1_000u64 {
            tap.record(k * 1_000, &mut report(&[("rate", k as f64 + 1.0)]), &mut c);
        }
        drop(tap);
        let written = writer.finish().unwrap();
        assert_eq!(c.records + c.dropped, 1_000);
        assert_eq!(written, c.records, "every pushed record is written");
        let text = String::from_utf8(file.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count() as u64, 1 + written);
    }
}
