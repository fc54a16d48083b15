/* SPDX-License-Identifier: GPL-2.0 */
/* The datapath-program interpreter (sluice_cc::program; docs/programs.md), shared by the TCP hooks
 * (sluice.bpf.c) and the test harness (program.bpf.c): a verified program, flattened by user space
 * (src/program.rs) into a tape of at most SLP_TAPE instructions that only ever skip forward, runs over
 * one signal's fields and updates the flow's registers. An open-coded loop of at most SLP_TAPE steps
 * bounds the work per signal, and a skip moves the position forward at once; the run's position, stack
 * and outcome live in a per-CPU map and every index is checked or masked, so the verifier checks the
 * loop body for any state, once. */
#ifndef SLUICE_PROGRAM_H
#define SLUICE_PROGRAM_H

#define SLP_TAPE 768
#define SLP_REGS 32
#define SLP_STACK 16
#define SLP_FIELDS 45

/* Field numbers (sluice_cc::program::Field, in declaration order; src/program.rs FIELDS checks them):
 * the ones the TCP hooks fill. The rest stay 0 there. */
#define SLP_F_NOW 0
#define SLP_F_EVENT_ACK 1
#define SLP_F_EVENT_LOSS 2
#define SLP_F_EVENT_TICK 8
#define SLP_F_ACK_ACKS 9
#define SLP_F_ACK_BYTES_ACKED 10
#define SLP_F_ACK_PACKETS_ACKED 11
#define SLP_F_ACK_ECN_BYTES 12
#define SLP_F_ACK_ECN_PACKETS 13
#define SLP_F_ACK_ECN 14
#define SLP_F_ACK_RTT 16
#define SLP_F_ACK_HAS_RTT 17
#define SLP_F_ACK_RTT_MIN 18
#define SLP_F_ACK_RATE 19
#define SLP_F_ACK_HAS_RATE 20
#define SLP_F_ACK_SND_UNA 21
#define SLP_F_ACK_SND_NXT 22
#define SLP_F_ACK_IN_FLIGHT 23
#define SLP_F_LOSS_KIND 28
#define SLP_F_LOSS_COUNT 29
#define SLP_F_LOSS_IN_FLIGHT 30
#define SLP_F_LOSS_SND_NXT 31
#define SLP_F_FLOW_MSS 41
#define SLP_F_FLOW_BASE_RTT 42
#define SLP_F_FLOW_LINE_RATE 43
#define SLP_F_ACK_REORDERED 44

/* Tape instructions (sluice_kernel::program::Kind). */
enum {
	SLP_CONST = 0,
	SLP_FIELD = 1,
	SLP_LOAD = 2,
	SLP_NOT = 3,
	SLP_BITS = 4,
	SLP_BINARY = 5,
	SLP_SELECT = 6,
	SLP_SKIP_IF_ZERO = 7,
	SLP_ASSIGN = 8,
	SLP_REPORT = 9,
	SLP_URGENT = 10,
	SLP_WAKE = 11,
	SLP_STOP = 12,
	/* Fused forms of the commonest shapes (user space fuses them): register op field, register op
	 * constant, register op register, and a field assigned to a register. */
	SLP_BIN_RF = 13,
	SLP_BIN_RC = 14,
	SLP_BIN_RR = 15,
	SLP_SET_RF = 16,
};

/* Outcome bits, the program's return value. */
#define SLP_OUT_REPORT 1
#define SLP_OUT_URGENT 2
#define SLP_OUT_WAKE 4
#define SLP_OUT_ERROR 8

struct slp_insn {
	__u8 kind;
	__u8 a;
	__u8 b;
	__u8 pad8;
	__u32 pad32;
	__u64 arg;
};

struct slp_prog {
	__u32 len;
	__u32 nregs;
	struct slp_insn tape[SLP_TAPE];
	__u64 init[SLP_REGS];
	__u8 vol[SLP_REGS];
};

