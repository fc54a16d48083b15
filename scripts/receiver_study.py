#!/usr/bin/env python3
"""The receiver-driven study (docs/receiver-driven.md), through the sluice Python package: runs the sweep
files sweeps/receiver/*.toml with sluice.sweep and writes docs/receiver-driven-tables.md (one table per
case: average and p99 slowdown per size bucket, maximum switch buffer, data and token drop ratios, wasted
tokens, trimmed packets) and the per-flow throughput plots docs/img/converge-*.svg and
docs/img/fairness-*.svg (sluice.plot).

Usage (from the repository root, with the package installed: pip install ./python matplotlib):

    python3 scripts/receiver_study.py             # every sweep (about 25 minutes on 2 cores, 22 of them long)
    python3 scripts/receiver_study.py converge    # one sweep: workloads | incast | ablation | long |
                                                  #            converge | fairness

A sweep keeps its runs under results/receiver-study/<sweep>, so a second call reuses them; the document is
written from every sweep whose results are there.
"""

import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import sluice  # noqa: E402
import sluice.plot  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
OUT = os.path.join(ROOT, "results", "receiver-study")
SWEEPS = ["workloads", "incast", "ablation", "long", "converge", "fairness"]
plt.rcParams["svg.hashsalt"] = "sluice"  # the same SVG for the same data

ORDER = ["expresspass", "ep_aeolus", "homa", "ndp", "tocc", "tocc_nounsched", "dcqcn", "timely", "hpcc"]
BUCKETS = ["<10KB", "10KB-100KB", "100KB-1MB", ">=1MB"]
WORKLOADS = {
    "memcached": "Memcached (Facebook ETC key-value sizes)",
    "webserver": "Web server (Facebook)",
    "cache_follower": "Cache follower (Facebook)",
    "websearch": "Web search (DCTCP)",
}
FABRICS = {  # (host rate, uplink rate): the fabric's title, None for the paper's
    ("100Gbps", "100Gbps"): None,
    ("100Gbps", "400Gbps"): "Non-blocking fabric (400 Gbps uplinks)",
    ("10Gbps", "10Gbps"): "10 Gbps hosts and uplinks",
}
INCAST = "Incast mix (web server 0.8 + 16-to-1 incasts of 35 KB flows, 0.2)"
# ToCC's design points (sweeps/receiver/ablation.toml): the parameter switched off names the run.
DESIGN_POINTS = [
    ("cc.params.token_limiter", "tocc-no-limiter"),
    ("cc.params.volume_control", "tocc-no-volume-control"),
    ("cc.params.token_cc", "tocc-no-token-cc"),
]


def run_sweep(name):
    """Runs sweeps/receiver/<name>.toml (reusing finished runs) and returns its SweepResult."""
    path = os.path.join(ROOT, "sweeps", "receiver", name + ".toml")
    result = sluice.sweep(path, out=os.path.join(OUT, name))
    if result.failed:
        sys.exit(f"{name}: runs failed: {result.failed[:3]}")
    return result


def finished(name):
    """The sweep's results when every run of it finished, else None."""
    directory = os.path.join(OUT, name)
    if not os.path.exists(os.path.join(directory, "sweep.csv")):
        return None
    result = sluice.load_sweep(directory)
    return None if result.failed else result


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def row(name, s):
    """A table row: per bucket avg / p99 slowdown, max buffer, drops, tokens, trimmed, unfinished."""
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
    cells.append(f"{100 * t.get('bytes_dropped', 0) / max(t['bytes_sent'], 1):.2f}%")
    rd = s.get("extra", {}).get("receiver_driven")
    if rd:
        cells.append(f"{100 * rd['token_drop_ratio']:.2f}%")
        cells.append(f"{rd['tokens_wasted'] + rd['tokens_stale']} ({100 * rd['token_waste_ratio']:.2f}%)")
        cells.append(str(rd["trimmed"]))
    else:
        cells += ["n/a", "n/a", "n/a"]
    cells.append(str(s["overall"]["unfinished"]))
    return "| " + " | ".join(cells) + " |"


