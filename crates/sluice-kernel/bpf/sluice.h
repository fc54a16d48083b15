/* SPDX-License-Identifier: GPL-2.0 */
/* Messages and maps shared by the BPF side and the sluice agent. The Rust mirror is src/codec.rs; its
 * tests check that both agree on every size. Change both together and bump SLK_VERSION. */
#ifndef SLUICE_H
#define SLUICE_H

/* "SLK1" read as a little-endian u32: the first word of every message in either direction. */
#define SLK_MAGIC 0x314b4c53u
#define SLK_VERSION 3

/* Raw RTT samples one report carries at most; later samples of the period replace the last slot. */
#define SLK_RTT_SAMPLES 8

/* Cells of the flow-cell array, one per live flow: the most flows the datapath controls at once. A flow id's
 * low 16 bits are its cell (flow_id & (SLK_CELLS - 1)). */
#define SLK_CELLS 65536
#define SLK_CELL_BITS 16
/* Cells a starting flow tries (from its flow number on) before it gives up and runs the kernel's Reno. */
#define SLK_CELL_PROBES 16

/* Report kinds. */
#define SLK_KIND_START 1  /* a flow started (or was re-initialised); urgent */
#define SLK_KIND_REPORT 2 /* folded signals */
#define SLK_KIND_END 3    /* the flow's socket released its congestion control */
#define SLK_KIND_PROGRAM 4 /* the flow's datapath program reported its registers (struct slk_preport) */

/* Report flags. */
#define SLK_F_URGENT 1   /* sent at once: loss, RTO or start */
#define SLK_F_FALLBACK 2 /* the watchdog runs the kernel's own Reno for this flow */

/* Decision flags. */
#define SLK_D_CWND 1 /* cwnd_pkts is set */
#define SLK_D_RATE 2 /* pacing_bps is set */
#define SLK_D_PROGRAM 4 /* the flow's program (slk_pstates) runs in place of the fold; absent: the fold */

/* Counter slots of the per-CPU counters map's one value (struct slk_counters). */
enum slk_counter {
	SLK_C_ACKS,            /* ACKs folded */
	SLK_C_REPORTS,         /* reports submitted */
	SLK_C_URGENT,          /* of them, urgent */
	SLK_C_RB_FAIL,         /* ring-buffer reservations that failed (the fold is kept and retried) */
	SLK_C_APPLIED,         /* decisions applied */
	SLK_C_STALE,           /* decisions rejected as stale (old agent epoch or not newer than applied) */
	SLK_C_MALFORMED,       /* decisions rejected as malformed (magic, version, flow id, flags) */
	SLK_C_FALLBACK,        /* times a flow fell back to the kernel's own behaviour */
	SLK_C_RESUMED,         /* times a flow in fallback was handed back to the agent */
	SLK_C_NO_STATE,        /* ACKs of flows without per-flow state (no free cell) */
	SLK_C_FALLBACK_CUBIC,  /* of the fallbacks, those that ran the kernel's Cubic (the others ran Reno) */
	SLK_C_PROGRAM_SIGNALS, /* signals run through flows' programs */
	SLK_C_PROGRAM_REPORTS, /* of the reports, those of programs */
	SLK_C_PROGRAM_LOST,    /* times a flow left its program: state missing, of another flow or agent */
	SLK_C_MAX,
};

/* The per-CPU counters map's one value: a report updates its counters in one lookup and one line. */
struct slk_counters {
	__u64 c[SLK_C_MAX];
	__u64 since_wakeup; /* reports this CPU submitted since it last woke the agent (not a counter) */
};

/* Registers of a datapath program (SLP_REGS in program.h), and the programs (tapes) the agent may have
 * installed at once: flows share a tape, each with its own registers. */
#define SLK_REGS 32
#define SLK_TAPES 64

/* What the watchdog hands a flow to: the kernel's own Reno or Cubic (slk_settings.fallback). */
#define SLK_FALLBACK_RENO 0
#define SLK_FALLBACK_CUBIC 1

