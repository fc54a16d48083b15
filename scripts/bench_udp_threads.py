#!/usr/bin/env python3
"""Many flows on many threads: the UDP datapath between `sluice udp send` and `sluice udp recv` over
loopback, for each number of flows and threads given, one run each, as a Markdown table.

    scripts/bench_udp_threads.py --flows 1,1024,16384,65536 --threads 1,2 [--duration 3s] [--rounds 1]

Every run starts a receiver with --threads N on a fresh port, then a sender with --threads N streaming
FLOWS flows for --duration, stops the receiver with SIGINT, and reads both sides' summaries. Columns: data packets/s the sender sent,
goodput, Jain's index of the flows' goodputs, the CPU time of the sender's and receiver's threads,
packets per second per busy sender core (packets/s divided by the sender's CPU share), the share of
packets sent again, and the sender's peak resident memory per flow (everything the process holds,
divided by the flows). --busy-poll DURATION has both sides poll their sockets that long before they
sleep (`sluice udp --busy-poll`). With --trace every flow is traced at every change, and two columns add the trace
rows written per second and the share of records dropped because a ring was full.

With --bed SCENARIO (root, a build with the `bed` feature) the flows cross the software switch instead
of loopback: each run brings up SCENARIO's bed (`sluice bed run`), sends from the first host's namespace
to a receiver in the last host's, and stops the switch afterwards; three columns add the ECN marks and
the drops at the switches' ports (their queues.csv) and the sender's retransmission timeouts. Pass the hosts' rate as --line-rate.

    scripts/bench_udp_threads.py --bed scenarios/bed/many_flows.toml --line-rate 1Gbps --mtu 1500 \
        --rto-min 10ms --flows 1,1024,16384,65536 --threads 1,2
"""

import argparse
import csv
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


