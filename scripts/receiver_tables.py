#!/usr/bin/env python3
"""Tables and plots of the receiver-driven study (scripts/receiver_study.sh) from its result directories.

    python3 scripts/receiver_tables.py [results/receiver] [docs]

Writes docs/receiver-driven-tables.md (one table per case: average and p99 slowdown per size bucket,
maximum switch buffer, token and data drop ratios, wasted tokens) and docs/img/converge-*.svg (per-flow
throughput over time of the 8-flow convergence case). Standard library only.
"""

import csv
import json
import os
import sys

ORDER = ["expresspass", "ep_aeolus", "homa", "ndp", "tocc", "tocc_nounsched", "dcqcn", "timely", "hpcc"]
CASES = [
    ("memcached", "Memcached (Facebook ETC key-value sizes), 0.8 load, 10 us of arrivals"),
    ("webserver", "Web server (Facebook), 0.8 load, 200 us of arrivals"),
    ("cache_follower", "Cache follower (Facebook), 0.8 load, 200 us of arrivals"),
    ("websearch", "Web search (DCTCP), 0.8 load, 1 ms of arrivals"),
    ("incast", "Incast mix: web server 0.8 + periodic 16-to-1 incasts of 35 KB flows (0.2)"),
    ("ablation-webserver", "ToCC design points, web server 0.8"),
    ("ablation-cache_follower", "ToCC design points, cache follower 0.8"),
]
# The fabric variants (scripts/receiver_study.sh fabrics): every workload and the incast mix on each.
WORKLOADS = [
    ("memcached", "Memcached, 0.8 load", "10 us", "100 us"),
    ("webserver", "Web server, 0.8 load", "200 us", "2 ms"),
    ("cache_follower", "Cache follower, 0.8 load", "200 us", "2 ms"),
    ("websearch", "Web search, 0.8 load", "1 ms", "10 ms"),
    ("incast", "Incast mix (web server 0.8 + 16-to-1 incasts of 35 KB flows, 0.2)", "200 us", "2 ms"),
]
CASES += [
    (f"nonblocking-{wl}", f"Non-blocking fabric (400 Gbps uplinks): {title}, {fast} of arrivals")
    for (wl, title, fast, _) in WORKLOADS
]
CASES += [
    (f"10g-{wl}", f"10 Gbps hosts and uplinks: {title}, {slow} of arrivals") for (wl, title, _, slow) in WORKLOADS
]
# The long case (scripts/receiver_study.sh long): the main workloads with 5x the windows, seeds 1 and 2.
LONG = {"memcached": "50 us", "webserver": "1 ms", "cache_follower": "1 ms", "websearch": "5 ms"}
CASES += [
    (f"long-s{seed}-{wl}", f"Long run, seed {seed}: {title}, {LONG[wl]} of arrivals")
    for seed in (1, 2)
    for (wl, title, _, _) in WORKLOADS
    if wl in LONG
]
BUCKETS = ["<10KB", "10KB-100KB", "100KB-1MB", ">=1MB"]


def load(path):
    with open(os.path.join(path, "summary.json")) as f:
        return json.load(f)


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def row(name, s):
    cells = [name]
    by_label = {b["label"]: b for b in s["buckets"]}
    for label in BUCKETS:
        b = by_label.get(label)
        if b is None or b["count"] == 0:
            cells.append("-")
        else:
            cells.append(f"{fmt(b['slowdown']['avg'])} / {fmt(b['slowdown']['p99'])}")
    t = s["totals"]
    cells.append(f"{t['max_switch_buffer']['bytes'] / 1e6:.2f}")
    rd = s.get("extra", {}).get("receiver_driven")
    sent = max(t["bytes_sent"], 1)
    cells.append(f"{100 * t.get('bytes_dropped', 0) / sent:.2f}%")
    if rd:
        cells.append(f"{100 * rd['token_drop_ratio']:.2f}%")
        cells.append(f"{rd['tokens_wasted'] + rd['tokens_stale']} ({100 * rd['token_waste_ratio']:.2f}%)")
        cells.append(str(rd["trimmed"]))
    else:
        cells += ["n/a", "n/a", "n/a"]
    unfinished = s["overall"]["unfinished"]
    cells.append(str(unfinished))
    return "| " + " | ".join(cells) + " |"


