"""Plots of sluice results (matplotlib, imported when a plot is drawn: the rest of sluice works without it).

Every function returns the matplotlib Figure it drew. Functions that compare runs take ``results``: one
Result, a list of them (labelled by their scenario names) or a dict of label to Result.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from ._result import Result

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Results = Union[Result, Sequence[Result], Mapping[str, Result]]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("sluice.plot needs matplotlib: pip install matplotlib") from e
    return plt


def _labelled(results: Results) -> List[Tuple[str, Result]]:
    if isinstance(results, Result):
        return [(results.name, results)]
    if isinstance(results, Mapping):
        return [(str(label), r) for label, r in results.items()]
    return [(r.name, r) for r in results]


def _finished(result: Result) -> pd.DataFrame:
    """Flows with a slowdown: finished flows of a size (long-lived flows have none)."""
    return result.fct[result.fct["slowdown"].notna()]


def slowdown_vs_size(results: Results, groups: int = 20) -> "Figure":
    """FCT slowdown against flow size, as in the HPCC and Homa papers.

    Each run's finished flows are sorted by size and split into ``groups`` groups of equal count. The x
    axis is the flow-size percentile at each group's upper boundary, labelled with the flow size there (of
    the first run); the y axes (log) show the p50 (left) and p99 (right) slowdown of each group.
    """
    if groups < 1:
        raise ValueError(f"groups must be at least 1 (got {groups})")
    plt = _pyplot()
    fig, (p50_ax, p99_ax) = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    ticks: Optional[Tuple[np.ndarray, List[str]]] = None
    for label, result in _labelled(results):
        flows = _finished(result).sort_values("size_bytes", kind="stable")
        if flows.empty:
            continue
        parts = [part for part in np.array_split(np.arange(len(flows)), min(groups, len(flows))) if len(part)]
        x = np.array([100.0 * (part[-1] + 1) / len(flows) for part in parts])
        slowdown = flows["slowdown"].to_numpy()
        sizes = flows["size_bytes"].to_numpy()
        p50_ax.plot(x, [np.percentile(slowdown[part], 50) for part in parts], marker="o", label=label)
        p99_ax.plot(x, [np.percentile(slowdown[part], 99) for part in parts], marker="o", label=label)
        if ticks is None:
            ticks = (x, [_size_text(sizes[part[-1]]) for part in parts])
    for ax, title in ((p50_ax, "p50 slowdown"), (p99_ax, "p99 slowdown")):
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("flow size (percentile of flows)")
        ax.grid(True, which="both", alpha=0.3)
        if ticks is not None:
            ax.set_xticks(ticks[0])
            ax.set_xticklabels(ticks[1], rotation=60, fontsize="small")
    p50_ax.set_ylabel("FCT slowdown")
    p99_ax.legend()
    fig.tight_layout()
    return fig


def _size_text(size: float) -> str:
    for unit, scale in (("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g}{unit}"
    return f"{int(size)}B"


def slowdown_cdf(results: Results) -> "Figure":
    """The CDF of the FCT slowdown of each run's finished flows (log x)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, result in _labelled(results):
        slowdown = np.sort(_finished(result)["slowdown"].to_numpy())
        if len(slowdown):
            ax.step(slowdown, np.arange(1, len(slowdown) + 1) / len(slowdown), where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown")
    ax.set_ylabel("fraction of flows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def _series(table: pd.DataFrame, labels: Optional[Iterable[str]]) -> List[str]:
    present = list(dict.fromkeys(table["label"]))
    if labels is None:
        return present
    wanted = list(labels)
    missing = [label for label in wanted if label not in present]
    if missing:
        raise ValueError(f"no throughput series {missing}; the run has {present}")
    return wanted


def throughput(result: Result, labels: Optional[Iterable[str]] = None) -> "Figure":
    """Throughput over time (Gbps) of the series of throughput.csv: every flow and port sampled, or the
    ``labels`` given (``"flow 0"``, ``"tor0:p0"``). Flows count payload bytes, ports wire bytes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    table = result.throughput
    for label in _series(table, labels):
        rows = table[table["label"] == label]
        kind = rows["bytes_kind"].iloc[0] if len(rows) else ""
        ax.step(rows["time_ns"] / 1e3, rows["gbps"], where="pre", label=f"{label} ({kind})")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("throughput (Gbps)")
    ax.grid(True, alpha=0.3)
    if len(table):
        ax.legend()
    fig.tight_layout()
    return fig


def queue(result: Result, labels: Optional[Iterable[str]] = None) -> "Figure":
    """Queue occupancy (KB) over time of each sampled port (or the port ``labels`` given), from the
    ``queue_bytes`` column of throughput.csv.

    Results without that column (written before the simulator recorded it) give a figure that says so,
    with a RuntimeWarning, instead of an error.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    table = result.throughput
    if "queue_bytes" not in table.columns:
        message = "no queue samples: this run's throughput.csv has no queue_bytes column"
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, wrap=True)
        ax.set_axis_off()
        return fig
    ports = table[table["queue_bytes"].notna()]
    for label in _series(ports, labels):
        rows = ports[ports["label"] == label]
        ax.step(rows["time_ns"] / 1e3, rows["queue_bytes"].astype("float64") / 1e3, where="pre", label=label)
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("queue (KB)")
    ax.grid(True, alpha=0.3)
    if len(ports):
        ax.legend()
    fig.tight_layout()
    return fig


def trace(result: Result, flow: int, variable: str) -> "Figure":
    """One congestion-control variable (``cwnd``, ``rate_bps``, ``alpha``...) of one traced flow over time,
    from trace.csv. Raises ValueError naming what was traced when the flow or variable was not."""
    table = result.trace
    rows = table[(table["flow"] == flow) & (table["variable"] == variable)]
    if rows.empty:
        traced = table[table["flow"] == flow]["variable"].unique().tolist()
        flows = sorted(table["flow"].unique().tolist())
        detail = f"flow {flow} traces {traced}" if traced else f"the traced flows are {flows}"
        raise ValueError(f"no trace of {variable!r} for flow {flow}: {detail}")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.step(rows["time_ns"] / 1e3, rows["value"], where="post", label=f"flow {flow} {variable}")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel(variable)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig
