// SPDX-License-Identifier: GPL-2.0
/* sluice's kernel datapath: a tcp_congestion_ops that folds each ACK's signals into per-flow state,
 * reports them to the sluice agent through a ring buffer in batches, applies the agent's decisions
 * (cwnd, pacing rate) from the flow's cell of a memory-mapped array, and falls back to the kernel's own
 * Cubic or Reno when the agent stops answering. The same programs are registered under several names
 * (slots) so that a socket can choose its algorithm with TCP_CONGESTION; slot 0 ("sluice") leaves the
 * choice to the agent's port rules. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "sluice.h"
#include "program.h"

char _license[] SEC("license") = "GPL";

/* A profiling build (SLUICE_BPF_CFLAGS=-DSLK_PROFILE=1; examples/kernel_bench.rs prints the result):
 * bpf_ktime_get_ns() around the rare parts of an ACK, summed per CPU. Sections nest (report holds
 * reserve), so an outer figure includes its inner probes (~50-100 ns each). Off in every normal build. */
#ifdef SLK_PROFILE
enum slk_section { SLK_P_DECIDE, SLK_P_REPORT, SLK_P_RESERVE, SLK_P_PROGRAM, SLK_P_EXEC, SLK_P_MAX };
struct slk_profile {
	__u64 ns[SLK_P_MAX];
	__u64 runs[SLK_P_MAX];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slk_profile);
} slk_profile SEC(".maps");

static __always_inline void prof_add(__u32 section, __u64 start)
{
	__u32 key = 0;
	struct slk_profile *p = bpf_map_lookup_elem(&slk_profile, &key);

	if (p && section < SLK_P_MAX) {
		p->ns[section] += bpf_ktime_get_ns() - start;
		p->runs[section] += 1;
	}
}
#define PROF_START(v) __u64 v = bpf_ktime_get_ns()
#define PROF_ADD(section, v) prof_add(section, v)
#else
#define PROF_START(v)
#define PROF_ADD(section, v)
#endif

/* tcp_input.c's ACK flags (not in BTF: they are #defines). */
#define FLAG_DATA_ACKED 0x04
#define FLAG_DATA_SACKED 0x20
#define FLAG_ECE 0x40
#define FLAG_FORWARD_PROGRESS (FLAG_DATA_ACKED | FLAG_DATA_SACKED)

#define TCP_INFINITE_SSTHRESH 0x7fffffff

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
/* The kernel's own Cubic (net/ipv4/tcp_cubic.c), which the watchdog runs while the agent is away. Weak: a
 * kernel whose Cubic is a module not loaded, or does not export it to BPF, still loads sluice, and its
 * flows fall back to Reno (libbpf resolves a missing weak kfunc to address 0, and the verifier drops the
 * calls behind slk_has_cubic()). */
extern void cubictcp_init(struct sock *sk) __ksym __weak;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym __weak;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym __weak;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym __weak;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym __weak;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym __weak;

static __always_inline bool slk_has_cubic(void)
{
	return !!cubictcp_init && !!cubictcp_recalc_ssthresh && !!cubictcp_cong_avoid && !!cubictcp_state &&
	       !!cubictcp_cwnd_event && !!cubictcp_acked;
}

#ifndef barrier
#define barrier() asm volatile("" ::: "memory")
#endif
#define READ_ONCE_U32(x) (*(volatile __u32 *)&(x))

/* The per-ACK state, in the socket's own congestion-control area (icsk_ca_priv, 104 bytes, zeroed by
 * the kernel before init): an ordinary ACK touches only this and the socket, and calls no helper.
 * Measured on the 2-core test machine, the bpf_sk_storage_get() and settings lookup this replaced were
 * most of an ACK's cost above the floor (BENCHMARKS.md, "Kernel datapath"). */
struct slk_hot {
	__u64 unanswered_since; /* first report not answered yet (0 = none owed) */
	__u64 first_ns;         /* first ACK folded into the next report (0 = none yet) */
	__u64 acked_total;      /* tp->bytes_acked at the last ACK */
	__u64 ece_bytes;        /* accumulable: bytes acknowledged by ECE-marked ACKs */
	__u32 rate_interval_us; /* latest rate sample's interval... */
	__u32 rate_delivered;   /* ...and packets delivered in it (the division waits for the report) */
	__u32 seen_gen;         /* the cell's generation word when its decision was last read */
	__u32 acks;             /* ACKs folded since the last report */
	__u32 acked_pkts;
	__u32 ece_pkts;
	__u32 period_ns;        /* report once the first folded ACK is this old: max(deadline, srtt) */
	__u32 watchdog_ns;      /* copies of the settings, refreshed at every report */
	__u32 rtt_us[SLK_RTT_SAMPLES]; /* the raw RTT samples of the period */
	__u16 batch_acks;
	__u8 ca_state;          /* icsk_ca_state seen at the last ACK */
	__u8 n_rtt;             /* raw RTT samples in rtt_us */
	__u16 cell;             /* the flow's cell: flow_id & (SLK_CELLS - 1) */
	__u8 flags;             /* SLK_H_* */
	__u8 pad;
};

#define SLK_H_READY 1    /* init gave the flow its state; without it, the flow runs the kernel's Reno */
#define SLK_H_FALLBACK 2 /* the watchdog runs the kernel's Reno or Cubic */
#define SLK_H_PACING 4   /* the agent set a pacing rate */
#define SLK_H_CUBIC 8    /* the fallback is the kernel's Cubic, whose state is in the cell (swap_in) */
#define SLK_H_PROGRAM 16 /* the flow's datapath program runs in place of the fold (slk_pstates) */

/* Cubic's state is swapped into the first SLK_SWAP_WORDS words of icsk_ca_priv around each call of its
 * functions: the rest of the cell's `parked` area keeps those words of sluice's state meanwhile. */
#define SLK_SWAP_WORDS 8

_Static_assert(sizeof(struct slk_hot) <= sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "the per-ACK state must fit icsk_ca_priv");
_Static_assert(sizeof(struct bictcp) <= SLK_SWAP_WORDS * 8, "the kernel's Cubic state must fit the swap");
_Static_assert(2 * SLK_SWAP_WORDS <= sizeof(((struct slk_cell *)0)->parked) / 8, "the swap must fit the cell");

