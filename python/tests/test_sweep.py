"""sluice.sweep: the same table as the command line's, picking, bad sweep files, and a sweep through a
local Ray head that is byte-identical to a local one (Ray is installed by scripts/test-python.sh; without
it the Ray tests skip, except under CI=true, where they fail)."""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import sluice
from conftest import QUICKSTART, REPO

FILES = ["sweep.csv", "sweep.parquet", "sweep.json", "best.toml"]


def write_sweep(tmp_path: Path, extra: str = "") -> Path:
    """Two algorithms by two seeds on a shortened quickstart, picking the lowest p99 slowdown."""
    text = (
        f'scenario = "{QUICKSTART}"\n'
        "seeds = 2\n"
        'best = "p99(slowdown)"\n'
        'subject_to = ["unfinished == 0"]\n'
        f"{extra}"
        '[set]\n"workload.0.duration" = "200us"\n'
        '[[axis]]\nkey = "cc.algorithm"\nvalues = ["dcqcn", "dctcp"]\n'
    )
    path = tmp_path / "small.toml"
    path.write_text(text)
    return path


def same_files(a: Path, b: Path) -> None:
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    runs_a = sorted(p.name for p in (a / "runs").iterdir())
    assert runs_a == sorted(p.name for p in (b / "runs").iterdir())
    for run in runs_a:
        for f in (a / "runs" / run).iterdir():
            assert f.read_bytes() == (b / "runs" / run / f.name).read_bytes(), f"runs/{run}/{f.name}"


def test_a_local_sweep_gives_the_command_lines_table(tmp_path, cli):
    path = write_sweep(tmp_path)
    result = sluice.sweep(path, out=tmp_path / "py", jobs=2)
    assert len(result.table) == 4 and not result.failed
    assert list(result.table.columns[:6]) == ["run", "hash", "status", "error", "cc.algorithm", "seed"]
    assert (result.table["status"] == "ok").all()
    best = result.best
    means = result.table.groupby("cc.algorithm")["slowdown_p99"].mean()
    assert best["settings"]["cc.algorithm"] == means.idxmin()
    assert best["value"] == pytest.approx(means.min())
    assert result.run(best["run"]).summary["overall"]["count"] > 0
    done = cli("sweep", path, "--out", tmp_path / "cli", "--quiet")
    assert done.returncode == 0, done.stderr
    same_files(tmp_path / "py", tmp_path / "cli")
    again = sluice.load_sweep(tmp_path / "cli")
    assert again.table.equals(result.table)


def test_picking_rules_from_python_override_the_file(tmp_path):
    path = write_sweep(tmp_path)
    result = sluice.sweep(path, out=tmp_path / "out", best="max goodput_gbps", subject_to=["drops == 0"])
    assert result.info["objective"] == {"expr": "max goodput_gbps", "goal": "max"}
    assert result.info["constraints"] == ["drops == 0"]
    means = result.table.groupby("cc.algorithm")["goodput_gbps"].mean()
    assert result.best["settings"]["cc.algorithm"] == means.idxmax()


def test_bad_sweeps_raise_sweep_error_with_the_located_text(tmp_path):
    path = write_sweep(tmp_path, extra='[[axis]]\nkey = "cc.params.nope"\nvalues = [1]\n')
    with pytest.raises(sluice.SweepError, match=r"small\.toml:5: \[\[axis\]\] cc\.params\.nope=1"):
        sluice.sweep(path, out=tmp_path / "out")
    with pytest.raises(sluice.SweepError, match="unknown metric `p98`"):
        sluice.sweep(write_sweep(tmp_path), out=tmp_path / "out", best="p98")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        sluice.sweep(write_sweep(tmp_path), out=tmp_path / "out", jobs=0)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="backend"):
        sluice.sweep(write_sweep(tmp_path), backend="dask")


def ray_or_skip():
    """Ray's module, or a skip (a failure under CI=true, where Ray is installed)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("Ray is not installed; scripts/test-python.sh installs it")
        pytest.skip("Ray is not installed (pip install ray)")
    ray_cli = Path(sys.executable).with_name("ray")
    return str(ray_cli) if ray_cli.exists() else shutil.which("ray")


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    """A local Ray head started with `ray start --head`, as a cluster's first node is, stopped after."""
    ray_cli = ray_or_skip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    temp = tmp_path_factory.mktemp("ray")
    start = [ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
             "--disable-usage-stats", "--object-store-memory=200000000", f"--temp-dir={temp}"]
    started = subprocess.run(start, capture_output=True, text=True, check=False)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_cli, "stop", "--force"], capture_output=True, check=False)


def test_a_ray_sweep_is_byte_identical_to_a_local_one(tmp_path, cli, ray_head):
    path = write_sweep(tmp_path)
    local = sluice.sweep(path, out=tmp_path / "local", jobs=2)
    env = dict(os.environ, SLUICE_PYTHON=sys.executable)
    done = subprocess.run(
        [str(REPO / "target" / "ci" / "sluice"), "sweep", str(path), "--ray", ray_head, "--out", str(tmp_path / "ray")],
        capture_output=True, text=True, env=env, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 runs through Ray, 0 failed" in done.stdout
    same_files(tmp_path / "local", tmp_path / "ray")
    # The Python API on the same cluster, resuming: every run is reused.
    again = sluice.sweep(path, out=tmp_path / "ray", backend="ray", address=ray_head)
    assert again.table.equals(local.table)
