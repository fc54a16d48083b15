#!/usr/bin/env python3
"""Many flows on many threads: the UDP datapath between `sluice udp send` and `sluice udp recv` over
loopback, for each number of flows and threads given, one run each, as a Markdown table.

    scripts/bench_udp_threads.py --flows 1,1024,16384,65536 --threads 1,2 [--duration 3s] [--rounds 1]

Every run starts a receiver with --threads N on a fresh port, then a sender with --threads N streaming
FLOWS flows for --duration, stops the receiver with SIGINT, and reads both sides' summaries. Columns: data packets/s the sender sent,
goodput, Jain's index of the flows' goodputs, the CPU time of the sender's and receiver's threads,
packets per second per busy sender core (packets/s divided by the sender's CPU share), the share of
packets sent again, and the sender's peak resident memory per flow (everything the process holds,
divided by the flows). With --trace every flow is traced at every change, and two columns add the trace
rows written per second and the share of records dropped because a ring was full.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seconds(text):
    units = {"ms": 1e-3, "s": 1.0}
    for unit in ("ms", "s"):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    raise SystemExit(f"--duration {text!r}: expected a number of s or ms")


def one_run(args, flows, threads, out):
    port = free_port()
    to = f"127.0.0.1:{port}"
    stats = os.path.join(out, "recv.json")
    # A backstop only: the receiver is stopped with SIGINT (and writes its stats) once the sender is done.
    recv_time = f"{seconds(args.duration) + 30.0:.1f}s"
    receiver = subprocess.Popen(
        [args.binary, "udp", "recv", "--bind", to, "--threads", str(threads), "--duration", recv_time,
         "--stats", stats],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    send = [args.binary, "udp", "send", "--to", to, "--flows", str(flows), "--threads", str(threads),
            "--duration", args.duration, "--mtu", str(args.mtu), "--line-rate", args.line_rate,
            "--algorithm", args.algorithm, "--out", os.path.join(out, "send")]
    if args.quantum is not None:
        send += ["--quantum", str(args.quantum)]
    if args.trace:
        send += ["--trace-all", "--trace-interval", "0ns"]
    sent = subprocess.run(send, capture_output=True, text=True)
    receiver.send_signal(signal.SIGINT)
    receiver.wait()
    if sent.returncode != 0:
        print(f"sender failed ({sent.returncode}): {sent.stderr.strip()}", file=sys.stderr)
    with open(os.path.join(out, "send", "summary.json")) as f:
        s = json.load(f)
    with open(stats) as f:
        r = json.load(f)
    return s, r


def row(flows, threads, s, r, duration):
    pps = s["data_packets_per_s"]
    sender_cpu = s["cpu_s"]
    cores = sender_cpu / duration if duration > 0 else 0
    per_core = pps / cores if cores > 0 else 0
    resent = s["retransmits"] / s["data_packets"] if s["data_packets"] else 0
    jain = s["goodput_jain"]
    line = (f"| {flows:,} | {threads} | {pps / 1e6:.2f} M | {s['goodput_bps'] / 1e9:.1f} Gbps | "
            f"{jain if jain is None else f'{jain:.3f}'} | {sender_cpu:.2f} s | {r['cpu_s']:.2f} s | "
            f"{per_core / 1e6:.2f} M | {100 * resent:.1f}% | {s['peak_rss_bytes'] / flows:,.0f} B |")
    trace = s.get("trace")
    if trace:
        made = trace["rows"] + trace["dropped"]
        dropped = trace["dropped"] / made if made else 0
        line += f" {trace['rows'] / duration / 1e6:.2f} M | {100 * dropped:.1f}% |"
    return line


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", default="target/release/sluice")
    p.add_argument("--flows", default="1,1024,16384,65536")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--duration", default="3s")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--algorithm", default="dctcp")
    p.add_argument("--mtu", type=int, default=1084)
    p.add_argument("--quantum", type=int,
                   help="packets a flow sends a turn (sluice udp send --quantum; default: the sender's)")
    p.add_argument("--line-rate", default="100Gbps")
    p.add_argument("--trace", action="store_true",
                   help="trace every flow's every change (--trace-all --trace-interval 0ns): adds trace rows/s "
                        "written and the share of records dropped")
    args = p.parse_args()
    duration = seconds(args.duration)
    extra = " trace rows/s | trace records dropped |" if args.trace else ""
    print("| flows | threads (each side) | data packets/s | goodput | Jain | sender CPU | receiver CPU | "
          "packets/s per sender core | resent | sender peak RSS per flow |" + extra)
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if args.trace else ""))
    for _ in range(args.rounds):
        for flows in [int(f) for f in args.flows.split(",")]:
            for threads in [int(t) for t in args.threads.split(",")]:
                with tempfile.TemporaryDirectory() as out:
                    s, r = one_run(args, flows, threads, out)
                print(row(flows, threads, s, r, duration), flush=True)


if __name__ == "__main__":
    main()