/* The flow cells (struct slk_cell in sluice.h): the rest of a flow's state and its decision, one cell per
 * live flow, claimed at init and freed at release. An array lookup is inlined by the verifier (no helper
 * call), and a report or a decision touches one or two of the cell's cache lines, where socket-local
 * storage and a hash map cost a helper call and a chain of dependent misses (BENCHMARKS.md, "Kernel
 * datapath"). The agent maps the array into its memory and writes decisions with plain stores. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SLK_CELLS);
	__type(key, __u32);
	__type(value, struct slk_cell);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_cells SEC(".maps");

/* 4 MiB: 26k reports, about 4 s of the 1,000-connection check's report rate, so an agent stalled for
 * seconds (or restarting) loses nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_reports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slk_settings);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slk_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_counters SEC(".maps");

/* Datapath programs (docs/programs.md): the tapes the agent installed (shared by flows), each tagged
 * with the agent that wrote it, and each program flow's state (its registers), keyed by the flow's cell.
 * The agent writes a flow's state before the decision that turns its program on (SLK_D_PROGRAM), and
 * replaces it whole at every install: a hash element is swapped in at once and the old one freed after
 * the programs that may hold it finish, so an ACK sees one install or the other, never a mix. */
struct slk_tape {
	__u64 epoch;
	struct slp_prog prog;
};

_Static_assert(SLK_REGS == SLP_REGS, "sluice.h and program.h agree on the registers");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLK_TAPES);
	__type(key, __u32);
	__type(value, struct slk_tape);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_tapes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SLK_CELLS);
	__type(key, __u32);
	__type(value, struct slk_pstate);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_pstates SEC(".maps");

/* The interpreter's per-signal scratch (fields, operand stack, position). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slp_scratch);
} slk_scratch SEC(".maps");

static __always_inline struct slk_counters *counters(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&slk_counters, &key);
}

static __always_inline void slk_count(__u32 which)
{
	struct slk_counters *c = counters();

	if (c && which < SLK_C_MAX)
		c->c[which] += 1;
}

/* Defaults until the agent writes its settings (it does before registering): the agent's own defaults,
 * whose sources src/config.rs cites. */
static const struct slk_settings slk_defaults = {
	.epoch = 0,
	.watchdog_ns = 10000000,
	.batch_acks = 16,
	.deadline_ns = 1000000,
	.wakeup_bytes = 16384,
};

static __always_inline const struct slk_settings *settings(void)
{
	__u32 key = 0;
	const struct slk_settings *s = bpf_map_lookup_elem(&slk_config, &key);

	return s ? s : &slk_defaults;
}

