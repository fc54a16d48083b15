// SPDX-License-Identifier: GPL-2.0
/* sluice's kernel datapath: a tcp_congestion_ops that folds each ACK's signals into per-flow state,
 * reports them to the sluice agent through a ring buffer in batches, applies the agent's decisions
 * (cwnd, pacing rate) from a per-flow map, and falls back to the kernel's own Reno when the agent stops
 * answering. The same programs are registered under several names (slots) so that a socket can choose
 * its algorithm with TCP_CONGESTION; slot 0 ("sluice") leaves the choice to the agent's port rules. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "sluice.h"

char _license[] SEC("license") = "GPL";

/* tcp_input.c's ACK flags (not in BTF: they are #defines). */
#define FLAG_DATA_ACKED 0x04
#define FLAG_DATA_SACKED 0x20
#define FLAG_ECE 0x40
#define FLAG_FORWARD_PROGRESS (FLAG_DATA_ACKED | FLAG_DATA_SACKED)

#define TCP_INFINITE_SSTHRESH 0x7fffffff

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* Per-flow state, in socket-local storage (freed with the socket). The first 96 bytes are all that an
 * ordinary ACK touches (the fold's counters and the RTT samples); the rest is read and written when a
 * report leaves, a decision arrives or a rare signal (ECE, recovery, timeout) comes. Reports are written
 * straight into the ring buffer from this state: there is no staging copy. */
struct slk_flow {
	/* Hot: one cache line of per-ACK fields... */
	__u64 flow_id;
	__u64 unanswered_since; /* first report not answered yet (0 = none owed) */
	__u64 first_ns;         /* first ACK folded into the next report (0 = none yet) */
	__u64 acked_total;      /* tp->bytes_acked at the last ACK */
	__s64 rate_interval_us; /* latest rate sample's interval... */
	__u32 rate_delivered;   /* ...and packets delivered in it (the division waits for the report) */
	__u32 seen_gen;         /* the flow's decision-generation word when its decision was last read */
	__u32 acks;             /* ACKs folded since the last report */
	__u32 acked_pkts;
	__u8 ca_state;          /* icsk_ca_state seen at the last ACK */
	__u8 fallback;          /* the watchdog runs the kernel's Reno */
	__u8 n_rtt;             /* raw RTT samples in rtt_us */
	__u8 pacing;            /* the agent set a pacing rate */
	__u32 rtt_us[SLK_RTT_SAMPLES]; /* ...and the raw RTT samples of the period */
	/* Cold: report time, decisions, rare signals. */
	__u64 report_base;      /* tp->bytes_acked at the last report */
	__u64 ece_bytes;
	__u32 ece_pkts;
	__u32 losses;           /* recovery entries since the last report */
	__u32 rtos;             /* retransmission timeouts since the last report */
	__u32 reord_base;       /* tp->reord_seen at the last report */
	__u32 seq;              /* last report's sequence number */
	__u32 applied_seq;      /* last applied decision */
	__u32 applied_epoch;    /* ...and its agent epoch */
	__u16 lport;
	__u16 rport;
	__u8 slot;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct slk_flow);
} slk_flows SEC(".maps");

/* One decision per live flow; 65536 flows at once (64x the 1,000-connection check). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct slk_decision);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_decisions SEC(".maps");

/* Decision generations: after writing a flow's decision the agent increments word flow_id &
 * (SLK_GEN_SLOTS - 1). An ACK reads that one word (an array lookup the verifier inlines, no helper call)
 * and looks the decision up only when it changed, so the hash lookup happens once per decision instead
 * of on every ACK that waits for an answer. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLK_GEN_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_decision_gen SEC(".maps");

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
	__uint(max_entries, SLK_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} slk_counters SEC(".maps");

static __always_inline void slk_count_n(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&slk_counters, &which);

	if (c)
		*c += n;
}

static __always_inline void slk_count(__u32 which)
{
	slk_count_n(which, 1);
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

static __always_inline __u32 in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* Clears the accumulable and coalescent signals after a report; `bytes_acked`/`reord_seen` become the
 * bases of the next period's deltas. */
