//! sluice's Linux kernel TCP datapath: a BPF `tcp_congestion_ops` (bpf/sluice.bpf.c) folds every ACK's
//! signals per flow, reports them in batches through a ring buffer, applies the agent's window and pacing
//! decisions, and falls back to the kernel's own Cubic (Reno with `--fallback reno`, or where the kernel
//! lacks Cubic's functions) when the agent stops answering; the agent runs the library's algorithms on
//! those reports through sluice-plane's fold, triggers and filters. A flow whose algorithm installs a
//! datapath program runs it on the BPF side instead of the fold, and its reports carry the registers.
//!
//! - [`codec`]: the messages both ways, with validation.
//! - [`loader`]: loading, registering and the pinned maps.
//! - [`adapter`]: one flow's plane state and algorithm.
//! - [`agent`]: every flow, and what the agent counted.
//! - [`config`]: algorithm choice per flow (socket name, port rules, default) and settings.
//! - [`runtime`]: the main loop.
//! - [`fixed`]: a fixed-window / fixed-rate test algorithm.
//! - [`program`]: datapath programs on the BPF side: the tape the TCP hooks run per flow on every ACK,
//!   loss and timeout, what the agent installs, and the interpreter under `BPF_PROG_TEST_RUN`.

pub mod adapter;
pub mod agent;
pub mod codec;
pub mod config;
pub mod fixed;
pub mod loader;
pub mod program;
pub mod runtime;
