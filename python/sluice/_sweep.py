"""Configuration sweeps from Python: on local threads, or as Ray tasks on a Ray cluster.

Both backends run the same runs, write the same run directories and build the same table (the native
module's), so a sweep through Ray is byte-identical to a local one.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import pandas as pd

from . import _native
from ._result import Result, load

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(eq=False)
class SweepResult:
    """A finished sweep: ``table`` (sweep.csv as a DataFrame, one row per run), ``best`` (sweep.json's best
    configuration, or None), ``failed`` (``(run, error)`` pairs), ``info`` (sweep.json as a dict) and
    ``dir``. ``run(i)`` loads run ``i``'s results."""

    dir: Path
    table: pd.DataFrame
    info: Dict[str, Any]
    failed: List[Tuple[int, str]]

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        """The best configuration: ``run``, ``hash``, ``value``, ``settings`` and the ``runs`` of its seeds."""
        return self.info.get("best")

    def run(self, index: int) -> Result:
        """The results of run ``index`` (a row of ``table``)."""
        row = self.table.iloc[index]
        if row["status"] != "ok":
            raise ValueError(f"run {index} failed: {row['error']}")
        return load(self.dir / "runs" / row["hash"])

    def __repr__(self) -> str:
        return f"<sluice.SweepResult {self.info.get('name')!r}: {len(self.table)} runs, {len(self.failed)} failed, dir={str(self.dir)!r}>"


def sweep(
    path: PathLike,
    out: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    best: Optional[str] = None,
    subject_to: Sequence[str] = (),
    yes: bool = False,
    backend: str = "local",
    address: Optional[str] = None,
    progress: bool = False,
) -> SweepResult:
    """Runs the sweep file at ``path`` as ``sluice sweep`` does and returns its table.

    ``out`` is the output directory (default ``results/<name>``), ``jobs`` the runs at a time of the local
    backend (default: the cores), ``best`` and ``subject_to`` the picking rules (overriding the file's),
    ``yes`` allows more than 10,000 runs. ``backend="ray"`` runs each run as a Ray task on the cluster at
    ``address`` (``"auto"`` for the one this machine belongs to, ``"HOST:PORT"``, or None to start a local
    one); the table is byte-identical to a local sweep's. ``progress`` prints a line per finished run of a
    Ray sweep on stderr. Runs already complete in ``out`` are reused. Raises SweepError for a bad sweep
    file or rule (the command line's text).
    """
    plan = _native.SweepPlan(os.fspath(path), None if out is None else os.fspath(out), best, list(subject_to) or None, yes)
    if backend == "local":
        done = plan.run_local(jobs)
    elif backend == "ray":
        done = _run_on_ray(plan, address, progress)
    else:
        raise ValueError(f'backend must be "local" or "ray", not {backend!r}')
    return load_sweep(done["dir"], failed=[(int(i), str(e)) for i, e in done["failed"]])


def load_sweep(dir: PathLike, failed: Optional[List[Tuple[int, str]]] = None) -> SweepResult:
    """Reads a sweep directory (sweep.csv and sweep.json) into a SweepResult."""
    directory = Path(dir)
    table = pd.read_csv(directory / "sweep.csv", keep_default_na=True)
    info = json.loads((directory / "sweep.json").read_text())
    if failed is None:
        failed = [(int(r.run), str(r.error)) for r in table.itertuples() if r.status != "ok"]
    return SweepResult(dir=directory, table=table, info=info, failed=failed)


def _run_on_ray(plan: Any, address: Optional[str], progress: bool) -> Dict[str, Any]:
    """Runs every pending run of ``plan`` as a Ray task; the driver writes what the tasks return."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("backend='ray' needs Ray: pip install ray") from e
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    task = ray.remote(num_cpus=1)(_run_point)
    outcomes: List[Optional[Tuple[str, Optional[str], Optional[str]]]] = [None] * plan.runs
    claimed: Dict[str, int] = {}
    pending: Dict[Any, Tuple[int, str]] = {}
    for index in range(plan.runs):
        digest, text, error, complete = plan.prepare(index)
        if error is not None:
            outcomes[index] = ("failed", None, error)
        elif complete or digest in claimed:
            # Complete already, or the same scenario as an earlier run: reused.
            outcomes[index] = ("reused", digest, None)
        else:
            claimed[digest] = index
            ref = task.remote(text, plan.origin, os.fspath(plan.run_dir(digest)))
            pending[ref] = (index, digest)
    done = plan.runs - len(pending)
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            index, digest = pending.pop(ref)
            try:
                files = ray.get(ref)
                plan.write_run(digest, list(files.items()))
                outcomes[index] = ("ran", digest, None)
            except Exception as e:  # a failed run is recorded; the sweep goes on
                outcomes[index] = ("failed", digest, _task_error(e))
            done += 1
            if progress:
                status = outcomes[index][0]
                print(f"[{done}/{plan.runs}] run {index}: {status} runs/{digest}", file=sys.stderr)
    return plan.finish(outcomes)


def _run_point(text: str, origin: str, run_dir: str) -> Dict[str, bytes]:
    """The Ray task: runs one prepared run on a worker and returns its files."""
    from sluice import _native as native  # imported on the worker

    return dict(native.run_point(text, origin, run_dir))


def _task_error(error: Exception) -> str:
    """The message of the exception a Ray task raised, without Ray's wrapping."""
    cause = getattr(error, "cause", None)
    return str(cause if cause is not None else error).strip()
