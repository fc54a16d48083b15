#!/usr/bin/env python3
"""One run on several threads: `sluice bench` with `--set simulation.threads=N` for each case and each
thread count, one run after another. Prints a table of wall time, speed-up over one thread, the
speed-up the parts' balance allows (`sluice bench`'s "speed-up bound": the same on any machine), events/s
and peak RSS; with --write, also writes it to docs/data/threads.csv and draws the speed-up curve
(threads against speed-up, one line per case) as docs/img/threads-speedup.svg.

Usage (from the repository root, after `cargo build --release -p sluice`):

    python3 scripts/bench_threads.py --threads 1,2 ws128 k16_1ms
    python3 scripts/bench_threads.py --threads 1,2,4,8,16 --write      # every case (k=16 and k=32: minutes)

Each run's results are byte-identical whatever the thread count (crates/sluice/tests/threads.rs checks
the bundled scenarios); only the time changes. BENCHMARKS.md records the figures and the machine.
"""

import argparse
import csv
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.environ.get("SLUICE", os.path.join(ROOT, "target", "release", "sluice"))

# name, scenario, --set overrides
CASES = [
    ("ws128", "scenarios/ws128.toml", []),
    ("fat320", "scenarios/fat320.toml", []),
    ("k16_1ms", "scenarios/scale/k16_websearch.toml", ["workload.0.duration=1ms"]),
    ("k16", "scenarios/scale/k16_websearch.toml", []),
    ("k32", "scenarios/scale/k32_websearch.toml", []),
]
RUN = re.compile(r"wall (?P<wall>[\d.]+) s \| simulated [\d.]+ ms \| (?P<events>\d+) events")
PEAK = re.compile(r"peak RSS (?P<rss>[\d.]+) MB")
BOUND = re.compile(r"speed-up bound (?P<bound>[\d.]+)x")


def bench(scenario, sets, threads):
    """Runs `sluice bench` once on `threads` threads and returns wall seconds, events, peak RSS (MB) and
    the speed-up bound of the parts' balance (1 for one thread)."""
    args = [SLUICE, "bench", os.path.join(ROOT, scenario), "--force", "--set", f"simulation.threads={threads}"]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True)
    text = out.stdout + out.stderr
    run, peak = RUN.search(text), PEAK.search(text)
    if out.returncode != 0 or not run or not peak:
        sys.exit(f"`{' '.join(args)}` failed:\n{text}")
    bound = BOUND.search(text)
    return float(run["wall"]), int(run["events"]), float(peak["rss"]), float(bound["bound"]) if bound else 1.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all): " + ", ".join(c[0] for c in CASES))
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated (1 is always run)")
    parser.add_argument("--write", action="store_true", help="write docs/data/threads.csv and the plot")
    args = parser.parse_args()
    known = {c[0]: c for c in CASES}
    unknown = [c for c in args.cases if c not in known]
    if unknown:
        sys.exit(f"unknown case {', '.join(unknown)}; known: {', '.join(known)}")
    try:
        counts = sorted({1, *(int(t) for t in args.threads.split(","))})
    except ValueError:
        sys.exit(f"--threads {args.threads}: expected thread counts such as 1,2,4")
    if counts[0] < 1:
        sys.exit(f"--threads {args.threads}: thread counts start at 1")
    rows = []
    print("| case | threads | wall | speed-up | bound of the balance | events/s | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for name in args.cases or [c[0] for c in CASES]:
        _, scenario, sets = known[name]
        base = None
        for threads in counts:
            wall, events, rss, bound = bench(scenario, sets, threads)
            base = base or wall
            row = (name, threads, wall, base / wall, events / wall, rss)
            rows.append(row)
            print(
                f"| {name} | {threads} | {wall:.3f} s | {base / wall:.2f}x | {bound:.2f}x | "
                f"{events / wall / 1e6:.2f} M | {rss:.1f} MB |"
            )
    if args.write:
        write(rows)


def write(rows):
    """docs/data/threads.csv and docs/img/threads-speedup.svg."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "sluice"  # the same SVG for the same data
    with open(os.path.join(ROOT, "docs", "data", "threads.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["case", "threads", "wall_s", "speedup", "events_per_s", "peak_rss_mb"])
        for name, threads, wall, speedup, rate, rss in rows:
            out.writerow([name, threads, f"{wall:.3f}", f"{speedup:.3f}", f"{rate:.0f}", f"{rss:.1f}"])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name in dict.fromkeys(r[0] for r in rows):
        points = [(r[1], r[3]) for r in rows if r[0] == name]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    top = max(r[1] for r in rows)
    ax.plot([1, top], [1, top], linestyle=":", color="grey", label="linear")
    ax.set_xlabel("threads")
    ax.set_ylabel("speed-up over one thread")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "docs", "img", "threads-speedup.svg"), metadata={"Date": None})


if __name__ == "__main__":
    main()