static __always_inline struct tcp_sock *tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct slk_hot *hot_of(struct sock *sk)
{
	return (struct slk_hot *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline __u32 in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

static __always_inline __u32 clamp_u32(__u64 v)
{
	return v > 0xffffffffULL ? 0xffffffffU : (__u32)v;
}

/* Copies the settings an ACK needs into the hot state, and sets the report period: the deadline, or the
 * flow's smoothed RTT when that is longer (CCP's datapath reports once per RTT by default; Narayan et
 * al., SIGCOMM'18, section 4), at most half the watchdog so that a dead agent is noticed in time. */
static __always_inline void refresh(struct slk_hot *h, const struct tcp_sock *tp, const struct slk_settings *cfg)
{
	__u64 srtt_ns = (__u64)(tp->srtt_us >> 3) * 1000;
	__u64 period = cfg->deadline_ns;

	if (srtt_ns > period)
		period = srtt_ns < cfg->watchdog_ns / 2 ? srtt_ns : cfg->watchdog_ns / 2;
	if (period < cfg->deadline_ns)
		period = cfg->deadline_ns;
	h->period_ns = clamp_u32(period);
	h->watchdog_ns = clamp_u32(cfg->watchdog_ns);
	h->batch_acks = cfg->batch_acks > 0xffff ? 0xffff : (__u16)cfg->batch_acks;
}

/* Clears the accumulable and coalescent signals after a report; `bytes_acked`/`reord_seen` become the
 * bases of the next period's deltas. */
static __always_inline void fold_reset(struct slk_hot *h, struct slk_flow *st, const struct tcp_sock *tp)
{
	h->first_ns = 0;
	h->acks = 0;
	h->acked_pkts = 0;
	h->n_rtt = 0;
	h->ece_bytes = 0;
	h->ece_pkts = 0;
	st->report_base = tp->bytes_acked;
	st->reord_base = tp->reord_seen;
	st->losses = 0;
	st->rtos = 0;
}

/* Bytes sent since the flow started: acknowledged plus outstanding (64-bit). */
static __always_inline __u64 snd_nxt_bytes(const struct tcp_sock *tp)
{
	return tp->bytes_acked + (__u32)(tp->snd_nxt - tp->snd_una);
}

/* Latest-value fields, read from the socket when a report leaves. */
static __always_inline void fill_snapshot(const struct tcp_sock *tp, struct slk_snapshot *s)
{
	s->mss = tp->mss_cache;
	s->cwnd_pkts = tp->snd_cwnd;
	s->in_flight_pkts = in_flight(tp);
	s->srtt_us = tp->srtt_us >> 3;
	s->snd_una = tp->bytes_acked;
	s->snd_nxt = snd_nxt_bytes(tp);
}

/* The period's folded signals, written into a reserved report (every field of it: ring memory is reused). */
static __always_inline void fill_signals(const struct slk_hot *h, const struct slk_flow *st,
					 const struct tcp_sock *tp, struct slk_report *r)
{
	int i;

	r->first_ns = h->first_ns;
	r->acks = h->acks;
	r->acked_pkts = h->acked_pkts;
	r->acked_bytes = tp->bytes_acked - st->report_base;
	r->ece_bytes = h->ece_bytes;
	r->ece_pkts = h->ece_pkts;
	r->losses = st->losses;
	r->rtos = st->rtos;
	r->reorders = tp->reord_seen - st->reord_base;
	r->delivery_bps = 0;
	if (h->rate_interval_us > 0 && h->rate_delivered > 0)
		r->delivery_bps = (__u64)h->rate_delivered * r->snap.mss * 8 * 1000000 / (__u64)h->rate_interval_us;
	r->n_rtt = h->n_rtt;
	for (i = 0; i < SLK_RTT_SAMPLES; i++)
		r->rtt_us[i] = i < h->n_rtt ? h->rtt_us[i] : 0;
}

/* Whether this report wakes the agent: urgent ones do, and so does every wakeup_bytes of reports a CPU
 * submits (counted per CPU in the counters line a report touches anyway, instead of reading the ring's
 * consumer position, a line the agent writes). Other reports wait for the agent's next drain: a wake-up
 * costs ~15 us on this kernel. */
static __always_inline __u64 wakeup_flags(struct slk_counters *c, bool urgent, const struct slk_settings *cfg)
{
	__u64 every = cfg->wakeup_bytes / sizeof(struct slk_report);

	if (c) {
		c->since_wakeup += 1;
		if (c->since_wakeup >= every)
			urgent = true;
		if (urgent)
			c->since_wakeup = 0;
	}
	return urgent ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Room for a report of `size` bytes in the ring; NULL (counted) when the ring is full. */
static __always_inline void *reserve_report(__u64 size, struct slk_counters *c)
{
	void *r;

	PROF_START(t_reserve);
	r = bpf_ringbuf_reserve(&slk_reports, size, 0);
	PROF_ADD(SLK_P_RESERVE, t_reserve);
	if (!r && c)
		c->c[SLK_C_RB_FAIL] += 1;
	return r;
}

/* The head of the flow's next report: it takes the flow's next sequence number. */
static __always_inline void fill_head(struct slk_rhead *head, struct slk_flow *st, __u8 kind, __u64 now,
				      const struct slk_settings *cfg)
{
	st->seq += 1;
	head->magic = SLK_MAGIC;
	head->version = SLK_VERSION;
	head->kind = kind;
	head->slot = st->slot;
	head->flow_id = st->flow_id;
	head->epoch = (__u32)cfg->epoch;
	head->seq = st->seq;
	head->now_ns = now;
}

/* A report left: the flow waits for an answer from now (unless it already does), and the agent is woken
 * as `wakeup_flags` says. */
static __always_inline void submit_report(void *r, struct slk_hot *h, struct slk_counters *c, bool urgent,
					  __u64 now, const struct slk_settings *cfg)
{
	if (c) {
		c->c[SLK_C_REPORTS] += 1;
		if (urgent)
			c->c[SLK_C_URGENT] += 1;
	}
	if (!h->unanswered_since)
		h->unanswered_since = now;
	bpf_ringbuf_submit(r, wakeup_flags(c, urgent, cfg));
}

/* Sends the period's signals as a report. A full ring is counted and the signals kept, so they go with
 * the next report. */
static __always_inline void report(struct slk_hot *h, struct slk_flow *st, struct sock *sk, __u8 kind,
				   bool urgent, __u64 now, const struct slk_settings *cfg)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct slk_counters *c = counters();
	struct slk_report *r = reserve_report(sizeof(*r), c);

	if (!r)
		return;
	fill_head(&r->head, st, kind, now, cfg);
	r->lport = st->lport;
	r->rport = st->rport;
	r->flags = (urgent ? SLK_F_URGENT : 0) | (h->flags & SLK_H_FALLBACK ? SLK_F_FALLBACK : 0);
	fill_snapshot(tp, &r->snap);
	fill_signals(h, st, tp, r);
	if (c)
		c->c[SLK_C_ACKS] += h->acks;
	fold_reset(h, st, tp);
	refresh(h, tp, cfg);
	submit_report(r, h, c, urgent, now, cfg);
}

static __always_inline struct slk_cell *cell_of(const struct slk_hot *h)
{
	__u32 key = h->cell;

	return bpf_map_lookup_elem(&slk_cells, &key);
}

/* The kernel's Cubic keeps its state (struct bictcp) at the start of icsk_ca_priv, where sluice keeps its
 * per-ACK state. While Cubic holds a flow, its state lives in the cell (parked[0..8]); swap_in() puts it
 * in the socket for one call of Cubic's functions, keeping sluice's words in parked[8..16], and
 * swap_out() puts both back. The words are reached through the socket pointer at constant offsets, so
 * the loops are unrolled. */
static __always_inline void swap_in(struct sock *sk, struct slk_cell *c)
{
	__u64 *area = (__u64 *)inet_csk(sk)->icsk_ca_priv;
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < SLK_SWAP_WORDS; i++) {
		c->parked[SLK_SWAP_WORDS + i] = area[i];
		area[i] = c->parked[i];
	}
}

static __always_inline void swap_out(struct sock *sk, struct slk_cell *c)
{
	__u64 *area = (__u64 *)inet_csk(sk)->icsk_ca_priv;
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < SLK_SWAP_WORDS; i++) {
		c->parked[i] = area[i];
		area[i] = c->parked[SLK_SWAP_WORDS + i];
	}
}

/* The cell of a flow that the kernel's Cubic holds (NULL otherwise). */
static __always_inline struct slk_cell *cubic_cell(struct sock *sk)
{
	struct slk_hot *h = hot_of(sk);

	return slk_has_cubic() && (h->flags & SLK_H_CUBIC) ? cell_of(h) : NULL;
}

/* Claims a free cell for a new flow: the flow's number (from the shared counter) picks the first cell
 * to try, and a compare-and-swap of the cell's flow id from 0 takes it. The flow id is the number and the
 * cell together, so ids stay unique and the agent finds a flow's cell from its id. */
static __always_inline struct slk_cell *claim_cell(struct slk_settings *cfg, __u32 *cell)
{
	__u64 number = __sync_fetch_and_add(&cfg->next_flow, 1) + 1;
	int i;

	for (i = 0; i < SLK_CELL_PROBES; i++) {
		__u32 key = (__u32)(number + i) & (SLK_CELLS - 1);
		__u64 id = (number << SLK_CELL_BITS) | key;
		struct slk_cell *c = bpf_map_lookup_elem(&slk_cells, &key);

		if (!c)
			return NULL;
		if (__sync_val_compare_and_swap(&c->flow.flow_id, 0, id) == 0) {
			*cell = key;
			return c;
		}
	}
	return NULL;
}

