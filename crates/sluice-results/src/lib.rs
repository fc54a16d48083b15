//! Results of a finished sluice run: summaries, a terminal table and output files.
//!
//! The simulator fills the raw record types of [`records`] ([`FlowRecord`], [`PortRecord`],
//! [`SwitchRecord`], [`ThroughputSeries`], [`FlowTrace`], [`RunInfo`]). [`Summary::compute`] reduces them
//! to per-size-bucket slowdown statistics and run totals, [`render_table`] prints those for a terminal, and
//! [`write_outputs`] writes every output file into a directory atomically.
//!
//! Files are byte-identical for identical input: nothing depends on wall-clock time, hash order or the
//! platform, and every float written is rounded to a fixed precision.

#![warn(missing_docs)]

pub mod buckets;
pub mod csv;
pub mod output;
pub mod records;
pub mod stats;
pub mod summary;
pub mod table;

pub use buckets::{Buckets, BucketsError};
pub use output::{
    render_outputs, write_outputs, write_outputs_unless, write_rendered, OutputError, Outputs, FILE_NAMES,
    OPTIONAL_FILE_NAMES,
};
pub use records::{
    ideal_fct, slowdown, BytesKind, FlowRecord, FlowTrace, PacketEvent, PacketFields, PacketRow, PacketTrace,
    PortRecord, RunInfo, SwitchRecord, ThroughputSeries, TraceRecorder, TraceRow, TraceSink, DEFAULT_TRACE_ROWS,
};
pub use stats::{jain_fairness, mean, percentile, round6};
pub use summary::{
    BucketStats, FctStats, LinkUtilisation, LongLivedFlow, LongLivedSummary, Peak, RunSummary, SlowdownStats, Summary,
    Totals,
};
pub use table::render_table;
