/* SPDX-License-Identifier: GPL-2.0 */
/* Messages and maps shared by the BPF side and the sluice agent. The Rust mirror is src/codec.rs; its
 * tests check that both agree on every size. Change both together and bump SLK_VERSION. */
#ifndef SLUICE_H
#define SLUICE_H

/* "SLK1" read as a little-endian u32: the first word of every message in either direction. */
#define SLK_MAGIC 0x314b4c53u
#define SLK_VERSION 1

/* Raw RTT samples one report carries at most; later samples of the period replace the last slot. */
#define SLK_RTT_SAMPLES 8

/* Slots of the decision-generation array: a flow watches slot flow_id & (SLK_GEN_SLOTS - 1). Flows whose
 * ids share a slot only cost each other a spurious decision-map lookup. Same bound as the decisions map. */
#define SLK_GEN_SLOTS 65536

/* Report kinds. */
#define SLK_KIND_START 1  /* a flow started (or was re-initialised); urgent */
#define SLK_KIND_REPORT 2 /* folded signals */
#define SLK_KIND_END 3    /* the flow's socket released its congestion control */

/* Report flags. */
#define SLK_F_URGENT 1   /* sent at once: loss, RTO or start */
#define SLK_F_FALLBACK 2 /* the watchdog runs the kernel's own Reno for this flow */

/* Decision flags. */
#define SLK_D_CWND 1 /* cwnd_pkts is set */
#define SLK_D_RATE 2 /* pacing_bps is set */

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
	SLK_C_NO_STATE,        /* ACKs of flows without per-flow state (storage allocation failed) */
	SLK_C_MAX,
};

/* The per-CPU counters map's one value: a report updates its counters in one lookup and one line. */
struct slk_counters {
	__u64 c[SLK_C_MAX];
	__u64 since_wakeup; /* reports this CPU submitted since it last woke the agent (not a counter) */
};

/* The settings (the single value of the config map), written by the agent. 48 bytes. */
struct slk_settings {
	__u64 epoch;        /* the running agent's epoch; decisions of other epochs are stale */
	__u64 watchdog_ns;  /* fall back when a report waits longer than this for an answer */
	__u64 batch_acks;   /* report after this many ACKs... */
	__u64 deadline_ns;  /* ...or once the oldest folded ACK is this old, or the flow's RTT if longer */
	__u64 wakeup_bytes; /* wake the agent after this many bytes of reports from one CPU */
	__u64 next_flow;    /* flow id counter (shared by every agent run, so ids are never reused) */
};

/* BPF -> agent, through the ring buffer. 160 bytes. */
struct slk_report {
	__u32 magic;
	__u16 version;
	__u8 kind;
	__u8 slot;          /* which registered name the socket chose (0 = "sluice": port rules) */
	__u64 flow_id;
	__u32 epoch;        /* the agent epoch in force when the report was made */
	__u32 seq;          /* per-flow report sequence number, from 1 */
	__u64 now_ns;       /* bpf_ktime_get_ns() at submit */
	__u64 first_ns;     /* first ACK folded into this report */
	__u32 acks;         /* accumulable */
	__u32 acked_pkts;
	__u64 acked_bytes;
	__u64 ece_bytes;
	__u32 ece_pkts;
	__u32 losses;       /* coalescent: recovery entries in the period */
	__u32 rtos;         /* coalescent: retransmission timeouts in the period */
	__u32 reorders;     /* coalescent: reordering detected in the period */
	__u32 mss;
	__u32 cwnd_pkts;    /* the window in force */
	__u32 in_flight_pkts;
	__u32 srtt_us;      /* smoothed RTT (latest-value) */
	__u64 snd_una;      /* bytes acknowledged since the flow started (64-bit) */
	__u64 snd_nxt;      /* snd_una plus bytes outstanding */
	__u64 delivery_bps; /* latest delivery-rate sample, bit/s (0 = none) */
	__u16 lport;        /* local port, host order */
	__u16 rport;        /* remote port, host order */
	__u16 n_rtt;        /* raw RTT samples in rtt_us */
	__u16 flags;
	__u32 rtt_us[SLK_RTT_SAMPLES];
};

/* agent -> BPF: the value of the decisions map, keyed by flow id. 40 bytes. */
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

_Static_assert(sizeof(struct slk_report) == 160, "src/codec.rs REPORT_BYTES");
_Static_assert(sizeof(struct slk_decision) == 40, "src/codec.rs DECISION_BYTES");
_Static_assert(sizeof(struct slk_settings) == 48, "src/loader.rs Settings");
_Static_assert(sizeof(struct slk_counters) == 88, "src/loader.rs COUNTER_SLOTS");

#endif
