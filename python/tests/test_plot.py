"""sluice.plot draws every kind of plot into a Figure (Agg backend)."""

import warnings

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

import sluice  # noqa: E402
from sluice import plot  # noqa: E402
from conftest import QUICKSTART  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    return {
        "dcqcn": sluice.run(QUICKSTART),
        "dctcp": sluice.run(QUICKSTART, set={"cc.algorithm": "dctcp"}),
    }


def lines(fig):
    return sum(len(ax.get_lines()) for ax in fig.axes)


def test_slowdown_vs_size(runs):
    fig = plot.slowdown_vs_size(runs, groups=5)
    assert isinstance(fig, Figure)
    assert lines(fig) == 4, "p50 and p99 of each run"
    assert all(ax.get_yscale() == "log" for ax in fig.axes)
    assert len(fig.axes[0].get_xticks()) == 5
    assert isinstance(plot.slowdown_vs_size(runs["dcqcn"]), Figure)
    with pytest.raises(ValueError):
        plot.slowdown_vs_size(runs, groups=0)


def test_slowdown_cdf(runs):
    fig = plot.slowdown_cdf(list(runs.values()))
    assert isinstance(fig, Figure) and lines(fig) == 2


def test_throughput(runs):
    result = runs["dcqcn"]
    fig = plot.throughput(result)
    assert lines(fig) == result.throughput["label"].nunique()
    assert lines(plot.throughput(result, labels=["flow 0"])) == 1
    with pytest.raises(ValueError, match="no throughput series"):
        plot.throughput(result, labels=["flow 99"])


def test_queue_with_and_without_queue_samples(runs):
    result = runs["dcqcn"]
    if "queue_bytes" not in result.throughput.columns:
        with pytest.warns(RuntimeWarning, match="no queue_bytes column"):
            fig = plot.queue(result)
        assert isinstance(fig, Figure) and lines(fig) == 0
        result.throughput = result.throughput.assign(
            queue_bytes=result.throughput["bytes"].where(result.throughput["bytes_kind"] == "wire").astype("Int64")
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot.queue(result)
    ports = result.throughput.loc[result.throughput["queue_bytes"].notna(), "label"].nunique()
    assert ports > 0 and lines(fig) == ports


def test_trace(runs):
    result = runs["dcqcn"]
    fig = plot.trace(result, 0, "rate_bps")
    assert isinstance(fig, Figure) and lines(fig) == 1
    with pytest.raises(ValueError, match="flow 0 traces"):
        plot.trace(result, 0, "no_such_variable")