static __always_inline void on_init(struct sock *sk, __u8 slot)
{
	struct slk_hot *h = hot_of(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct slk_flow *st;
	struct slk_settings *cfg;
	struct slk_cell *c;
	__u32 key = 0, cell = 0;

	h->flags = 0;
	cfg = bpf_map_lookup_elem(&slk_config, &key);
	if (!cfg)
		return;
	c = claim_cell(cfg, &cell);
	if (!c) {
		slk_count(SLK_C_NO_STATE);
		return;
	}
	st = &c->flow;
	st->slot = slot;
	st->seq = 0;
	st->applied_seq = 0;
	st->applied_epoch = 0;
	st->lport = sk->__sk_common.skc_num;
	st->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	h->flags = SLK_H_READY;
	h->unanswered_since = 0;
	h->cell = (__u16)cell;
	h->seen_gen = READ_ONCE_U32(c->gen); /* an earlier holder's decisions are not this flow's */
	h->acked_total = tp->bytes_acked;
	h->rate_delivered = 0;
	h->rate_interval_us = 0;
	h->ca_state = inet_csk(sk)->icsk_ca_state;
	fold_reset(h, st, tp);
	report(h, st, sk, SLK_KIND_START, true, bpf_ktime_get_ns(), cfg);
}

/* Sends the END report and frees the flow's cell (a decision the agent writes there later is the next
 * holder's to reject: its flow id is not theirs). */
static __always_inline void on_release(struct sock *sk)
{
	struct slk_hot *h = hot_of(sk);
	struct slk_cell *c;

	if (!(h->flags & SLK_H_READY))
		return;
	c = cell_of(h);
	if (c) {
		__u32 key = h->cell;

		report(h, &c->flow, sk, SLK_KIND_END, false, bpf_ktime_get_ns(), settings());
		bpf_map_delete_elem(&slk_pstates, &key);
		c->flow.flow_id = 0;
	}
	h->flags = 0;
}

/* Whether a decision read from a cell is well-formed for that cell (its flow id names the cell). */
static __always_inline bool decision_well_formed(const struct slk_decision *d, __u32 cell)
{
	return d->magic == SLK_MAGIC && d->version == SLK_VERSION && (d->flow_id & (SLK_CELLS - 1)) == cell &&
	       !(d->flags & ~(SLK_D_CWND | SLK_D_RATE | SLK_D_PROGRAM)) && d->seq != 0 &&
	       (!(d->flags & SLK_D_CWND) || d->cwnd_pkts != 0);
}

static __always_inline void apply(struct slk_hot *h, struct sock *sk, const struct slk_decision *d)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 rate;

	if (d->flags & SLK_D_CWND) {
		__u32 cwnd = d->cwnd_pkts;

		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
		tp->snd_cwnd = cwnd;
	}
	if (d->flags & SLK_D_RATE) {
		rate = d->pacing_bps / 8;
		if (rate > sk->sk_max_pacing_rate)
			rate = sk->sk_max_pacing_rate;
		sk->sk_pacing_status = SK_PACING_NEEDED;
		sk->sk_pacing_rate = rate;
		h->flags |= SLK_H_PACING;
	}
}

/* A program flow's run: its state, its tape and the scratch. */
struct slk_prun {
	struct slk_pstate *ps;
	struct slk_tape *t;
	struct slp_scratch *x;
};

/* One ACK's (or one fold's) signals, as the program's Ack fields take them. */
struct slk_acksig {
	__u64 acks;
	__u64 bytes;
	__u64 pkts;
	__u64 ecn_bytes;
	__u64 ecn_pkts;
	__u64 ecn;
	__u64 rtt_us;     /* latest sample (0: none) */
	__u64 rtt_min_us; /* least sample */
	__u64 rate_bps;   /* delivery rate (0: none) */
	__u64 reordered;
};

/* The flow's program, when it may run: installed for this flow, its tape written by the same agent. */
static __always_inline bool prog_of(const struct slk_hot *h, const struct slk_flow *st, struct slk_prun *pr)
{
	__u32 key = h->cell, zero = 0;

	pr->ps = bpf_map_lookup_elem(&slk_pstates, &key);
	if (!pr->ps || pr->ps->flow_id != st->flow_id)
		return false;
	key = pr->ps->tape;
	pr->t = bpf_map_lookup_elem(&slk_tapes, &key);
	pr->x = bpf_map_lookup_elem(&slk_scratch, &zero);
	return pr->t && pr->x && pr->t->epoch == pr->ps->epoch;
}

/* A signal's fields before its kind: Now, the flow's facts; every other field 0 (Ack.rtt_min: none). */
static __always_inline void sig_start(struct slk_prun *pr, const struct tcp_sock *tp, __u64 now)
{
	struct slp_scratch *x = pr->x;
	int k;

#pragma clang loop unroll(full)
	for (k = 0; k < SLP_FIELDS; k++)
		x->in[k] = 0;
	x->in[SLP_F_NOW] = now * 1000;
	x->in[SLP_F_ACK_RTT_MIN] = ~0ULL;
	x->in[SLP_F_FLOW_MSS] = tp->mss_cache;
	x->in[SLP_F_FLOW_BASE_RTT] = pr->ps->base_rtt;
	x->in[SLP_F_FLOW_LINE_RATE] = pr->ps->line_rate;
}

static __always_inline void sig_ack(struct slk_prun *pr, const struct tcp_sock *tp, const struct slk_acksig *a)
{
	struct slp_scratch *x = pr->x;

	x->in[SLP_F_EVENT_ACK] = 1;
	x->in[SLP_F_ACK_ACKS] = a->acks;
	x->in[SLP_F_ACK_BYTES_ACKED] = a->bytes;
	x->in[SLP_F_ACK_PACKETS_ACKED] = a->pkts;
	x->in[SLP_F_ACK_ECN_BYTES] = a->ecn_bytes;
	x->in[SLP_F_ACK_ECN_PACKETS] = a->ecn_pkts;
	x->in[SLP_F_ACK_ECN] = a->ecn;
	if (a->rtt_us) {
		x->in[SLP_F_ACK_RTT] = a->rtt_us * 1000000;
		x->in[SLP_F_ACK_HAS_RTT] = 1;
		x->in[SLP_F_ACK_RTT_MIN] = a->rtt_min_us * 1000000;
	}
	if (a->rate_bps) {
		x->in[SLP_F_ACK_RATE] = a->rate_bps;
		x->in[SLP_F_ACK_HAS_RATE] = 1;
	}
	x->in[SLP_F_ACK_SND_UNA] = tp->bytes_acked;
	x->in[SLP_F_ACK_SND_NXT] = snd_nxt_bytes(tp);
	x->in[SLP_F_ACK_IN_FLIGHT] = (__u64)in_flight(tp) * tp->mss_cache;
	x->in[SLP_F_ACK_REORDERED] = a->reordered;
}

