#!/usr/bin/env python3
"""Endpoint- and host-congestion studies (docs/endpoint-congestion.md, docs/host-congestion.md), through
the sluice Python package: the endpoint grids are the sweep files sweeps/endpoint_*.toml, run with
sluice.sweep; the host cases are runs of scenarios/host. Writes the data as CSV under docs/data/ and the
plots as SVG under docs/img/ (matplotlib).

Usage (from the repository root, with the package installed: pip install ./python matplotlib):

    python3 scripts/endpoint_study.py            # every study
    python3 scripts/endpoint_study.py endpoint   # one group: endpoint | host
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import sluice  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "docs", "data")
IMG = os.path.join(ROOT, "docs", "img")
OUT = os.path.join(ROOT, "results", "endpoint-study")
LINK = 100e9
DURATION = 10e-3  # the endpoint scenarios' duration
POLICIES = ["opt", "aimd", "ec_aware"]
PAYLOADS = [512, 1024, 2048, 4096, 8192]
DEFAULT_QUEUE = 81 * 1024
HEADER_BDP = 100_000  # 100 Gbps x 8 us: the header-only bandwidth-delay product of the paper's Fig. 8
COLORS = {512: "#1f77b4", 1024: "#ff7f0e", 2048: "#2ca02c", 4096: "#d62728", 8192: "#9467bd",
          "opt": "#d62728", "aimd": "#ff7f0e", "ec_aware": "#2ca02c",
          "dctcp": "#1f77b4", "hostcc": "#2ca02c", "dcqcn": "#d62728", "dctcp_host": "#9467bd"}
# The host cases' policies: hostCC with both responses, its network response alone (marking on receive),
# the same response taken at the sender from the host signals ACKs carry (dctcp_host), and neither.
HOST_POLICIES = {"dctcp": ["cc.algorithm=dctcp"],
                 "hostcc": ["cc.algorithm=hostcc"],
                 "hostcc, marking only": ["cc.algorithm=hostcc", "cc.params.throttle=false"],
                 "dctcp_host": ["cc.algorithm=dctcp_host"],
                 "dcqcn": ["cc.algorithm=dcqcn"]}
plt.rcParams["svg.hashsalt"] = "sluice"  # the same SVG for the same data


def sweep_rows(name, window=None):
    """Runs sweeps/<name>.toml and returns the document's rows, one per run in the sweep's order."""
    result = sluice.sweep(os.path.join(ROOT, "sweeps", name + ".toml"), out=os.path.join(OUT, name))
    if result.failed:
        sys.exit(f"{name}: runs failed: {result.failed[:3]}")
    rows = []
    for i, r in result.table.iterrows():
        sizes = result.run(i).fct["size_bytes"]
        rates = sizes * 8 / DURATION
        queue = r.get("host.endpoint.queue", DEFAULT_QUEUE)
        threshold = window if window is not None else r.get("cc.opt.outstanding_bdps", 2.0)
        rows.append({
            "policy": r["cc.algorithm"],
            "payload": int(r.get("link.mtu", 2048)),
            "drain": r.get("host.endpoint.drain", 0.7),
            "queue": int(queue),
            "window_bdps": "" if threshold == 2.0 else threshold,
            "goodput": round(r["host.endpoint_goodput_gbps"] * 1e9 / LINK, 4),
            "retransmission": round(r["retransmitted_bytes"] * 8 / DURATION / LINK, 5),
            "target_drops": int(r["host.endpoint_drops"]),
            "max_rate_difference": round((rates.max() - rates.min()) / LINK, 4),
        })
    return rows


def write_csv(name, rows):
    os.makedirs(DATA, exist_ok=True)
    with open(os.path.join(DATA, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def panels(path, title, series_by_panel, xlabel, ylabel, ymax):
    """Line plots side by side: `series_by_panel` is [(panel title, {series name: [(x, y)]})]."""
    width = max(5.0, 3.2 * len(series_by_panel))
    fig, axes = plt.subplots(1, len(series_by_panel), figsize=(width, 3.0), sharey=True,
                             squeeze=False)
    for ax, (panel, series) in zip(axes[0], series_by_panel):
        for name, points in series.items():
            xs, ys = zip(*sorted(points))
            label = f"{name} B payload" if isinstance(name, int) else str(name)
            ax.plot(xs, ys, color=COLORS.get(name, "#000000"), linewidth=1.5, label=label)
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_ylim(0, ymax)
        ax.grid(color="#dddddd", linewidth=0.6)
    axes[0][0].set_ylabel(ylabel, fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    os.makedirs(IMG, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def plot_grid(rows, name, title):
    for metric, ylabel, ymax in [("goodput", "normalized goodput", 1.0),
                                 ("retransmission", "retransmission / link bandwidth", None)]:
        top = ymax or max(0.01, max(r[metric] for r in rows))
        by_policy = [(p, {s: [(r["drain"], r[metric]) for r in rows if r["policy"] == p and r["payload"] == s]
                          for s in PAYLOADS}) for p in POLICIES]
        panels(os.path.join(IMG, f"{name}-{metric}.svg"), f"{title}: {ylabel}", by_policy,
               "processing bandwidth / link", ylabel, top)


def endpoint():
    unicast = sweep_rows("endpoint_unicast")
    write_csv("endpoint-unicast.csv", unicast)
    plot_grid(unicast, "endpoint-unicast", "Unicast streaming PUT")
    incast = sweep_rows("endpoint_incast")
    write_csv("endpoint-incast.csv", incast)
    plot_grid(incast, "endpoint-incast", "8:1 incast streaming PUT")
    small = sweep_rows("endpoint_incast_window025", window=0.25)
    write_csv("endpoint-incast-window025.csv", small)
    plot_grid(small, "endpoint-incast-window025", "8:1 incast, outstanding threshold 0.25 BDP")
    depth = sweep_rows("endpoint_queue_depth")
    for r in depth:
        depth_bdps = r["queue"] / HEADER_BDP
        r["queue_bdps"] = int(depth_bdps) if depth_bdps.is_integer() else depth_bdps
    write_csv("endpoint-queue-depth.csv", depth)
    for metric, ylabel in [("goodput", "normalized goodput"), ("retransmission", "retransmission / link")]:
        by_threshold = [(label, {p: [(r["queue_bdps"], r[metric]) for r in depth
                                     if r["policy"] == p and r["window_bdps"] == window] for p in POLICIES})
                        for window, label in [("", "threshold 2 BDP"), (0.25, "threshold 0.25 BDP")]]
        top = 1.0 if metric == "goodput" else max(0.01, max(r[metric] for r in depth))
        panels(os.path.join(IMG, f"endpoint-queue-depth-{metric}.svg"),
               f"8:1 incast at 70%: {ylabel} vs queue depth", by_threshold, "queue depth / header-only BDP",
               ylabel, top)
    fairness = [(label, {p: [(r["drain"], r["max_rate_difference"]) for r in rows
                             if r["policy"] == p and r["payload"] == 2048] for p in POLICIES})
                for rows, label in [(incast, "threshold 2 BDP"), (small, "threshold 0.25 BDP")]]
    top = max(0.01, max(r["max_rate_difference"] for r in incast + small if r["payload"] == 2048))
    panels(os.path.join(IMG, "endpoint-fairness.svg"), "8:1 incast, 2 KB: max PUT-rate difference", fairness,
           "processing bandwidth / link", "max rate difference / link", top)


def host():
    rows = []
    load = 'host.bus.load_schedule=[{{at = "200us", load = "{}"}}]'
    cases = [("scenarios/host/fabric-incast.toml", "fabric (8:1 incast)", []),
             ("scenarios/host/host-congestion.toml", "host (local load 320 Gbps)", [load.format("320Gbps")]),
             ("scenarios/host/host-congestion.toml", "host (local load 450 Gbps)", [load.format("450Gbps")]),
             ("scenarios/host/host-congestion.toml", "host (450 Gbps), lossless: PFC",
              [load.format("450Gbps"), "host.bus.pfc=true", "switch.pfc.enabled=true"])]
    for scenario, case, sets in cases:
        for policy, policy_sets in HOST_POLICIES.items():
            r = sluice.run(os.path.join(ROOT, scenario), set=policy_sets + sets)
            t, h = r.summary["totals"], r.summary["extra"]["host"]
            rows.append({
                "case": case,
                "policy": policy,
                "goodput_gbps": round(int(r.fct["size_bytes"].sum()) * 8 / 2e-3 / 1e9, 2),
                "mean_delay_to_memory_us": round(h["host_mean_delay_ns"] / 1e3, 2),
                "nic_drops": h["host_drops"],
                "host_ecn_marks": h["host_ecn_marks"],
                "switch_ecn_marks": t["ecn_marks"],
                "retransmitted_mb": round(t["retransmitted_bytes"] / 1e6, 3),
                "pfc_pause_us": round(t["pfc_pause_time_ns"] / 1e3, 1),
            })
    write_csv("host-congestion.csv", rows)
    series = {}
    for policy in ["dctcp", "hostcc", "dctcp_host", "dcqcn"]:
        r = sluice.run(os.path.join(ROOT, "scenarios/host/host-congestion.toml"),
                       set={"cc.algorithm": policy, "output.throughput_flows": [0, 1], "output.sample_interval": "20us"})
        # Both flows' payload goodput (bytes_kind "payload"), summed per sample.
        flows = r.throughput[r.throughput["bytes_kind"] == "payload"]
        per_time = flows.groupby("time_ns")["gbps"].sum()
        series[policy] = [(t / 1000, g) for t, g in per_time.items()]
    panels(os.path.join(IMG, "host-congestion-throughput.svg"),
           "Two streams into h0; local memory load from 200 us", [("goodput of both flows", series)],
           "time (us)", "Gbps", 100.0)


if __name__ == "__main__":
    groups = sys.argv[1:] or ["endpoint", "host"]
    if "endpoint" in groups:
        endpoint()
    if "host" in groups:
        host()