/* Per-signal scratch: the fields, the operand stack and the run's progress. Kept in a map rather than
 * on the stack so that the verifier does not follow their values through the loop: it checks the
 * callback for any value, once. */
struct slp_scratch {
	__u64 in[SLP_FIELDS];
	__u64 stack[SLP_STACK];
	__u64 wake;
	__u32 top;
	__u32 pc;
	__u32 outcome;
	__u32 pad;
};

/* One run: the program, the registers it updates (in a map value), and the per-CPU scratch. */
struct slp_run {
	struct slp_prog *p;
	__u64 *regs;
	struct slp_scratch *x;
};

static __always_inline __u64 slp_binary(__u8 op, __u64 a, __u64 b)
{
	__u64 r;

	switch (op) {
	case 0: /* saturating + */
		r = a + b;
		return r < a ? ~0ULL : r;
	case 1: /* saturating - */
		return a > b ? a - b : 0;
	case 2: /* saturating * */
		if (!a)
			return 0;
		r = ~0ULL / a;
		/* Keeps clang from turning the check into a 128-bit multiply, which BPF lacks. */
		asm volatile("" : "+r"(r));
		return b > r ? ~0ULL : a * b;
	case 3:
		return b ? a / b : 0;
	case 4:
		return b ? a % b : 0;
	case 5:
		return a < b ? a : b;
	case 6:
		return a > b ? a : b;
	case 7:
		return a < b;
	case 8:
		return a <= b;
	case 9:
		return a > b;
	case 10:
		return a >= b;
	case 11:
		return a == b;
	case 12:
		return a != b;
	case 13:
		return a && b;
	case 14:
		return a || b;
	case 15:
		return a & b;
	case 16:
		return a | b;
	case 17:
		return a ^ b;
	case 18:
		return b >= 64 ? 0 : a << b;
	default:
		return b >= 64 ? 0 : a >> b;
	}
}