/* A loss: kind 1 (fast retransmit: the flow entered Recovery) or 3 (timeout). */
static __always_inline void sig_loss(struct slk_prun *pr, const struct tcp_sock *tp, __u64 kind)
{
	struct slp_scratch *x = pr->x;

	x->in[SLP_F_EVENT_LOSS] = 1;
	x->in[SLP_F_LOSS_KIND] = kind;
	x->in[SLP_F_LOSS_COUNT] = 1;
	x->in[SLP_F_LOSS_IN_FLIGHT] = (__u64)in_flight(tp) * tp->mss_cache;
	x->in[SLP_F_LOSS_SND_NXT] = snd_nxt_bytes(tp);
}

/* The program's registers go to the agent; volatile ones start again. A full ring is counted and the
 * registers kept as they are, so the next report carries them. */
static __always_inline void preport(struct slk_prun *pr, struct slk_hot *h, struct slk_flow *st, struct sock *sk,
				    bool urgent, __u64 now)
{
	const struct slk_settings *cfg = settings();
	struct slk_counters *c = counters();
	struct slk_pstate *ps = pr->ps;
	struct slp_prog *p = &pr->t->prog;
	struct tcp_sock *tp = tcp_sk(sk);
	struct slk_preport *r = reserve_report(sizeof(*r), c);

	if (!r)
		return;
	fill_head(&r->head, st, SLK_KIND_PROGRAM, now, cfg);
	r->install = ps->install;
	r->flags = (urgent ? SLK_F_URGENT : 0) | (h->flags & SLK_H_FALLBACK ? SLK_F_FALLBACK : 0);
	r->index = ps->index;
	r->nregs = ps->nregs > SLP_REGS ? SLP_REGS : (__u8)ps->nregs;
	fill_snapshot(tp, &r->snap);
	r->lport = st->lport;
	r->rport = st->rport;
	r->signals = ps->signals;
	slp_take_report(p, ps->regs, r->regs);
	if (c) {
		c->c[SLK_C_PROGRAM_SIGNALS] += ps->signals;
		c->c[SLK_C_PROGRAM_REPORTS] += 1;
	}
	ps->signals = 0;
	ps->pending = 0;
	refresh(h, tp, cfg);
	submit_report(r, h, c, urgent, now, cfg);
}

/* Runs the tape over the fields in the scratch (one copy of the interpreter's loop for every caller). */
static __noinline __u32 prog_exec(struct slp_prog *p, __u64 *regs, struct slp_scratch *x)
{
	struct slp_run r = { .p = p, .regs = regs, .x = x };

	return slp_exec(&r);
}

/* One signal (its fields in the scratch) through the flow's program: a report when the program says so,
 * else its wake is kept unless one is pending (as the plane's driver does). */
static __always_inline void prog_signal(struct slk_prun *pr, struct slk_hot *h, struct slk_flow *st, struct sock *sk,
					__u64 now)
{
	struct slk_pstate *ps = pr->ps;
	__u32 out;

	PROF_START(t_exec);
	out = prog_exec(&pr->t->prog, ps->regs, pr->x);
	PROF_ADD(SLK_P_EXEC, t_exec);
	ps->signals += 1;
	ps->pending = 1;
	ps->wake = slp_next_wake(out, pr->x->wake, ps->wake);
	if ((out & SLP_OUT_REPORT) && !(out & SLP_OUT_ERROR))
		preport(pr, h, st, sk, out & SLP_OUT_URGENT, now);
}

/* A wake that came due runs the program on a tick, if a signal reached it since its last report. The
 * BPF side has no timer per flow: a wake is served at the flow's next signal. */
static __always_inline void prog_wake(struct slk_prun *pr, struct slk_hot *h, struct slk_flow *st, struct sock *sk,
				      __u64 now)
{
	struct slk_pstate *ps = pr->ps;

	if (!ps->wake || now * 1000 < ps->wake)
		return;
	ps->wake = 0;
	if (!ps->pending)
		return;
	sig_start(pr, tcp_sk(sk), now);
	pr->x->in[SLP_F_EVENT_TICK] = 1;
	prog_signal(pr, h, st, sk, now);
}

/* The flow leaves its program: the fold starts afresh. */
static __always_inline void leave_program(struct slk_hot *h, struct slk_flow *st, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	h->flags &= ~SLK_H_PROGRAM;
	fold_reset(h, st, tp);
	h->acked_total = tp->bytes_acked;
}

/* The flow's program starts: what the fold holds since the last report goes through it first, as the
 * agent runs a folded report through its own interpreter (losses, then the ACKs as one). */
static __always_inline void enter_program(struct slk_hot *h, struct slk_flow *st, struct sock *sk, __u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct slk_acksig a = {};
	struct slk_prun pr;
	__u32 rtt;
	int i;

	if (!prog_of(h, st, &pr)) {
		slk_count(SLK_C_PROGRAM_LOST);
		return;
	}
	h->flags |= SLK_H_PROGRAM;
	if (st->losses) {
		sig_start(&pr, tp, now);
		sig_loss(&pr, tp, 1);
		prog_signal(&pr, h, st, sk, now);
	}
	if (st->rtos) {
		sig_start(&pr, tp, now);
		sig_loss(&pr, tp, 3);
		prog_signal(&pr, h, st, sk, now);
	}
	if (h->acks) {
		a.acks = h->acks;
		a.bytes = tp->bytes_acked - st->report_base;
		a.pkts = h->acked_pkts;
		a.ecn_bytes = h->ece_bytes;
		a.ecn_pkts = h->ece_pkts;
		a.ecn = h->ece_pkts > 0 || h->ece_bytes > 0;
		a.rtt_min_us = ~0ULL;
#pragma clang loop unroll(full)
		for (i = 0; i < SLK_RTT_SAMPLES; i++) {
			rtt = h->rtt_us[i];
			if (i < h->n_rtt) {
				a.rtt_us = rtt;
				if (rtt < a.rtt_min_us)
					a.rtt_min_us = rtt;
			}
		}
		if (h->rate_interval_us > 0 && h->rate_delivered > 0)
			a.rate_bps = (__u64)h->rate_delivered * tp->mss_cache * 8 * 1000000 / (__u64)h->rate_interval_us;
		a.reordered = tp->reord_seen - st->reord_base;
		sig_start(&pr, tp, now);
		sig_ack(&pr, tp, &a);
		prog_signal(&pr, h, st, sk, now);
	}
	fold_reset(h, st, tp);
	h->acked_total = tp->bytes_acked;
}