class Bed:
    """SCENARIO's software switch, run in the background: its hosts' namespaces and addresses."""

    def __init__(self, args, out):
        self.dir = os.path.join(out, "bed")
        # A backstop only: the switch is stopped with SIGINT (and writes queues.csv) once the run is done.
        limit = f"{seconds(args.duration) + 60.0:.1f}s"
        self.process = subprocess.Popen(
            [args.binary, "bed", "run", args.bed, "--duration", limit, "--out", self.dir],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # "h1: namespace slsw-h1 address 10.77.0.2 (switch link slsw1)", one line per host.
        self.hosts = []
        for line in self.process.stdout:
            words = line.split()
            if len(words) >= 5 and words[1] == "namespace" and words[3] == "address":
                self.hosts.append((words[2], words[4]))
            elif line.startswith("run a command on a host"):
                break
        if len(self.hosts) < 2:
            self.process.kill()
            raise SystemExit(f"--bed {args.bed}: the bed did not come up with two hosts or more")

    def stop(self):
        """Stops the switch and returns the ECN marks and drops at the switches' ports."""
        self.process.send_signal(signal.SIGINT)
        self.process.communicate()
        marks = drops = 0
        with open(os.path.join(self.dir, "queues.csv")) as f:
            for rec in csv.DictReader(f):
                if rec["kind"] == "port" and rec["node"].startswith("sw"):
                    marks += int(rec["ecn_marks"])
                    drops += int(rec["drops"])
        return marks, drops


def one_run(args, flows, threads, out):
    bed = Bed(args, out) if args.bed else None
    if bed:
        (send_ns, _), (recv_ns, address) = bed.hosts[0], bed.hosts[-1]
        to = f"{address}:5400"
        send_in, recv_in = ["ip", "netns", "exec", send_ns], ["ip", "netns", "exec", recv_ns]
    else:
        to = f"127.0.0.1:{free_port()}"
        send_in = recv_in = []
    stats = os.path.join(out, "recv.json")
    # A backstop only: the receiver is stopped with SIGINT (and writes its stats) once the sender is done.
    recv_time = f"{seconds(args.duration) + 30.0:.1f}s"
    receiver = subprocess.Popen(
        recv_in + [args.binary, "udp", "recv", "--bind", to, "--threads", str(threads), "--duration", recv_time,
                   "--stats", stats] + (["--busy-poll", args.busy_poll] if args.busy_poll else []),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    send = send_in + [args.binary, "udp", "send", "--to", to, "--flows", str(flows), "--threads", str(threads),
                      "--duration", args.duration, "--mtu", str(args.mtu), "--line-rate", args.line_rate,
                      "--algorithm", args.algorithm, "--out", os.path.join(out, "send")]
    if args.quantum is not None:
        send += ["--quantum", str(args.quantum)]
    if args.rto_min is not None:
        send += ["--rto-min", args.rto_min]
    if args.busy_poll:
        send += ["--busy-poll", args.busy_poll]
    if args.rto_backoff:
        send += ["--rto-backoff"]
    if args.trace:
        send += ["--trace-all", "--trace-interval", "0ns"]
    sent = subprocess.run(send, capture_output=True, text=True)
    receiver.send_signal(signal.SIGINT)
    receiver.wait()
    switch = bed.stop() if bed else None
    if sent.returncode != 0:
        print(f"sender failed ({sent.returncode}): {sent.stderr.strip()}", file=sys.stderr)
    with open(os.path.join(out, "send", "summary.json")) as f:
        s = json.load(f)
    with open(stats) as f:
        r = json.load(f)
    return s, r, switch


def row(flows, threads, s, r, switch, duration):
    pps = s["data_packets_per_s"]
    sender_cpu = s["cpu_s"]
    cores = sender_cpu / duration if duration > 0 else 0
    per_core = pps / cores if cores > 0 else 0
    resent = s["retransmits"] / s["data_packets"] if s["data_packets"] else 0
    jain = s["goodput_jain"]
    line = (f"| {flows:,} | {threads} | {pps / 1e6:.2f} M | {s['goodput_bps'] / 1e9:.{1 if switch is None else 2}f} Gbps | "
            f"{jain if jain is None else f'{jain:.3f}'} | {sender_cpu:.2f} s | {r['cpu_s']:.2f} s | "
            f"{per_core / 1e6:.2f} M | {100 * resent:.1f}% | {s['peak_rss_bytes'] / flows:,.0f} B |")
    if switch is not None:
        marks, drops = switch
        line += f" {marks:,} | {drops:,} | {s['timeouts']:,} |"
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
    p.add_argument("--busy-poll", metavar="DURATION",
                   help="the receiver and sender poll their sockets this long before sleeping (--busy-poll)")
    p.add_argument("--rto-min", help="the senders' minimum retransmission timeout (default: the sender's)")
    p.add_argument("--rto-backoff", action="store_true",
                   help="the senders double their retransmission timeout at each expiry (RFC 6298)")
    p.add_argument("--trace", action="store_true",
                   help="trace every flow's every change (--trace-all --trace-interval 0ns): adds trace rows/s "
                        "written and the share of records dropped")
    p.add_argument("--bed", metavar="SCENARIO",
                   help="send through SCENARIO's software switch (root): from its first host to its last")
    args = p.parse_args()
    duration = seconds(args.duration)
    extra = (" switch ECN marks | switch drops | sender timeouts |" if args.bed else "") + (
        " trace rows/s | trace records dropped |" if args.trace else "")
    print("| flows | threads (each side) | data packets/s | goodput | Jain | sender CPU | receiver CPU | "
          "packets/s per sender core | resent | sender peak RSS per flow |" + extra)
    print("|---|---|---|---|---|---|---|---|---|---|" + "---|---|---|" * bool(args.bed) + "---|---|" * args.trace)
    for _ in range(args.rounds):
        for flows in [int(f) for f in args.flows.split(",")]:
            for threads in [int(t) for t in args.threads.split(",")]:
                with tempfile.TemporaryDirectory() as out:
                    s, r, switch = one_run(args, flows, threads, out)
                print(row(flows, threads, s, r, switch, duration), flush=True)


if __name__ == "__main__":
    main()