def table(title, source, runs):
    """One case's table: `runs` is [(scheme name, summary)] in the document's order."""
    header = ["scheme"] + [f"{b} avg / p99" for b in BUCKETS]
    header += ["max buffer MB", "data drops", "token drops", "wasted tokens", "trimmed", "unfinished"]
    lines = [f"### {title}", "", source, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    order = sorted(runs, key=lambda r: (ORDER.index(r[0]) if r[0] in ORDER else len(ORDER), r[0]))
    lines += [row(name, summary) for name, summary in order]
    return "\n".join(lines) + "\n"


def cases(result, case_of, name_of):
    """Groups a sweep's runs by case: {case: [(scheme name, summary)]}, in the sweep's order."""
    groups = {}
    for i, r in result.table.iterrows():
        groups.setdefault(case_of(r), []).append((name_of(r), result.run(i).summary))
    return groups


def spaced(duration):
    """A duration as the document writes it: "200us" as "200 us"."""
    return re.sub(r"^([0-9.]+)", r"\1 ", duration)


def short(cdf):
    """A workload's short title: "Web server" for webserver."""
    return WORKLOADS[cdf].split(" (")[0]


def workload_tables(result):
    """The workload cases of every fabric: {(fabric, workload): table}."""
    groups = cases(
        result,
        lambda r: (r["topology.host_rate"], r["topology.uplink_rate"], r["workload.0.cdf"], r["workload.0.duration"]),
        lambda r: r["cc.algorithm"],
    )
    tables = {}
    for (host, uplink, cdf, duration), runs in groups.items():
        fabric = FABRICS[(host, uplink)]
        title = f"{WORKLOADS[cdf]}, 0.8 load, {spaced(duration)} of arrivals"
        if fabric:
            title = f"{fabric}: {short(cdf)}, 0.8 load, {spaced(duration)} of arrivals"
        source = f"`sweeps/receiver/workloads.toml`: {host} hosts, {uplink} uplinks, `{cdf}`"
        tables[(fabric, cdf)] = table(title, source, runs)
    return tables


def incast_tables(result):
    groups = cases(
        result,
        lambda r: (r["topology.host_rate"], r["topology.uplink_rate"], r["workload.0.duration"]),
        lambda r: r["cc.algorithm"],
    )
    tables = {}
    for (host, uplink, duration), runs in groups.items():
        fabric = FABRICS[(host, uplink)]
        if fabric:
            title = f"{fabric}: {INCAST}, {spaced(duration)} of arrivals"
        else:
            title = "Incast mix: web server 0.8 + periodic 16-to-1 incasts of 35 KB flows (0.2)"
        source = f"`sweeps/receiver/incast.toml`: {host} hosts, {uplink} uplinks"
        tables[(fabric, "incast")] = table(title, source, runs)
    return tables


def design_point(r):
    for key, name in DESIGN_POINTS:
        if not r[key]:
            return name
    return r["cc.algorithm"]


def ablation_tables(result):
    titles = {"webserver": "web server 0.8", "cache_follower": "cache follower 0.8"}
    groups = cases(result, lambda r: r["workload.0.cdf"], design_point)
    return [
        table(f"ToCC design points, {titles[cdf]}", f"`sweeps/receiver/ablation.toml`: `{cdf}`", runs)
        for cdf, runs in groups.items()
    ]


def long_tables(result):
    groups = cases(result, lambda r: (r["seed"], r["workload.0.cdf"], r["workload.0.duration"]),
                   lambda r: r["cc.algorithm"])
    tables = []
    for (seed, cdf, duration), runs in sorted(groups.items(), key=lambda g: g[0][0]):
        title = f"Long run, seed {seed}: {short(cdf)}, 0.8 load, {spaced(duration)} of arrivals"
        tables.append(table(title, f"`sweeps/receiver/long.toml`: seed {seed}, `{cdf}`", runs))
    return tables


def flow_series(result):
    """Per-flow throughput samples of a run: {flow id: {time us: Gbps}}."""
    t = result.throughput
    flows = t[t["label"].str.startswith("flow ")]
    series = {}
    for label, time_ns, gbps in zip(flows["label"], flows["time_ns"], flows["gbps"]):
        series.setdefault(int(label[5:]), {})[time_ns / 1e3] = gbps
    return series


def plot(result, name, path):
    """Per-flow throughput over time, drawn by sluice.plot."""
    fig = sluice.plot.throughput(result, labels=[f"flow {i}" for i in sorted(flow_series(result))])
    fig.axes[0].set_title(f"{name}: per-flow throughput")
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def converge_section(result):
    runs = sorted((("tocc" if r["cc.algorithm"] == "tocc" else f"dcqcn-{r['cc.dcqcn.variant']}"), i)
                  for i, r in result.table.iterrows())
    lines = [
        "### Convergence: 8 flows of 6 MB into one 100 Gbps bottleneck",
        "",
        "Per-flow throughput in 20 us samples between 100 us and the first flow's finish; fair share 12.5 Gbps.",
        "`sweeps/receiver/converge.toml`.",
        "",
        "| scheme | mean per-flow Gbps | min sample | max sample | Jain (means) | max buffer MB | all done us |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, i in runs:
        run = result.run(i)
        series = flow_series(run)
        first_finish = run.fct["finish_ns"].min() / 1e3
        means, samples = [], []
        for pts in series.values():
            vals = [v for t, v in sorted(pts.items()) if 100 <= t <= first_finish]
            samples += vals
            means.append(sum(vals) / max(len(vals), 1))
        jain = sum(means) ** 2 / (len(means) * sum(m * m for m in means)) if means else 0
        s = run.summary
        lines.append(
            f"| {name} | {sum(means) / max(len(means), 1):.2f} | {min(samples):.2f} | {max(samples):.2f} | "
            f"{jain:.4f} | {s['totals']['max_switch_buffer']['bytes'] / 1e6:.2f} | {s['run']['sim_time_ns'] / 1e3:.0f} |"
        )
        plot(run, name, os.path.join(DOCS, "img", f"converge-{name}.svg"))
    lines.append("")
    lines += [f"![{name}](img/converge-{name}.svg)" for name, _ in runs]
    return "\n".join(lines) + "\n"


def fairness_row(run):
    """Jain's index over the flows active in each 20 us sample (two or more), and each flow's CoV."""
    series = flow_series(run)
    span = {int(f): (a / 1e3, b / 1e3) for f, a, b in zip(run.fct["id"], run.fct["start_ns"], run.fct["finish_ns"])}
    times = sorted({t for pts in series.values() for t in pts})
    jains, shared = [], {i: [] for i in series}
    for t in times:
        active = [i for i, (a, b) in span.items() if a <= t - 20 and b >= t]
        rates = [series[i].get(t, 0.0) for i in active]
        if len(active) < 2 or sum(rates) == 0:
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
    return (f"{sum(jains) / max(len(jains), 1):.3f} | {min(jains, default=0):.3f} | "
            f"{sum(covs) / max(len(covs), 1):.3f} | {done:.0f}")


def fairness_section(result):
    runs = sorted((r["cc.algorithm"], i) for i, r in result.table.iterrows())
    lines = [
        "### Fairness: 8 equal flows entering one 100 Gbps bottleneck 100 us apart",
        "",
        "Per 20 us sample: Jain's index over the flows active during the whole sample (two or more); per",
        "flow: the coefficient of variation of its samples while it shares the link. `sweeps/receiver/fairness.toml`.",
        "",
        "| scheme | mean Jain | min Jain | mean per-flow CoV | last flow done us |",
        "|---|---|---|---|---|",
    ]
    for name, i in runs:
        run = result.run(i)
        lines.append(f"| {name} | {fairness_row(run)} |")
        plot(run, name, os.path.join(DOCS, "img", f"fairness-{name}.svg"))
    lines.append("")
    lines += [f"![{name}](img/fairness-{name}.svg)" for name, _ in runs]
    return "\n".join(lines) + "\n"


def document(results):
    """The tables document from the sweeps' results ({sweep: SweepResult}; missing sweeps are left out)."""
    by_case = {}
    if "workloads" in results:
        by_case.update(workload_tables(results["workloads"]))
    if "incast" in results:
        by_case.update(incast_tables(results["incast"]))
    parts = [
        "# Receiver-driven study: generated tables",
        "",
        "Generated by `python3 scripts/receiver_study.py` from the sweeps `sweeps/receiver/*.toml`; see",
        "[receiver-driven.md](receiver-driven.md) for the setup and the findings. Slowdown = FCT / ideal",
        "FCT (HPCC artifact definition); data drops = payload bytes dropped / payload bytes sent; token drops =",
        "tokens dropped by switch limiters / tokens issued; wasted tokens = tokens that reached a sender with",
        "nothing left to send or expired there (share of tokens issued); trimmed = data packets trimmed to headers",
        "(NDP; a packet can be trimmed again when resent). Every figure is from one run with seed 1, except",
        "the long case's second seed.",
        "",
    ]
    order = list(WORKLOADS) + ["incast"]
    parts += [by_case[(None, w)] for w in order if (None, w) in by_case]
    if "ablation" in results:
        parts += ablation_tables(results["ablation"])
    for fabric in [f for f in FABRICS.values() if f]:
        parts += [by_case[(fabric, w)] for w in order if (fabric, w) in by_case]
    if "long" in results:
        parts += long_tables(results["long"])
    if "converge" in results:
        parts.append(converge_section(results["converge"]))
    if "fairness" in results:
        parts.append(fairness_section(results["fairness"]))
    return "\n".join(parts)


def main():
    chosen = sys.argv[1:] or SWEEPS
    unknown = [name for name in chosen if name not in SWEEPS]
    if unknown:
        sys.exit(f"unknown sweep {unknown[0]!r}: choose from {', '.join(SWEEPS)}")
    for name in chosen:
        run_sweep(name)
        print(f"{name}: done", file=sys.stderr)
    results = {name: r for name in SWEEPS if (r := finished(name)) is not None}
    os.makedirs(os.path.join(DOCS, "img"), exist_ok=True)
    with open(os.path.join(DOCS, "receiver-driven-tables.md"), "w") as f:
        f.write(document(results))


if __name__ == "__main__":
    main()
