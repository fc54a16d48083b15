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

char _license[] SEC("license") = "GPL";

/* A profiling build (SLUICE_BPF_CFLAGS=-DSLK_PROFILE=1; examples/kernel_bench.rs prints the result):
 * bpf_ktime_get_ns() around the rare parts of an ACK, summed per CPU. Sections nest (report holds
 * reserve), so an outer figure includes its inner probes (~50-100 ns each). Off in every normal build. */
#ifdef SLK_PROFILE
enum slk_section { SLK_P_DECIDE, SLK_P_REPORT, SLK_P_RESERVE, SLK_P_MAX };
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

/* Latest-value fields, read from the socket when a report leaves. */
static __always_inline void fill_snapshot(struct sock *sk, struct slk_report *r)
{
	struct tcp_sock *tp = tcp_sk(sk);

	r->mss = tp->mss_cache;
	r->cwnd_pkts = tp->snd_cwnd;
	r->in_flight_pkts = in_flight(tp);
	r->srtt_us = tp->srtt_us >> 3;
	r->snd_una = tp->bytes_acked;
	r->snd_nxt = tp->bytes_acked + (__u32)(tp->snd_nxt - tp->snd_una);
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
		r->delivery_bps = (__u64)h->rate_delivered * r->mss * 8 * 1000000 / (__u64)h->rate_interval_us;
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

/* Sends the period's signals as a report. A full ring is counted and the signals kept, so they go with
 * the next report. */
static __always_inline void report(struct slk_hot *h, struct slk_flow *st, struct sock *sk, __u8 kind,
				   bool urgent, __u64 now, const struct slk_settings *cfg)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct slk_counters *c = counters();
	struct slk_report *r;

	PROF_START(t_reserve);
	r = bpf_ringbuf_reserve(&slk_reports, sizeof(*r), 0);
	PROF_ADD(SLK_P_RESERVE, t_reserve);
	if (!r) {
		if (c)
			c->c[SLK_C_RB_FAIL] += 1;
		return;
	}
	st->seq += 1;
	r->magic = SLK_MAGIC;
	r->version = SLK_VERSION;
	r->kind = kind;
	r->slot = st->slot;
	r->flow_id = st->flow_id;
	r->epoch = (__u32)cfg->epoch;
	r->seq = st->seq;
	r->now_ns = now;
	r->lport = st->lport;
	r->rport = st->rport;
	r->flags = (urgent ? SLK_F_URGENT : 0) | (h->flags & SLK_H_FALLBACK ? SLK_F_FALLBACK : 0);
	fill_snapshot(sk, r);
	fill_signals(h, st, tp, r);
	if (c) {
		c->c[SLK_C_ACKS] += h->acks;
		c->c[SLK_C_REPORTS] += 1;
		if (urgent)
			c->c[SLK_C_URGENT] += 1;
	}
	fold_reset(h, st, tp);
	refresh(h, tp, cfg);
	if (!h->unanswered_since)
		h->unanswered_since = now;
	bpf_ringbuf_submit(r, wakeup_flags(c, urgent, cfg));
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
		report(h, &c->flow, sk, SLK_KIND_END, false, bpf_ktime_get_ns(), settings());
		c->flow.flow_id = 0;
	}
	h->flags = 0;
}

/* Whether a decision read from a cell is well-formed for that cell (its flow id names the cell). */
static __always_inline bool decision_well_formed(const struct slk_decision *d, __u32 cell)
{
	return d->magic == SLK_MAGIC && d->version == SLK_VERSION && (d->flow_id & (SLK_CELLS - 1)) == cell &&
	       !(d->flags & ~(SLK_D_CWND | SLK_D_RATE)) && d->seq != 0 &&
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
	fold_ack(h, sk, flag, rs, now);
	state = inet_csk(sk)->icsk_ca_state;
	if (state != h->ca_state) {
		urgent = state == TCP_CA_Recovery;
		h->ca_state = state;
	}

	/* The agent writes decisions in answer to reports (carrying the window and rate in force), so the
	 * cell's generation word is only read while an answer is owed, and the decision only when it moved. */
	if (h->unanswered_since) {
		bool answered = false;

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
	}
	if (h->flags & SLK_H_FALLBACK)
		fallback_control(sk, ack, flag, rs, (h->flags & SLK_H_CUBIC) ? (c ? c : cell_of(h)) : NULL);

	if (urgent || h->acks >= h->batch_acks || (__s64)(now - h->first_ns) >= (__s64)h->period_ns) {
		if (!c)
			c = cell_of(h);
		if (!c)
			return;
		if (urgent)
			c->flow.losses += 1;
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
	st->rtos += 1;
	h->ca_state = new_state;
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
