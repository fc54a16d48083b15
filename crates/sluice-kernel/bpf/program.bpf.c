// SPDX-License-Identifier: GPL-2.0
/* The test harness of the datapath-program interpreter (program.h, which the TCP hooks of sluice.bpf.c
 * run on every ACK of a flow with a program): an XDP program whose packet holds one signal's fields runs
 * the installed tape under BPF_PROG_TEST_RUN, which the tests use to hold the interpreter against the
 * Rust one signal by signal and to measure its cost per signal. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "program.h"

char _license[] SEC("license") = "GPL";

struct slp_state {
	__u64 regs[SLP_REGS];
	/* The registers as reported (before volatile ones reset), when the last signal reported. */
	__u64 reported[SLP_REGS];
	__u64 wake;  /* the pending wake, as the TCP hooks keep it (0: none) */
	__u64 asked; /* the wake the last signal asked for */
	__u32 outcome;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slp_prog);
} slp_progs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slp_state);
} slp_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slp_scratch);
} slp_scratches SEC(".maps");

/* One signal: the packet holds its SLP_FIELDS fields (u64, host order). Returns the outcome bits. */
SEC("xdp")
int slp_signal(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data;
	void *end = (void *)(long)xdp->data_end;
	struct slp_run r = {};
	struct slp_state *s;
	__u32 key = 0;
	__u64 *fields = data;
	__u32 outcome;
	int k;

	if (data + SLP_FIELDS * sizeof(__u64) > end)
		return SLP_OUT_ERROR;
	r.p = bpf_map_lookup_elem(&slp_progs, &key);
	s = bpf_map_lookup_elem(&slp_states, &key);
	r.x = bpf_map_lookup_elem(&slp_scratches, &key);
	if (!r.p || !s || !r.x)
		return SLP_OUT_ERROR;
	r.regs = s->regs;
	for (k = 0; k < SLP_FIELDS; k++)
		r.x->in[k] = fields[k];
	/* A tick is the pending wake coming due, as on the TCP hooks (prog_wake). */
	if (r.x->in[SLP_F_EVENT_TICK])
		s->wake = 0;
	outcome = slp_exec(&r);
	if (outcome & SLP_OUT_WAKE)
		s->asked = r.x->wake;
	s->wake = slp_next_wake(outcome, r.x->wake, s->wake);
	if ((outcome & SLP_OUT_REPORT) && !(outcome & SLP_OUT_ERROR))
		slp_take_report(r.p, s->regs, s->reported);
	s->outcome = outcome;
	return outcome;
}

/* The floor of the cost measurement: the same test run with no interpreter. */
SEC("xdp")
int slp_floor(struct xdp_md *xdp)
{
	return 0;
}