/* Copies the cell's decision when the agent is not writing it: the generation word is even and the same
 * before and after the copy (a sequence lock; the agent's side is loader.rs `Cells::write`). The loads
 * stay in program order: the compiler barriers keep clang from moving them, and the x86 JIT emits them as
 * ordinary loads, which x86 does not reorder with each other. Returns the generation read. */
static __always_inline bool read_decision(struct slk_cell *c, struct slk_decision *d, __u32 *gen)
{
	__u32 before = READ_ONCE_U32(c->gen);

	if (before & 1)
		return false;
	barrier();
	__builtin_memcpy(d, &c->decision, sizeof(*d));
	barrier();
	if (READ_ONCE_U32(c->gen) != before)
		return false;
	*gen = before;
	return true;
}

/* Reads the flow's decision once its generation word moved: applies a fresh one once, rejects (counts)
 * stale or malformed ones. A decision caught mid-write is read again on the next ACK. Returns whether
 * the agent answered. */
static __always_inline bool take_decision(struct slk_hot *h, struct slk_cell *c, struct sock *sk, __u64 now)
{
	struct slk_flow *st = &c->flow;
	struct slk_decision d;
	__u32 gen;

	if (!read_decision(c, &d, &gen))
		return false;
	h->seen_gen = gen;
	if (!decision_well_formed(&d, h->cell)) {
		slk_count(SLK_C_MALFORMED);
		return false;
	}
	if (d.epoch == st->applied_epoch && d.seq == st->applied_seq && d.flow_id == st->flow_id)
		return false;
	if (d.flow_id != st->flow_id || d.epoch != (__u32)settings()->epoch ||
	    (d.epoch == st->applied_epoch && d.seq < st->applied_seq) || d.report_seq > st->seq) {
		slk_count(SLK_C_STALE);
		return false;
	}
	apply(h, sk, &d);
	if ((d.flags & SLK_D_PROGRAM) && !(h->flags & SLK_H_PROGRAM))
		enter_program(h, st, sk, now);
	else if (!(d.flags & SLK_D_PROGRAM) && (h->flags & SLK_H_PROGRAM))
		leave_program(h, st, sk);
	st->applied_seq = d.seq;
	st->applied_epoch = d.epoch;
	h->unanswered_since = d.report_seq >= st->seq ? 0 : now;
	slk_count(SLK_C_APPLIED);
	return true;
}

/* The kernel's own Reno or Cubic while the agent is away: window reduction to ssthresh in CWR and
 * Recovery, the algorithm's congestion avoidance (and slow start) otherwise; no pacing limit. Cubic is
 * given the ACK's sample first, as tcp_clean_rtx_queue() gives it through pkts_acked (its minimum delay
 * and HyStart), a hook sluice does not register: it would run on every ACK. */
static __always_inline void fallback_control(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs,
					     struct slk_cell *cubic)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u8 state = inet_csk(sk)->icsk_ca_state;
	struct ack_sample sample = {};

	if (!slk_has_cubic())
		cubic = NULL;
	if (cubic)
		swap_in(sk, cubic);
	if (cubic && rs->acked_sacked > 0) {
		sample.pkts_acked = rs->acked_sacked;
		sample.rtt_us = (__s32)rs->rtt_us;
		cubictcp_acked(sk, &sample);
	}
	if (state == TCP_CA_CWR || state == TCP_CA_Recovery) {
		if (tp->snd_ssthresh < TCP_INFINITE_SSTHRESH && tp->snd_cwnd > tp->snd_ssthresh)
			tp->snd_cwnd = tp->snd_ssthresh > 2 ? tp->snd_ssthresh : 2;
	} else if (flag & FLAG_FORWARD_PROGRESS) {
		if (cubic)
			cubictcp_cong_avoid(sk, ack, rs->acked_sacked);
		else
			tcp_reno_cong_avoid(sk, ack, rs->acked_sacked);
	}
	if (cubic)
		swap_out(sk, cubic);
}

/* Hands the flow to the kernel's Cubic, which starts from the window in force, as it does when a socket
 * switches to Cubic mid-connection. */
static __always_inline void start_cubic(struct slk_hot *h, struct sock *sk, struct slk_cell *c)
{
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < SLK_SWAP_WORDS; i++)
		c->parked[i] = 0;
	h->flags |= SLK_H_CUBIC;
	swap_in(sk, c);
	cubictcp_init(sk);
	swap_out(sk, c);
	slk_count(SLK_C_FALLBACK_CUBIC);
}

/* Stores RTT sample `n`. icsk_ca_priv is reached through the socket pointer, where the verifier allows
 * only constant offsets, so the index becomes a branch. */
static __always_inline void put_rtt(struct slk_hot *h, __u8 n, __u32 rtt_us)
{
	switch (n) {
	case 0: h->rtt_us[0] = rtt_us; break;
	case 1: h->rtt_us[1] = rtt_us; break;
	case 2: h->rtt_us[2] = rtt_us; break;
	case 3: h->rtt_us[3] = rtt_us; break;
	case 4: h->rtt_us[4] = rtt_us; break;
	case 5: h->rtt_us[5] = rtt_us; break;
	case 6: h->rtt_us[6] = rtt_us; break;
	default: h->rtt_us[7] = rtt_us; break;
	}
}

