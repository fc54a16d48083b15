// SPDX-License-Identifier: GPL-2.0
/* The floor of the per-ACK cost measurement (examples/kernel_bench.rs): a tcp_congestion_ops whose
 * cong_control only runs the kernel's Reno, registered as "slkfloor". Run through the same bed right
 * before sluice's programs, it shows what the struct_ops trampoline, the statistics and the kernel's own
 * window update cost per ACK under the same load, so sluice's figures can be read against it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

/* tcp_input.c's ACK flags (not in BTF: they are #defines). */
#define FLAG_DATA_ACKED 0x04
#define FLAG_DATA_SACKED 0x20
#define FLAG_FORWARD_PROGRESS (FLAG_DATA_ACKED | FLAG_DATA_SACKED)

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

SEC("struct_ops")
void BPF_PROG(flr_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	if (flag & FLAG_FORWARD_PROGRESS)
		tcp_reno_cong_avoid(sk, ack, rs->acked_sacked);
}

SEC("struct_ops")
__u32 BPF_PROG(flr_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(flr_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops slk_floor = {
	.cong_control = (void *)flr_cong_control,
	.ssthresh = (void *)flr_ssthresh,
	.undo_cwnd = (void *)flr_undo_cwnd,
	.name = "slkfloor",
};