/* The settings (the single value of the config map), written by the agent. 56 bytes. */
struct slk_settings {
	__u64 epoch;        /* the running agent's epoch; decisions of other epochs are stale */
	__u64 watchdog_ns;  /* fall back when a report waits longer than this for an answer */
	__u64 batch_acks;   /* report after this many ACKs... */
	__u64 deadline_ns;  /* ...or once the oldest folded ACK is this old, or the flow's RTT if longer */
	__u64 wakeup_bytes; /* wake the agent after this many bytes of reports from one CPU */
	__u64 next_flow;    /* flow number counter (shared by every agent run, so ids are never reused); a flow's
			     * id is its number << SLK_CELL_BITS | its cell */
	__u64 fallback;     /* SLK_FALLBACK_* */
};

/* The head of every report, BPF -> agent. 32 bytes. */
struct slk_rhead {
	__u32 magic;
	__u16 version;
	__u8 kind;
	__u8 slot;          /* which registered name the socket chose (0 = "sluice": port rules) */
	__u64 flow_id;
	__u32 epoch;        /* the agent epoch in force when the report was made */
	__u32 seq;          /* per-flow report sequence number, from 1 (reports of both kinds share it) */
	__u64 now_ns;       /* bpf_ktime_get_ns() at submit */
};

/* The socket's latest-value fields a report carries, read when it leaves. 32 bytes. */
struct slk_snapshot {
	__u32 mss;
	__u32 cwnd_pkts;    /* the window in force */
	__u32 in_flight_pkts;
	__u32 srtt_us;      /* smoothed RTT (latest-value) */
	__u64 snd_una;      /* bytes acknowledged since the flow started (64-bit) */
	__u64 snd_nxt;      /* snd_una plus bytes outstanding */
};

/* BPF -> agent, through the ring buffer. 160 bytes. */
struct slk_report {
	struct slk_rhead head;
	__u64 first_ns;     /* first ACK folded into this report */
	__u32 acks;         /* accumulable */
	__u32 acked_pkts;
	__u64 acked_bytes;
	__u64 ece_bytes;
	__u32 ece_pkts;
	__u32 losses;       /* coalescent: recovery entries in the period */
	__u32 rtos;         /* coalescent: retransmission timeouts in the period */
	__u32 reorders;     /* coalescent: reordering detected in the period */
	struct slk_snapshot snap;
	__u64 delivery_bps; /* latest delivery-rate sample, bit/s (0 = none) */
	__u16 lport;        /* local port, host order */
	__u16 rport;        /* remote port, host order */
	__u16 n_rtt;        /* raw RTT samples in rtt_us */
	__u16 flags;
	__u32 rtt_us[SLK_RTT_SAMPLES];
};

/* BPF -> agent, through the ring buffer: a flow's program reported (kind SLK_KIND_PROGRAM). 336 bytes. */
struct slk_preport {
	struct slk_rhead head;
	__u32 install;      /* the agent's install number of the program that ran (slk_pstate.install) */
	__u16 flags;        /* SLK_F_URGENT: the program said (urgent); SLK_F_FALLBACK */
	__u8 index;         /* the algorithm's number for the program */
	__u8 nregs;         /* registers the program declares */
	struct slk_snapshot snap;
	__u16 lport;
	__u16 rport;
	__u32 signals;      /* signals the program ran since its previous report */
	__u64 regs[SLK_REGS]; /* as reported: before volatile registers start again */
};

/* agent -> BPF: a flow's program state (the slk_pstates hash, key: the flow's cell), written by the agent
 * at each install; the BPF side then runs it on every signal of the flow. 312 bytes. */