static __always_inline void fold_ack(struct slk_hot *h, struct sock *sk, int flag, const struct rate_sample *rs,
				     __u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 pkts = rs->acked_sacked;
	__u8 n;

	if (!h->first_ns)
		h->first_ns = now;
	h->acks += 1;
	h->acked_pkts += pkts;
	if (flag & FLAG_ECE) {
		h->ece_bytes += tp->bytes_acked - h->acked_total;
		h->ece_pkts += pkts;
	}
	h->acked_total = tp->bytes_acked;
	if (rs->rtt_us > 0) {
		n = h->n_rtt;
		if (n >= SLK_RTT_SAMPLES)
			n = SLK_RTT_SAMPLES - 1;
		else
			h->n_rtt = n + 1;
		put_rtt(h, n, (__u32)rs->rtt_us);
	}
	if (rs->interval_us > 0 && rs->delivered > 0) {
		h->rate_delivered = rs->delivered;
		h->rate_interval_us = clamp_u32(rs->interval_us);
	}
}

/* The watchdog: a report unanswered for longer than watchdog_ns hands the flow to the kernel's Reno or
 * Cubic (slk_settings.fallback) and lifts the agent's pacing limit. */
static __always_inline void watchdog(struct slk_hot *h, struct slk_cell *c, struct sock *sk, __u64 now)
{
	if ((h->flags & SLK_H_FALLBACK) || (__s64)(now - h->unanswered_since) <= (__s64)h->watchdog_ns)
		return;
	h->flags |= SLK_H_FALLBACK;
	slk_count(SLK_C_FALLBACK);
	if (h->flags & SLK_H_PACING) {
		sk->sk_pacing_rate = sk->sk_max_pacing_rate;
		h->flags &= ~SLK_H_PACING;
	}
	if (c && settings()->fallback == SLK_FALLBACK_CUBIC && slk_has_cubic())
		start_cubic(h, sk, c);
}

/* Reads the agent's answer (the cell's generation word moved) and runs the watchdog; returns the
 * flow's cell when it was looked up. */
static __always_inline struct slk_cell *answer(struct slk_hot *h, struct slk_cell *c, struct sock *sk, __u64 now)
{
	bool answered = false;

	if (!c)
		c = cell_of(h);
	if (c && READ_ONCE_U32(c->gen) != h->seen_gen) {
		PROF_START(t_decide);
		answered = take_decision(h, c, sk, now);
		PROF_ADD(SLK_P_DECIDE, t_decide);
	}
	if (answered && (h->flags & SLK_H_FALLBACK)) {
		h->flags &= ~(SLK_H_FALLBACK | SLK_H_CUBIC);
		slk_count(SLK_C_RESUMED);
	} else if (!answered) {
		watchdog(h, c, sk, now);
	}
	return c;
}

/* An ACK of a flow whose program runs: the agent's answer and the watchdog as for any flow, then a due
 * wake's tick, a loss when the flow entered Recovery, and the ACK, each through the program. Returns
 * false when the program cannot run (the flow left it): the fold takes the ACK. */
static __always_inline bool on_ack_program(struct sock *sk, struct slk_hot *h, __u32 ack, int flag,
					   const struct rate_sample *rs, __u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct slk_acksig a = {};
	struct slk_cell *c = cell_of(h);
	struct slk_prun pr;
	__u8 state;
	bool recovery;

	if (!c)
		return false;
	if (!prog_of(h, &c->flow, &pr)) {
		leave_program(h, &c->flow, sk);
		slk_count(SLK_C_PROGRAM_LOST);
		return false;
	}
	if (h->unanswered_since)
		answer(h, c, sk, now);
	if (!(h->flags & SLK_H_PROGRAM))
		return false;
	if (h->flags & SLK_H_FALLBACK) {
		struct slk_cell *cubic = NULL;

		/* A branch, not a select: clang would mask the pointer, which the verifier refuses. */
		if (h->flags & SLK_H_CUBIC) {
			cubic = c;
			asm volatile("" : "+r"(cubic));
		}
		fallback_control(sk, ack, flag, rs, cubic);
	}

	prog_wake(&pr, h, &c->flow, sk, now);
	state = inet_csk(sk)->icsk_ca_state;
	recovery = state != h->ca_state && state == TCP_CA_Recovery;
	h->ca_state = state;
	if (recovery) {
		sig_start(&pr, tp, now);
		sig_loss(&pr, tp, 1);
		prog_signal(&pr, h, &c->flow, sk, now);
	}
	a.acks = 1;
	a.bytes = tp->bytes_acked - h->acked_total;
	a.pkts = rs->acked_sacked;
	if (flag & FLAG_ECE) {
		a.ecn = 1;
		a.ecn_bytes = a.bytes;
		a.ecn_pkts = a.pkts;
	}
	if (rs->rtt_us > 0) {
		a.rtt_us = rs->rtt_us;
		a.rtt_min_us = rs->rtt_us;
	}
	if (rs->interval_us > 0 && rs->delivered > 0)
		a.rate_bps = (__u64)rs->delivered * tp->mss_cache * 8 * 1000000 / (__u64)rs->interval_us;
	a.reordered = tp->reord_seen - c->flow.reord_base;
	h->acked_total = tp->bytes_acked;
	c->flow.reord_base = tp->reord_seen;
	sig_start(&pr, tp, now);
	sig_ack(&pr, tp, &a);
	prog_signal(&pr, h, &c->flow, sk, now);
	return true;
}

static __always_inline void on_ack(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct slk_hot *h = hot_of(sk);
	struct slk_cell *c = NULL;
	bool urgent = false;
	__u64 now;
	__u8 state;

	if (!(h->flags & SLK_H_READY)) {
		slk_count(SLK_C_NO_STATE);
		fallback_control(sk, ack, flag, rs, NULL);
		return;
	}
	/* The ACK's timestamp, taken by tcp_ack() from tcp_clock_ns() (= ktime_get_ns(), the clock of
	 * bpf_ktime_get_ns()) in microseconds: no helper call per ACK. */
	now = tcp_sk(sk)->tcp_mstamp * 1000;
	if (h->flags & SLK_H_PROGRAM) {
		bool ran;

		PROF_START(t_program);
		ran = on_ack_program(sk, h, ack, flag, rs, now);
		PROF_ADD(SLK_P_PROGRAM, t_program);
		if (ran)
			return;
	}
	fold_ack(h, sk, flag, rs, now);
	state = inet_csk(sk)->icsk_ca_state;
	if (state != h->ca_state) {
		urgent = state == TCP_CA_Recovery;
		h->ca_state = state;
	}
	/* A loss is counted at once: a program that a decision below starts takes it with the fold. */
	if (urgent) {
		c = cell_of(h);
		if (c)
			c->flow.losses += 1;
	}

	/* The agent writes decisions in answer to reports (carrying the window and rate in force), so the
	 * cell's generation word is only read while an answer is owed, and the decision only when it moved. */
	if (h->unanswered_since)
		c = answer(h, c, sk, now);
	if (h->flags & SLK_H_FALLBACK)
		fallback_control(sk, ack, flag, rs, (h->flags & SLK_H_CUBIC) ? (c ? c : cell_of(h)) : NULL);

	/* A decision read above may have started the flow's program, which took the fold. */
	if (h->flags & SLK_H_PROGRAM)
		return;
	if (urgent || h->acks >= h->batch_acks || (__s64)(now - h->first_ns) >= (__s64)h->period_ns) {
		if (!c)
			c = cell_of(h);
		if (!c)
			return;
		PROF_START(t_report);
		report(h, &c->flow, sk, SLK_KIND_REPORT, urgent, now, settings());
		PROF_ADD(SLK_P_REPORT, t_report);
	}
}

