"""sluice: the datacenter congestion-control simulator, in-process.

    import sluice
    result = sluice.run("scenarios/quickstart.toml", set={"cc.algorithm": "dctcp"}, seed=2)
    result.fct          # pandas DataFrame of fct.csv
    result.summary      # summary.json as a dict

Scenarios load, resolve and run exactly as with the ``sluice`` command line (the same checks, the same
error texts, byte-identical output files). Runs release the GIL: threads run scenarios in parallel.
``sluice.plot`` draws results (it needs matplotlib).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _native
from ._native import RunError, ScenarioError, SweepError
from ._result import Result, load, result_of
from ._sweep import SweepResult, load_sweep, sweep

__all__ = [
    "run",
    "check",
    "load",
    "sweep",
    "load_sweep",
    "algorithms",
    "list_text",
    "Result",
    "SweepResult",
    "ScenarioError",
    "RunError",
    "SweepError",
]

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]
Sets = Union[Mapping[str, Any], Sequence[str], None]


def run(
    scenario: Scenario,
    set: Sets = None,
    seed: Optional[int] = None,
    out: Union[str, "os.PathLike[str]", None] = None,
    force: bool = False,
) -> Result:
    """Runs a scenario and returns its results.

    ``scenario`` is a scenario file's path, or a dict of the same structure as the TOML file (relative
    file names in it resolve against the current directory, or its ``base_dir`` key; without ``name`` the
    run is named "scenario"). ``set`` holds ``--set`` overrides: a dict (``{"cc.algorithm": "dctcp",
    "topology.k": 4}``) or a list of "key=value" strings. ``seed`` replaces the scenario's seed. ``out``
    writes the results directory exactly as ``sluice run --out`` does. ``force`` runs even when the
    estimated memory exceeds what the machine has available.

    Raises ScenarioError (a ValueError) for a bad scenario, with the command line's
    ``file:line: key: message`` text, and RunError when the run fails otherwise. Ctrl-C stops the
    simulation and raises KeyboardInterrupt (nothing is written then). A run that hit its time limit with
    flows unfinished warns (RuntimeWarning), as the command line does.
    """
    finished = _native.run(_scenario_arg(scenario), _sets_arg(set), seed, _path_arg(out), force)
    if finished["warning"]:
        warnings.warn(finished["warning"], RuntimeWarning, stacklevel=2)
    result = result_of(finished["files"], Path(out) if out is not None else None)
    result.wall_seconds = finished["wall_seconds"]
    return result


def check(scenario: Scenario, set: Sets = None, seed: Optional[int] = None) -> str:
    """Validates a scenario as ``sluice check`` does and returns the resolved scenario's TOML text (every
    default filled in). Arguments as for ``run``; raises ScenarioError."""
    return _native.check(_scenario_arg(scenario), _sets_arg(set), seed)


def algorithms() -> List[str]:
    """The congestion-control algorithms a scenario may name in ``cc.algorithm``."""
    return list(_native.algorithms())


def list_text() -> str:
    """The text of ``sluice list``: algorithms, workload generators, flow-size distributions and topology
    kinds, each with a description."""
    return _native.list_text()


def _scenario_arg(scenario: Scenario) -> Any:
    if isinstance(scenario, Mapping) and not isinstance(scenario, dict):
        return dict(scenario)
    return scenario


def _sets_arg(sets: Sets) -> Union[Dict[str, Any], List[str], None]:
    if sets is None:
        return None
    if isinstance(sets, Mapping):
        return dict(sets)
    if isinstance(sets, str):
        raise TypeError('set takes a dict or a list of "key=value" strings, not a single string')
    return list(sets)


def _path_arg(path: Union[str, "os.PathLike[str]", None]) -> Optional[str]:
    return None if path is None else os.fspath(path)