struct slk_pstate {
	__u64 flow_id;      /* the flow it was installed for */
	__u32 epoch;        /* the agent that installed it; its tape (slk_tapes) must be of the same agent */
	__u32 install;      /* the agent's install number, echoed in the reports */
	__u32 tape;         /* slot in slk_tapes */
	__u8 index;         /* the algorithm's number for the program */
	__u8 pending;       /* a signal ran since the last report (a due wake runs a tick only then) */
	__u16 nregs;
	__u64 wake;         /* the pending wake, ps of CLOCK_MONOTONIC (0: none) */
	__u64 base_rtt;     /* Flow.base_rtt, ps */
	__u64 line_rate;    /* Flow.line_rate, bit/s */
	__u32 pad;
	__u32 signals;      /* signals run since the last report */
	__u64 regs[SLK_REGS];
};

/* agent -> BPF: the decision in a flow's cell. 40 bytes. */
struct slk_decision {
	__u32 magic;
	__u16 version;
	__u16 flags;        /* SLK_D_* */
	__u64 flow_id;
	__u32 epoch;        /* the agent's epoch */
	__u32 seq;          /* per-flow decision sequence number, from 1; applied once */
	__u32 report_seq;   /* the newest report it answers */
	__u32 cwnd_pkts;
	__u64 pacing_bps;   /* bit/s */
};

/* The BPF side's own per-flow state, the second line of a flow's cell (with a program, reord_base is the
 * base of each ACK's reorderings instead of the report's): read when a report leaves, a decision
 * arrives, or a loss or timeout comes (the per-ACK state is in the socket, struct slk_hot). The agent only
 * reads it (flow_id: which flow holds the cell). 64 bytes. */
struct slk_flow {
	__u64 flow_id;          /* the flow holding the cell; 0 = free (claimed with compare-and-swap) */
	__u64 report_base;      /* tp->bytes_acked at the last report */
	__u32 reord_base;       /* tp->reord_seen at the last report */
	__u32 seq;              /* last report's sequence number */
	__u32 applied_seq;      /* last applied decision */
	__u32 applied_epoch;    /* ...and its agent epoch */
	__u32 losses;           /* coalescent: recovery entries since the last report */
	__u32 rtos;             /* coalescent: retransmission timeouts since the last report */
	__u16 lport;
	__u16 rport;
	__u8 slot;
	__u8 pad[19];
};

/* One flow's cell in the flow-cell array (memory-mapped by the agent): four cache lines. The first is the
 * agent's: the decision, then its generation word, a sequence lock (odd while the agent writes the
 * decision; the agent moves it to the next even value when the decision is complete). The rest are the
 * BPF side's: its state for the flow, and, while the watchdog has handed the flow to the kernel's Cubic,
 * Cubic's state and the words of sluice's per-ACK state that Cubic's displaces in the socket during a
 * call of its functions. 256 bytes. */
struct slk_cell {
	struct slk_decision decision;
	__u32 gen;
	__u32 agent_pad[5];
	struct slk_flow flow;
	__u64 parked[16];
};

_Static_assert(sizeof(struct slk_report) == 160, "src/codec.rs REPORT_BYTES");
_Static_assert(__builtin_offsetof(struct slk_report, snap) == 80, "src/codec.rs Report::parse");
_Static_assert(__builtin_offsetof(struct slk_preport, snap) == 40, "src/codec.rs ProgramReport::parse");
_Static_assert(sizeof(struct slk_decision) == 40, "src/codec.rs DECISION_BYTES");
_Static_assert(sizeof(struct slk_flow) == 64, "src/loader.rs cell layout");
_Static_assert(sizeof(struct slk_cell) == 256, "src/loader.rs CELL_BYTES");
_Static_assert(__builtin_offsetof(struct slk_cell, gen) == 40, "src/loader.rs CELL_GEN");
_Static_assert(__builtin_offsetof(struct slk_cell, flow) == 64, "src/loader.rs CELL_FLOW");
_Static_assert(sizeof(struct slk_settings) == 56, "src/loader.rs Settings");
_Static_assert(sizeof(struct slk_counters) == 120, "src/loader.rs COUNTER_SLOTS");
_Static_assert(sizeof(struct slk_preport) == 336, "src/codec.rs PROGRAM_REPORT_BYTES");
_Static_assert(sizeof(struct slk_pstate) == 312, "src/loader.rs PSTATE_BYTES");

#endif