static __always_inline void fold_reset(struct slk_flow *st, const struct tcp_sock *tp)
{
	st->first_ns = 0;
	st->acks = 0;
	st->acked_pkts = 0;
	st->n_rtt = 0;
	st->report_base = tp->bytes_acked;
	st->reord_base = tp->reord_seen;
	st->ece_bytes = 0;
	st->ece_pkts = 0;
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
static __always_inline void fill_signals(const struct slk_flow *st, const struct tcp_sock *tp, struct slk_report *r)
{
	int i;

	r->first_ns = st->first_ns;
	r->acks = st->acks;
	r->acked_pkts = st->acked_pkts;
	r->acked_bytes = tp->bytes_acked - st->report_base;
	r->ece_bytes = st->ece_bytes;
	r->ece_pkts = st->ece_pkts;
	r->losses = st->losses;
	r->rtos = st->rtos;
	r->reorders = tp->reord_seen - st->reord_base;
	r->delivery_bps = 0;
	if (st->rate_interval_us > 0 && st->rate_delivered > 0)
		r->delivery_bps = (__u64)st->rate_delivered * r->mss * 8 * 1000000 / (__u64)st->rate_interval_us;
	r->n_rtt = st->n_rtt;
	for (i = 0; i < SLK_RTT_SAMPLES; i++)
		r->rtt_us[i] = i < st->n_rtt ? st->rtt_us[i] : 0;
}

/* Sends the period's signals as a report. Urgent reports and a ring past the wake-up threshold wake the
 * agent; other reports wait for its next drain (no per-report wake-up: ~15 us each on this kernel). A
 * full ring is counted and the signals kept, so they go with the next report. */
static __always_inline void report(struct slk_flow *st, struct sock *sk, __u8 kind, bool urgent, __u64 now,
				   const struct slk_settings *cfg)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct slk_report *r;
	__u64 flags;

	r = bpf_ringbuf_reserve(&slk_reports, sizeof(*r), 0);
	if (!r) {
		slk_count(SLK_C_RB_FAIL);
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
	r->flags = (urgent ? SLK_F_URGENT : 0) | (st->fallback ? SLK_F_FALLBACK : 0);
	fill_snapshot(sk, r);
	fill_signals(st, tp, r);
	slk_count_n(SLK_C_ACKS, st->acks);
	fold_reset(st, tp);
	if (!st->unanswered_since)
		st->unanswered_since = now;
	slk_count(SLK_C_REPORTS);
	if (urgent)
		slk_count(SLK_C_URGENT);
	flags = BPF_RB_NO_WAKEUP;
	if (urgent || bpf_ringbuf_query(&slk_reports, BPF_RB_AVAIL_DATA) >= cfg->wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(r, flags);
}

static __always_inline struct slk_flow *flow_of(struct sock *sk, bool create)
{
	return bpf_sk_storage_get(&slk_flows, sk, 0, create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
}

static __always_inline void on_init(struct sock *sk, __u8 slot)
{
	struct slk_flow *st = flow_of(sk, true);
	__u32 key = 0;
	struct slk_settings *cfg;

	if (!st) {
		slk_count(SLK_C_NO_STATE);
		return;
	}
	cfg = bpf_map_lookup_elem(&slk_config, &key);
	if (!cfg)
		return;
	if (!st->flow_id) /* re-initialised sockets keep their id */
		st->flow_id = __sync_fetch_and_add(&cfg->next_flow, 1) + 1;
	st->slot = slot;
	st->seq = 0;
	st->applied_seq = 0;
	st->applied_epoch = 0;
	st->fallback = 0;
	st->pacing = 0;
	st->unanswered_since = 0;
	st->seen_gen = (__u32)-1; /* read the decision map at the first owed ACK, whatever the generation */
	st->acked_total = tcp_sk(sk)->bytes_acked;
	st->rate_delivered = 0;
	st->rate_interval_us = 0;
	st->ca_state = inet_csk(sk)->icsk_ca_state;
	fold_reset(st, tcp_sk(sk));
	st->lport = sk->__sk_common.skc_num;
	st->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	report(st, sk, SLK_KIND_START, true, bpf_ktime_get_ns(), cfg);
}

static __always_inline void on_release(struct sock *sk)
{
	struct slk_flow *st = flow_of(sk, false);
	__u64 key;

	if (!st || !st->flow_id)
		return;
	key = st->flow_id;
	report(st, sk, SLK_KIND_END, false, bpf_ktime_get_ns(), settings());
	bpf_map_delete_elem(&slk_decisions, &key);
}

/* Whether a decision read from the map is well-formed for this flow. */
static __always_inline bool decision_valid(const struct slk_decision *d, __u64 flow_id)
{
	return d->magic == SLK_MAGIC && d->version == SLK_VERSION && d->flow_id == flow_id &&
	       !(d->flags & ~(SLK_D_CWND | SLK_D_RATE)) && d->seq != 0 &&
	       (!(d->flags & SLK_D_CWND) || d->cwnd_pkts != 0);
}

static __always_inline void apply(struct slk_flow *st, struct sock *sk, const struct slk_decision *d)
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
		st->pacing = 1;
	}
}

/* Reads the flow's decision: applies a fresh one once, rejects (counts and deletes) stale or malformed
 * ones. Returns whether the agent answered. */
static __always_inline bool take_decision(struct slk_flow *st, struct sock *sk, __u64 now, __u32 epoch)
{
	__u32 slot = (__u32)st->flow_id & (SLK_GEN_SLOTS - 1);
	__u32 *gen = bpf_map_lookup_elem(&slk_decision_gen, &slot);
	__u64 key = st->flow_id;
	struct slk_decision *d;

	if (!gen || *gen == st->seen_gen)
		return false;
	st->seen_gen = *gen;
	d = bpf_map_lookup_elem(&slk_decisions, &key);

	if (!d || (d->epoch == st->applied_epoch && d->seq == st->applied_seq))
		return false;
	if (!decision_valid(d, key)) {
		slk_count(SLK_C_MALFORMED);
		bpf_map_delete_elem(&slk_decisions, &key);
		return false;
	}
	if (d->epoch != epoch || (d->epoch == st->applied_epoch && d->seq < st->applied_seq) ||
	    d->report_seq > st->seq) {
		slk_count(SLK_C_STALE);
		bpf_map_delete_elem(&slk_decisions, &key);
		return false;
	}
	apply(st, sk, d);
	st->applied_seq = d->seq;
	st->applied_epoch = d->epoch;
	st->unanswered_since = d->report_seq >= st->seq ? 0 : now;
	slk_count(SLK_C_APPLIED);
	return true;
}

/* The kernel's own Reno while the agent is away: window reduction to ssthresh in CWR and Recovery,
 * tcp_reno_cong_avoid otherwise; no pacing limit. */
static __always_inline void fallback_control(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u8 state = inet_csk(sk)->icsk_ca_state;

	if (state == TCP_CA_CWR || state == TCP_CA_Recovery) {
		if (tp->snd_ssthresh < TCP_INFINITE_SSTHRESH && tp->snd_cwnd > tp->snd_ssthresh)
			tp->snd_cwnd = tp->snd_ssthresh > 2 ? tp->snd_ssthresh : 2;
	} else if (flag & FLAG_FORWARD_PROGRESS) {
		tcp_reno_cong_avoid(sk, ack, rs->acked_sacked);
	}
}

static __always_inline void fold_ack(struct slk_flow *st, struct sock *sk, int flag, const struct rate_sample *rs,
				     __u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 pkts = rs->acked_sacked;
	__u8 n;

	if (!st->first_ns)
		st->first_ns = now;
	st->acks += 1;
	st->acked_pkts += pkts;
	if (flag & FLAG_ECE) {
		st->ece_bytes += tp->bytes_acked - st->acked_total;
		st->ece_pkts += pkts;
	}
	st->acked_total = tp->bytes_acked;
	if (rs->rtt_us > 0) {
		n = st->n_rtt;
		if (n >= SLK_RTT_SAMPLES)
			n = SLK_RTT_SAMPLES - 1;
		else
			st->n_rtt = n + 1;
		st->rtt_us[n & (SLK_RTT_SAMPLES - 1)] = (__u32)rs->rtt_us;
	}
	if (rs->interval_us > 0 && rs->delivered > 0) {
		st->rate_delivered = rs->delivered;
		st->rate_interval_us = rs->interval_us;
	}
}

static __always_inline void on_ack(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct slk_flow *st = flow_of(sk, false);
	const struct slk_settings *cfg;
	__u64 now;
	__u8 state;
	bool urgent = false;

	if (!st || !st->flow_id) {
		slk_count(SLK_C_NO_STATE);
		fallback_control(sk, ack, flag, rs);
		return;
	}
	/* The ACK's timestamp, taken by tcp_ack() from tcp_clock_ns() (= ktime_get_ns(), the clock of
	 * bpf_ktime_get_ns()) in microseconds: no helper call per ACK. */
	now = tcp_sk(sk)->tcp_mstamp * 1000;
	cfg = settings();
	fold_ack(st, sk, flag, rs, now);
	state = inet_csk(sk)->icsk_ca_state;
	if (state != st->ca_state) {
		if (state == TCP_CA_Recovery) {
			st->losses += 1;
			urgent = true;
		}
		st->ca_state = state;
	}

	/* The agent writes decisions in answer to reports (carrying the window and rate in force), so the map
	 * is only read while an answer is owed: most ACKs skip the lookup. */
	if (st->unanswered_since && take_decision(st, sk, now, (__u32)cfg->epoch)) {
		if (st->fallback) {
			st->fallback = 0;
			slk_count(SLK_C_RESUMED);
		}
	} else if (!st->fallback && st->unanswered_since &&
		   (__s64)(now - st->unanswered_since) > (__s64)cfg->watchdog_ns) {
		st->fallback = 1;
		slk_count(SLK_C_FALLBACK);
		if (st->pacing) {
			sk->sk_pacing_rate = sk->sk_max_pacing_rate;
			st->pacing = 0;
		}
	}
	if (st->fallback)
		fallback_control(sk, ack, flag, rs);

	if (urgent || st->acks >= cfg->batch_acks || (__s64)(now - st->first_ns) >= (__s64)cfg->deadline_ns)
		report(st, sk, SLK_KIND_REPORT, urgent, now, cfg);
}

/* Loss state changes: entering Loss is a retransmission timeout, reported at once (it may come from the
 * RTO timer, with no ACK to carry it). */
static __always_inline void on_state(struct sock *sk, __u8 new_state)
{
	struct slk_flow *st;
	__u64 now;

	if (new_state != TCP_CA_Loss)
		return;
	st = flow_of(sk, false);
	if (!st || !st->flow_id)
		return;
	now = bpf_ktime_get_ns();
	st->rtos += 1;
	st->ca_state = new_state;
	if (!st->first_ns)
		st->first_ns = now;
	report(st, sk, SLK_KIND_REPORT, true, now, settings());
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
		return tcp_reno_ssthresh(sk);                                                                  \
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
