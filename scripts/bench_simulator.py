#!/usr/bin/env python3
"""The whole-simulator benchmark: `sluice bench` on the quickstart, ws128 and the fat-trees of the
scale set (k = 4, 8, 16, 32 with web-search flows at 30% load), one after another on one core. Prints a
table of wall time, events/s, packet-hops/s, ns per packet-hop and peak RSS per host, writes it to
docs/data/scale.csv and draws the cost curve (hosts against ns per packet-hop and bytes per host) as
docs/img/scale-curve.svg.

Usage (from the repository root, after `cargo build --release -p sluice`):

    python3 scripts/bench_simulator.py                 # every case (minutes: k=32 alone runs for minutes)
    python3 scripts/bench_simulator.py quickstart ws128  # some cases, by name; files are not written
    SLUICE=target/ci/sluice python3 scripts/bench_simulator.py quickstart
    SLUICE=target/pgo/sluice python3 scripts/bench_simulator.py ws128   # the profile-guided build

Compare a change by running it before and after on the same machine; BENCHMARKS.md records the figures.
"""

import csv
import os
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.environ.get("SLUICE", os.path.join(ROOT, "target", "release", "sluice"))
plt.rcParams["svg.hashsalt"] = "sluice"  # the same SVG for the same data

# name, hosts, scenario, --set overrides; the k cases form the cost curve.
CASES = [
    ("quickstart", 16, "scenarios/quickstart.toml", []),
    ("ws128", 128, "scenarios/ws128.toml", []),
    ("k8", 128, "scenarios/quickstart.toml", ["topology.k=8", "workload.0.duration=2ms"]),
    ("k16", 1024, "scenarios/scale/k16_websearch.toml", []),
    ("k32", 8192, "scenarios/scale/k32_websearch.toml", []),
]
CURVE = ["quickstart", "k8", "k16", "k32"]
RUN = re.compile(
    r"wall (?P<wall>[\d.]+) s \| simulated (?P<sim>[\d.]+) ms \| (?P<events>\d+) events .*\| "
    r"(?P<hops>\d+) packet-hops .*\| flows finished (?P<done>\d+)/(?P<flows>\d+)"
)
PEAK = re.compile(r"peak RSS (?P<rss>[\d.]+) MB")


def bench(scenario, sets):
    """Runs `sluice bench` once and returns its figures."""
    args = [SLUICE, "bench", os.path.join(ROOT, scenario), "--force"]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    text = out.stdout + out.stderr
    run, peak = RUN.search(text), PEAK.search(text)
    if not run or not peak:
        sys.exit(f"cannot read `sluice bench` output:\n{text}")
    return {k: float(v) for k, v in {**run.groupdict(), **peak.groupdict()}.items()}


def row(name, hosts, r):
    return {
        "case": name,
        "hosts": hosts,
        "flows": int(r["flows"]),
        "unfinished": int(r["flows"] - r["done"]),
        "wall_s": r["wall"],
        "events": int(r["events"]),
        "events_per_s": round(r["events"] / r["wall"]),
        "packet_hops": int(r["hops"]),
        "packet_hops_per_s": round(r["hops"] / r["wall"]),
        "ns_per_packet_hop": round(r["wall"] * 1e9 / r["hops"], 1),
        "peak_rss_mb": r["rss"],
        "rss_kb_per_host": round(r["rss"] * 1e3 / hosts, 1),
    }


def plot(rows, path):
    curve = [r for r in rows if r["case"] in CURVE]
    hosts = [r["hosts"] for r in curve]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    left.plot(hosts, [r["ns_per_packet_hop"] for r in curve], marker="o")
    left.set_ylabel("ns per packet-hop")
    right.plot(hosts, [r["rss_kb_per_host"] for r in curve], marker="o")
    right.set_ylabel("peak RSS per host (KB)")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("hosts (fat-tree k = 4, 8, 16, 32)")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.suptitle("sluice on one core: web search at 30% load")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def main():
    chosen = sys.argv[1:] or [c[0] for c in CASES]
    unknown = [c for c in chosen if c not in [name for name, *_ in CASES]]
    if unknown:
        sys.exit(f"unknown case {unknown[0]!r}: choose from {', '.join(c[0] for c in CASES)}")
    rows = []
    for name, hosts, scenario, sets in CASES:
        if name in chosen:
            rows.append(row(name, hosts, bench(scenario, sets)))
            print(", ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)
    if sys.argv[1:]:
        return
    with open(os.path.join(ROOT, "docs", "data", "scale.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, os.path.join(ROOT, "docs", "img", "scale-curve.svg"))


if __name__ == "__main__":
    main()
