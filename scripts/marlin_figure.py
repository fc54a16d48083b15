#!/usr/bin/env python3
"""Marlin's CC correctness test (docs/faults.md) through the sluice Python package: runs
scenarios/faults/marlin_dctcp.toml and draws the flow's cwnd and alpha over time with sluice.plot.trace,
with the injected faults marked, as docs/img/marlin-dctcp-cwnd.svg and docs/img/marlin-dctcp-alpha.svg.

Usage (from the repository root, with the package installed: pip install ./python matplotlib):

    python3 scripts/marlin_figure.py
"""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import sluice  # noqa: E402
import sluice.plot  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMG = os.path.join(ROOT, "docs", "img")
plt.rcParams["svg.hashsalt"] = "sluice"  # the same SVG for the same data


def cut_times(trace, variable, rises=False):
    """Times (us) at which `variable` falls (or rises) between two consecutive trace rows."""
    rows = trace[trace["variable"] == variable]
    values, times = rows["value"].tolist(), (rows["time_ns"] / 1e3).tolist()
    return [t for t, a, b in zip(times[1:], values, values[1:]) if (b > a if rises else b < a)]


def main():
    result = sluice.run(os.path.join(ROOT, "scenarios", "faults", "marlin_dctcp.toml"))
    cuts = cut_times(result.trace, "cwnd")
    for variable in ("cwnd", "alpha"):
        fig = sluice.plot.trace(result, flow=0, variable=variable)
        ax = fig.axes[0]
        for label, at in zip("ABC", cuts):
            ax.axvline(at, color="grey", linestyle=":", linewidth=1)
            ax.annotate(label, (at, 1.0), xycoords=("data", "axes fraction"), ha="left", va="top")
        ax.set_title(f"marlin_dctcp: {variable} of the DCTCP flow (faults at A, B, C)")
        fig.tight_layout()
        fig.savefig(os.path.join(IMG, f"marlin-dctcp-{variable}.svg"), metadata={"Date": None})
        plt.close(fig)
    print("cwnd cuts at (us):", ", ".join(f"{t:.1f}" for t in cuts))
    print("alpha rises at (us):", ", ".join(f"{t:.1f}" for t in cut_times(result.trace, "alpha", rises=True)))


if __name__ == "__main__":
    main()
