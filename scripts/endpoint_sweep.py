#!/usr/bin/env python3
"""Endpoint- and host-congestion experiments: runs the scenarios under scenarios/endpoint and
scenarios/host over the parameter grids of docs/endpoint-congestion.md and docs/host-congestion.md,
writes the results as CSV under docs/data/ and renders the plots as SVG under docs/img/.

Standard library only. Usage (from the repository root, after `cargo build --release`):

    python3 scripts/endpoint_sweep.py            # every experiment
    python3 scripts/endpoint_sweep.py endpoint   # one group: endpoint | host
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.path.join(ROOT, "target", "release", "sluice")
DATA = os.path.join(ROOT, "docs", "data")
IMG = os.path.join(ROOT, "docs", "img")
LINK = 100e9
DURATION = 10e-3  # the endpoint scenarios' duration
POLICIES = ["opt", "aimd", "ec_aware"]
PAYLOADS = [512, 1024, 2048, 4096, 8192]
DRAINS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
HEADER_BDP = 100_000  # 100 Gbps x 8 us: the header-only bandwidth-delay product of the paper's Fig. 8


def run(scenario, sets):
    """Runs one scenario with `--set` overrides; returns (summary, flow rows)."""
    with tempfile.TemporaryDirectory() as out:
        args = [SLUICE, "run", os.path.join(ROOT, scenario), "--out", out, "--quiet"]
        for s in sets:
            args += ["--set", s]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(out, "fct.csv")) as f:
            flows = list(csv.DictReader(f))
    return summary, flows


def endpoint_point(scenario, policy, payload, drain, queue=None, window=None):
    sets = [f"cc.algorithm={policy}", f"link.mtu={payload}", f"host.endpoint.drain={drain}"]
    if queue is not None:
        sets.append(f"host.endpoint.queue={queue}B")
    if window is not None:
        key = "max_cwnd_bdps" if policy == "aimd" else "outstanding_bdps"
        sets.append(f"cc.params.{key}={window}")
    summary, flows = run(scenario, sets)
    host = summary["extra"]["host"]
    totals = summary["totals"]
    rates = [int(f["size_bytes"]) * 8 / DURATION for f in flows]
    return {
        "policy": policy,
        "payload": payload,
        "drain": drain,
        "queue": queue if queue is not None else 81 * 1024,
        "window_bdps": window if window is not None else "",
        "goodput": round(host["endpoint_goodput_gbps"] * 1e9 / LINK, 4),
        "retransmission": round(totals["retransmitted_bytes"] * 8 / DURATION / LINK, 5),
        "target_drops": host["endpoint_drops"],
        "max_rate_difference": round((max(rates) - min(rates)) / LINK, 4),
    }


def write_csv(name, rows):
    os.makedirs(DATA, exist_ok=True)
    with open(os.path.join(DATA, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


COLORS = {512: "#1f77b4", 1024: "#ff7f0e", 2048: "#2ca02c", 4096: "#d62728", 8192: "#9467bd",
          "opt": "#d62728", "aimd": "#ff7f0e", "ec_aware": "#2ca02c"}


def svg_panels(path, title, panels, xlabel, ylabel, ymax, xs_label=None):
    """Line plots side by side. `panels` is [(panel title, {series name: [(x, y)]})]."""
    w, h, pad = 300, 230, 45
    total_w = w * len(panels) + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{h + 70}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{total_w / 2}" y="16" text-anchor="middle" font-size="13">{title}</text>']
    for i, (ptitle, series) in enumerate(panels):
        x0, y0 = i * w + pad, 30
        pw, ph = w - pad - 10, h - 40
        xs = sorted({x for pts in series.values() for x, _ in pts})
        xmin, xmax = min(xs), max(xs)
        sx = lambda x: x0 + (x - xmin) / (xmax - xmin or 1) * pw
        sy = lambda y: y0 + ph - min(y, ymax) / ymax * ph
        out.append(f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        out.append(f'<text x="{x0 + pw / 2}" y="{y0 - 3}" text-anchor="middle">{ptitle}</text>')
        for k in range(5):
            yv = ymax * k / 4
            out.append(f'<text x="{x0 - 4}" y="{sy(yv) + 4}" text-anchor="end">{yv:g}</text>')
            out.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{sy(yv)}" y2="{sy(yv)}" stroke="#ddd"/>')
        for x in xs[:: max(1, len(xs) // 10)]:
            out.append(f'<text x="{sx(x)}" y="{y0 + ph + 13}" text-anchor="middle">{x:g}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 28}" text-anchor="middle">{xlabel}</text>')
        if i == 0:
            out.append(f'<text x="12" y="{y0 + ph / 2}" transform="rotate(-90 12 {y0 + ph / 2})" '
                       f'text-anchor="middle">{ylabel}</text>')
        for name, pts in series.items():
            pts = sorted(pts)
            d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke="{COLORS.get(name, "#000")}" stroke-width="1.5"/>')
    lx = 10
    names = list(panels[0][1].keys())
    for name in names:
        out.append(f'<rect x="{lx}" y="{h + 50}" width="12" height="3" fill="{COLORS.get(name, "#000")}"/>')
        out.append(f'<text x="{lx + 16}" y="{h + 55}">{name}</text>')
        lx += 90
    out.append("</svg>")
    os.makedirs(IMG, exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def grid(scenario, name, window=None):
    rows = [endpoint_point(scenario, p, s, d, window=window) for p in POLICIES for s in PAYLOADS for d in DRAINS]
    write_csv(name + ".csv", rows)
    return rows


def plot_grid(rows, name, title):
    for metric, ylabel, ymax in [("goodput", "normalized goodput", 1.0),
                                 ("retransmission", "retransmission / link bandwidth", None)]:
        top = ymax or max(0.01, max(r[metric] for r in rows))
        panels = []
        for p in POLICIES:
            series = {s: [(r["drain"], r[metric]) for r in rows if r["policy"] == p and r["payload"] == s]
                      for s in PAYLOADS}
            panels.append((p, series))
        svg_panels(os.path.join(IMG, f"{name}-{metric}.svg"), f"{title}: {ylabel}", panels,
                   "processing bandwidth / link", ylabel, top)


def endpoint():
    unicast = grid("scenarios/endpoint/unicast.toml", "endpoint-unicast")
    plot_grid(unicast, "endpoint-unicast", "Unicast streaming PUT")
    incast = grid("scenarios/endpoint/incast.toml", "endpoint-incast")
    plot_grid(incast, "endpoint-incast", "8:1 incast streaming PUT")
    incast_small = grid("scenarios/endpoint/incast.toml", "endpoint-incast-window025", window=0.25)
    plot_grid(incast_small, "endpoint-incast-window025", "8:1 incast, outstanding threshold 0.25 BDP")
    depth = []
    for mult in [0.25, 0.5, 1, 2, 4, 8]:
        for p in POLICIES:
            for window in [None, 0.25]:
                r = endpoint_point("scenarios/endpoint/incast.toml", p, 2048, 0.7, int(mult * HEADER_BDP), window)
                r["queue_bdps"] = mult
                depth.append(r)
    write_csv("endpoint-queue-depth.csv", depth)
    for metric, ylabel in [("goodput", "normalized goodput"), ("retransmission", "retransmission / link")]:
        panels = []
        for window, label in [(None, "threshold 2 BDP"), (0.25, "threshold 0.25 BDP")]:
            series = {p: [(r["queue_bdps"], r[metric]) for r in depth if r["policy"] == p
                          and r["window_bdps"] == (window if window is not None else "")] for p in POLICIES}
            panels.append((label, series))
        top = 1.0 if metric == "goodput" else max(0.01, max(r[metric] for r in depth))
        svg_panels(os.path.join(IMG, f"endpoint-queue-depth-{metric}.svg"),
                   f"8:1 incast at 70%: {ylabel} vs queue depth", panels, "queue depth / header-only BDP",
                   ylabel, top)
    panels = []
    for rows, label in [(incast, "threshold 2 BDP"), (incast_small, "threshold 0.25 BDP")]:
        series = {p: [(r["drain"], r["max_rate_difference"]) for r in rows if r["policy"] == p and r["payload"] == 2048]
                  for p in POLICIES}
        panels.append((label, series))
    top = max(0.01, max(r["max_rate_difference"] for r in incast + incast_small if r["payload"] == 2048))
    svg_panels(os.path.join(IMG, "endpoint-fairness.svg"), "8:1 incast, 2 KB: max PUT-rate difference",
               panels, "processing bandwidth / link", "max rate difference / link", top)


def host():
    rows = []
    load = 'host.bus.load_schedule=[{{at = "200us", load = "{}"}}]'
    cases = [("scenarios/host/fabric-incast.toml", "fabric (8:1 incast)", []),
             ("scenarios/host/host-congestion.toml", "host (local load 320 Gbps)", [load.format("320Gbps")]),
             ("scenarios/host/host-congestion.toml", "host (local load 450 Gbps)", [load.format("450Gbps")]),
             ("scenarios/host/host-congestion.toml", "host (450 Gbps), lossless: PFC",
              [load.format("450Gbps"), "host.bus.pfc=true", "switch.pfc.enabled=true"])]
    for scenario, case, sets in cases:
        for policy in ["dctcp", "hostcc", "dcqcn"]:
            summary, flows = run(scenario, [f"cc.algorithm={policy}"] + sets)
            t, h = summary["totals"], summary["extra"]["host"]
            acked = sum(int(f["size_bytes"]) for f in flows)
            rows.append({
                "case": case,
                "policy": policy,
                "goodput_gbps": round(acked * 8 / 2e-3 / 1e9, 2),
                "mean_delay_to_memory_us": round(h["host_mean_delay_ns"] / 1e3, 2),
                "nic_drops": h["host_drops"],
                "host_ecn_marks": h["host_ecn_marks"],
                "switch_ecn_marks": t["ecn_marks"],
                "retransmitted_mb": round(t["retransmitted_bytes"] / 1e6, 3),
                "pfc_pause_us": round(t["pfc_pause_time_ns"] / 1e3, 1),
            })
    write_csv("host-congestion.csv", rows)
    series = {}
    sets = ['output.throughput_flows=[0, 1]', "output.sample_interval=20us"]
    for policy in ["dctcp", "hostcc", "dcqcn"]:
        with tempfile.TemporaryDirectory() as out:
            args = [SLUICE, "run", os.path.join(ROOT, "scenarios/host/host-congestion.toml"), "--out", out, "--quiet",
                    "--set", f"cc.algorithm={policy}"]
            for s_ in sets:
                args += ["--set", s_]
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out, "throughput.csv")) as f:
                samples = {}
                for r in csv.DictReader(f):
                    t = float(r["time_ns"]) / 1000
                    samples[t] = samples.get(t, 0.0) + float(r["gbps"])
        series[policy] = sorted(samples.items())
    COLORS.update({"dctcp": "#1f77b4", "hostcc": "#2ca02c", "dcqcn": "#d62728"})
    svg_panels(os.path.join(IMG, "host-congestion-throughput.svg"),
               "Two streams into h0; local memory load from 200 us", [("goodput of both flows", series)],
               "time (us)", "Gbps", 100.0)


if __name__ == "__main__":
    groups = sys.argv[1:] or ["endpoint", "host"]
    if "endpoint" in groups:
        endpoint()
    if "host" in groups:
        host()