def table(root, case, title):
    base = os.path.join(root, case)
    if not os.path.isdir(base):
        return None
    names = sorted(os.listdir(base), key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    lines = [f"### {title}", "", f"`results/receiver/{case}/<scheme>`", ""]
    header = ["scheme"] + [f"{b} avg / p99" for b in BUCKETS]
    header += ["max buffer MB", "data drops", "token drops", "wasted tokens", "trimmed", "unfinished"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for name in names:
        path = os.path.join(base, name)
        if os.path.exists(os.path.join(path, "summary.json")):
            lines.append(row(name, load(path)))
    return "\n".join(lines) + "\n"


def converge(root, docs):
    base = os.path.join(root, "converge")
    if not os.path.isdir(base):
        return None
    os.makedirs(os.path.join(docs, "img"), exist_ok=True)
    lines = [
        "### Convergence: 8 flows of 6 MB into one 100 Gbps bottleneck",
        "",
        "Per-flow throughput in 20 us samples between 100 us and the first flow's finish; fair share 12.5 Gbps.",
        "",
        "| scheme | mean per-flow Gbps | min sample | max sample | Jain (means) | max buffer MB | all done us |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        s = load(path)
        series = {}
        with open(os.path.join(path, "throughput.csv")) as f:
            for r in csv.DictReader(f):
                if r["label"].startswith("flow "):
                    series.setdefault(r["label"], []).append((float(r["time_ns"]) / 1e3, float(r["gbps"])))
        with open(os.path.join(path, "fct.csv")) as f:
            first_finish = min(float(r["finish_ns"]) for r in csv.DictReader(f)) / 1e3
        window = [v for pts in series.values() for (t, v) in pts if 100 <= t <= first_finish]
        means = []
        for pts in series.values():
            vals = [v for (t, v) in pts if 100 <= t <= first_finish]
            means.append(sum(vals) / max(len(vals), 1))
        jain = sum(means) ** 2 / (len(means) * sum(m * m for m in means)) if means else 0
        done = s["run"]["sim_time_ns"] / 1e3
        lines.append(
            f"| {name} | {sum(means) / max(len(means), 1):.2f} | {min(window):.2f} | {max(window):.2f} | "
            f"{jain:.4f} | {s['totals']['max_switch_buffer']['bytes'] / 1e6:.2f} | {done:.0f} |"
        )
        svg(os.path.join(docs, "img", f"converge-{name}.svg"), name, series)
    lines.append("")
    for name in sorted(os.listdir(base)):
        lines.append(f"![{name}](img/converge-{name}.svg)")
    return "\n".join(lines) + "\n"


def fairness(root, docs):
    """Jain's index over the flows active in each 20 us sample (at least two), and each flow's jitter."""
    base = os.path.join(root, "fairness")
    if not os.path.isdir(base):
        return None
    os.makedirs(os.path.join(docs, "img"), exist_ok=True)
    lines = [
        "### Fairness: 8 equal flows entering one 100 Gbps bottleneck 100 us apart",
        "",
        "Per 20 us sample: Jain's index over the flows active during the whole sample (two or more); per",
        "flow: the coefficient of variation of its samples while it shares the link.",
        "",
        "| scheme | mean Jain | min Jain | mean per-flow CoV | last flow done us |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        series = {}
        with open(os.path.join(path, "throughput.csv")) as f:
            for r in csv.DictReader(f):
                if r["label"].startswith("flow "):
                    series.setdefault(int(r["label"][5:]), {})[float(r["time_ns"]) / 1e3] = float(r["gbps"])
        span = {}
        with open(os.path.join(path, "fct.csv")) as f:
            for r in csv.DictReader(f):
                span[int(r["id"])] = (float(r["start_ns"]) / 1e3, float(r["finish_ns"]) / 1e3)
        times = sorted({t for pts in series.values() for t in pts})
        jains, shared = [], {i: [] for i in series}
        for t in times:
            active = [i for i, (a, b) in span.items() if a <= t - 20 and b >= t]
            if len(active) < 2:
                continue
            rates = [series[i].get(t, 0.0) for i in active]
            if sum(rates) == 0:
                continue
            jains.append(sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates)))
            for i in active:
                shared[i].append(series[i].get(t, 0.0))
        covs = []
        for vals in shared.values():
            if len(vals) >= 2 and sum(vals) > 0:
                mean = sum(vals) / len(vals)
                covs.append((sum((v - mean) ** 2 for v in vals) / len(vals)) ** 0.5 / mean)
        done = max(b for (_, b) in span.values())
        lines.append(
            f"| {name} | {sum(jains) / max(len(jains), 1):.3f} | {min(jains, default=0):.3f} | "
            f"{sum(covs) / max(len(covs), 1):.3f} | {done:.0f} |"
        )
        flat = {f"flow {i}": sorted(pts.items()) for i, pts in series.items()}
        svg(os.path.join(docs, "img", f"fairness-{name}.svg"), name, flat)
    lines.append("")
    for name in sorted(os.listdir(base)):
        lines.append(f"![{name}](img/fairness-{name}.svg)")
    return "\n".join(lines) + "\n"


def svg(path, title, series, width=640, height=260):
    """A line plot of throughput (Gbps) over time (us), one line per flow."""
    pad_l, pad_b, pad_t, pad_r = 50, 30, 24, 10
    tmax = max((t for pts in series.values() for (t, _) in pts), default=1)
    vmax = max(30.0, max((v for pts in series.values() for (_, v) in pts), default=1))
    sx = lambda t: pad_l + (width - pad_l - pad_r) * t / tmax
    sy = lambda v: height - pad_b - (height - pad_b - pad_t) * v / vmax
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11">']
    out.append(f'<rect width="{width}" height="{height}" fill="white"/>')
    out.append(f'<text x="{pad_l}" y="14">{title}: per-flow throughput (Gbps) over time (us)</text>')
    for v in range(0, int(vmax) + 1, 10):
        out.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{sy(v):.1f}" y2="{sy(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{pad_l - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{v}</text>')
    step = max(1, int(tmax / 8 / 100) * 100)
    for t in range(0, int(tmax) + 1, step):
        out.append(f'<text x="{sx(t):.1f}" y="{height - 10}" text-anchor="middle">{t}</text>')
    for i, (label, pts) in enumerate(sorted(series.items())):
        d = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for (t, v) in pts)
        out.append(f'<polyline fill="none" stroke="{colors[i % 8]}" stroke-width="1" points="{d}"/>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "results/receiver"
    docs = sys.argv[2] if len(sys.argv) > 2 else "docs"
    parts = [
        "# Receiver-driven study: generated tables",
        "",
        "Generated by `python3 scripts/receiver_tables.py` from the runs of `scripts/receiver_study.sh`;",
        "see [receiver-driven.md](receiver-driven.md) for the setup and the findings. Slowdown = FCT / ideal",
        "FCT (HPCC artifact definition); data drops = payload bytes dropped / payload bytes sent; token drops =",
        "tokens dropped by switch limiters / tokens issued; wasted tokens = tokens that reached a sender with",
        "nothing left to send or expired there (share of tokens issued); trimmed = data packets trimmed to headers",
        "(NDP; a packet can be trimmed again when resent). Every figure is from one run with seed 1, except",
        "the long case's second seed.",
        "",
    ]
    for case, title in CASES:
        t = table(root, case, title)
        if t:
            parts.append(t)
    c = converge(root, docs)
    if c:
        parts.append(c)
    fair = fairness(root, docs)
    if fair:
        parts.append(fair)
    with open(os.path.join(docs, "receiver-driven-tables.md"), "w") as f:
        f.write("\n".join(parts))


if __name__ == "__main__":
    main()