/* Loss state changes: entering Loss is a retransmission timeout, reported at once (it may come from the
 * RTO timer, with no ACK to carry it). */
static __always_inline void on_state(struct sock *sk, __u8 new_state)
{
	struct slk_hot *h = hot_of(sk);
	struct slk_cell *c = cubic_cell(sk);
	struct slk_flow *st;
	__u64 now;

	if (c) {
		swap_in(sk, c);
		cubictcp_state(sk, new_state);
		swap_out(sk, c);
	}
	if (new_state != TCP_CA_Loss || !(h->flags & SLK_H_READY))
		return;
	c = cell_of(h);
	if (!c)
		return;
	st = &c->flow;
	now = bpf_ktime_get_ns();
	h->ca_state = new_state;
	if (h->flags & SLK_H_PROGRAM) {
		struct slk_prun pr;

		if (prog_of(h, st, &pr)) {
			prog_wake(&pr, h, st, sk, now);
			sig_start(&pr, tcp_sk(sk), now);
			sig_loss(&pr, tcp_sk(sk), 3);
			prog_signal(&pr, h, st, sk, now);
			return;
		}
		leave_program(h, st, sk);
		slk_count(SLK_C_PROGRAM_LOST);
	}
	st->rtos += 1;
	if (!h->first_ns)
		h->first_ns = now;
	report(h, st, sk, SLK_KIND_REPORT, true, now, settings());
}

/* The slow-start threshold after a loss: the kernel's Cubic's while it holds the flow, else Reno's (the
 * agent sets the window itself). */
static __always_inline __u32 on_ssthresh(struct sock *sk)
{
	struct slk_cell *c = cubic_cell(sk);
	__u32 ssthresh;

	if (!c)
		return tcp_reno_ssthresh(sk);
	swap_in(sk, c);
	ssthresh = cubictcp_recalc_ssthresh(sk);
	swap_out(sk, c);
	return ssthresh;
}

/* Window events (transmission restarting after idle, CWR done...) matter only to the kernel's Cubic. */
static __always_inline void on_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	struct slk_cell *c = cubic_cell(sk);

	if (c) {
		swap_in(sk, c);
		cubictcp_cwnd_event(sk, event);
		swap_out(sk, c);
	}
}

/* One registered name: thin programs that pass their slot to the shared code. */
#define SLK_OPS(slot, ident, cname)                                                                            \
	SEC("struct_ops")                                                                                     \
	void BPF_PROG(ident##_init, struct sock *sk)                                                          \
	{                                                                                                      \
		on_init(sk, slot);                                                                             \
	}                                                                                                      \
	SEC("struct_ops")                                                                                     \
	void BPF_PROG(ident##_release, struct sock *sk)                                                       \
	{                                                                                                      \
		on_release(sk);                                                                                \
	}                                                                                                      \
	SEC("struct_ops")                                                                                     \
	void BPF_PROG(ident##_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs) \
	{                                                                                                      \
		on_ack(sk, ack, flag, rs);                                                                     \
	}                                                                                                      \
	SEC("struct_ops")                                                                                     \
	__u32 BPF_PROG(ident##_ssthresh, struct sock *sk)                                                     \
	{                                                                                                      \
		return on_ssthresh(sk);                                                                        \
	}                                                                                                      \
	SEC("struct_ops")                                                                                     \
	void BPF_PROG(ident##_cwnd_event, struct sock *sk, enum tcp_ca_event event)                          \
	{                                                                                                      \
		on_cwnd_event(sk, event);                                                                      \
	}                                                                                                      \
	SEC("struct_ops")                                                                                     \
	__u32 BPF_PROG(ident##_undo_cwnd, struct sock *sk)                                                    \
	{                                                                                                      \
		return tcp_reno_undo_cwnd(sk);                                                                 \
	}                                                                                                      \
	SEC("struct_ops")                                                                                     \
	void BPF_PROG(ident##_set_state, struct sock *sk, __u8 new_state)                                     \
	{                                                                                                      \
		on_state(sk, new_state);                                                                       \
	}                                                                                                      \
	SEC(".struct_ops.link")                                                                               \
	struct tcp_congestion_ops ident = {                                                                    \
		.init = (void *)ident##_init,                                                                  \
		.release = (void *)ident##_release,                                                            \
		.cong_control = (void *)ident##_cong_control,                                                  \
		.ssthresh = (void *)ident##_ssthresh,                                                          \
		.undo_cwnd = (void *)ident##_undo_cwnd,                                                        \
		.set_state = (void *)ident##_set_state,                                                        \
		.cwnd_event = (void *)ident##_cwnd_event,                                                      \
		.name = cname,                                                                                 \
	};

/* Slot numbers and names: src/loader.rs SLOTS lists the same, in this order. */
SLK_OPS(0, slk_rules, "sluice")
SLK_OPS(1, slk_reno, "sluice_reno")
SLK_OPS(2, slk_cubic, "sluice_cubic")
SLK_OPS(3, slk_vegas, "sluice_vegas")
SLK_OPS(4, slk_dctcp, "sluice_dctcp")
SLK_OPS(5, slk_bbr, "sluice_bbr")
SLK_OPS(6, slk_swift, "sluice_swift")
SLK_OPS(7, slk_timely, "sluice_timely")