static __always_inline __u64 slp_bits(__u64 v)
{
	v = v - ((v >> 1) & 0x5555555555555555ULL);
	v = (v & 0x3333333333333333ULL) + ((v >> 2) & 0x3333333333333333ULL);
	v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (v * 0x0101010101010101ULL) >> 56;
}

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/* The tape instruction at the run's position; returns 1 to stop. */
static __always_inline long slp_step(struct slp_run *r)
{
	struct slp_insn *in;
	__u64 *st = r->x->stack;
	__u32 top = r->x->top;
	__u32 i = r->x->pc;
	__u64 a, b, c;

	if (i >= r->p->len || i >= SLP_TAPE)
		return 1;
	r->x->pc = i + 1;
	in = &r->p->tape[i];
	switch (in->kind) {
	case SLP_CONST:
	case SLP_FIELD:
	case SLP_LOAD:
		if (top >= SLP_STACK)
			goto error;
		if (in->kind == SLP_CONST) {
			a = in->arg;
		} else if (in->kind == SLP_FIELD) {
			if (in->arg >= SLP_FIELDS)
				goto error;
			a = r->x->in[in->arg];
		} else
			a = r->regs[in->a & (SLP_REGS - 1)];
		st[top & (SLP_STACK - 1)] = a;
		r->x->top = top + 1;
		return 0;
	case SLP_NOT:
	case SLP_BITS:
		if (top < 1 || top > SLP_STACK)
			goto error;
		a = st[(top - 1) & (SLP_STACK - 1)];
		st[(top - 1) & (SLP_STACK - 1)] = in->kind == SLP_NOT ? !a : slp_bits(a);
		return 0;
	case SLP_BINARY:
		if (top < 2 || top > SLP_STACK)
			goto error;
		a = st[(top - 2) & (SLP_STACK - 1)];
		b = st[(top - 1) & (SLP_STACK - 1)];
		st[(top - 2) & (SLP_STACK - 1)] = slp_binary(in->a, a, b);
		r->x->top = top - 1;
		return 0;
	case SLP_SELECT:
		if (top < 3 || top > SLP_STACK)
			goto error;
		c = st[(top - 3) & (SLP_STACK - 1)];
		a = st[(top - 2) & (SLP_STACK - 1)];
		b = st[(top - 1) & (SLP_STACK - 1)];
		st[(top - 3) & (SLP_STACK - 1)] = c ? a : b;
		r->x->top = top - 2;
		return 0;
	case SLP_SKIP_IF_ZERO:
	case SLP_ASSIGN:
	case SLP_WAKE:
		if (top < 1 || top > SLP_STACK)
			goto error;
		a = st[(top - 1) & (SLP_STACK - 1)];
		r->x->top = top - 1;
		if (in->kind == SLP_SKIP_IF_ZERO) {
			if (!a)
				r->x->pc = i + 1 + (__u32)in->arg;
		} else if (in->kind == SLP_ASSIGN) {
			r->regs[in->a & (SLP_REGS - 1)] = a;
		} else {
			r->x->wake = a;
			r->x->outcome |= SLP_OUT_WAKE;
		}
		return 0;
	case SLP_BIN_RF:
	case SLP_BIN_RC:
	case SLP_BIN_RR:
		if (top >= SLP_STACK)
			goto error;
		a = r->regs[in->a & (SLP_REGS - 1)];
		if (in->kind == SLP_BIN_RC) {
			b = in->arg;
		} else if (in->kind == SLP_BIN_RR) {
			b = r->regs[in->arg & (SLP_REGS - 1)];
		} else {
			if (in->arg >= SLP_FIELDS)
				goto error;
			b = r->x->in[in->arg];
		}
		st[top & (SLP_STACK - 1)] = slp_binary(in->b, a, b);
		r->x->top = top + 1;
		return 0;
	case SLP_SET_RF:
		if (in->arg >= SLP_FIELDS)
			goto error;
		r->regs[in->a & (SLP_REGS - 1)] = r->x->in[in->arg];
		return 0;
	case SLP_REPORT:
		r->x->outcome |= SLP_OUT_REPORT;
		return 0;
	case SLP_URGENT:
		r->x->outcome |= SLP_OUT_REPORT | SLP_OUT_URGENT;
		return 0;
	case SLP_STOP:
		return 1;
	}
error:
	r->x->outcome |= SLP_OUT_ERROR;
	return 1;
}

/* Runs the tape once over the fields in r->x->in; returns the outcome bits (SLP_OUT_*). The caller
 * reports the registers and resets the volatile ones (slp_prog.vol) when SLP_OUT_REPORT is set. */
static __always_inline __u32 slp_exec(struct slp_run *r)
{
	struct bpf_iter_num it;

	r->x->top = 0;
	r->x->pc = 0;
	r->x->outcome = 0;
	bpf_iter_num_new(&it, 0, SLP_TAPE);
	while (bpf_iter_num_next(&it)) {
		if (slp_step(r))
			break;
	}
	bpf_iter_num_destroy(&it);
	return r->x->outcome;
}

/* After a run that reported: `reported` gets the registers as they were, and the volatile ones start
 * again (the plane driver's program_report). */
static __always_inline void slp_take_report(const struct slp_prog *p, __u64 *regs, __u64 *reported)
{
	int k;

#pragma clang loop unroll(full)
	for (k = 0; k < SLP_REGS; k++) {
		reported[k] = regs[k];
		if (p->vol[k])
			regs[k] = p->init[k];
	}
}

/* The wake pending after a run with outcome `out` that asked for `asked`, `pending` before it (0: none):
 * a run that reports keeps what was pending, else a wake asked for is kept unless one is pending (the
 * plane driver's run_program). A wake at time 0 is kept as 1, since 0 means none. */
static __always_inline __u64 slp_next_wake(__u32 out, __u64 asked, __u64 pending)
{
	if ((out & (SLP_OUT_REPORT | SLP_OUT_ERROR)) || !(out & SLP_OUT_WAKE) || pending)
		return pending;
	return asked ? asked : 1;
}

#endif
