"""Results of a run as DataFrames: parsing the output files, for `run` and `load` alike."""

from __future__ import annotations

import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Union

import pandas as pd

# Per file: the columns the simulator writes, and the type of each that is not a float. Times and derived
# values are floats (empty fields become NaN); counters are integers, nullable ("Int64", <NA> for empty
# fields) because queues.csv leaves the port-only counters of its switch rows empty.
_TEXT = "text"
_INT = "int"
_SCHEMAS: Dict[str, Dict[str, str]] = {
    "fct.csv": {
        "id": _INT,
        "src": _INT,
        "dst": _INT,
        "size_bytes": _INT,
        "start_ns": "",
        "finish_ns": "",
        "fct_ns": "",
        "ideal_fct_ns": "",
        "slowdown": "",
        "retransmitted_bytes": _INT,
        "group": _INT,
    },
    "queues.csv": {
        "kind": _TEXT,
        "node": _TEXT,
        "port": _INT,
        "peer": _TEXT,
        "rate_bps": _INT,
        "tx_bytes": _INT,
        "max_bytes": _INT,
        "avg_bytes": "",
        "drops": _INT,
        "dropped_bytes": _INT,
        "ecn_marks": _INT,
        "pfc_pauses_sent": _INT,
        "pfc_paused_ns": "",
        "data_drops": _INT,
        "control_drops": _INT,
    },
    "throughput.csv": {
        "label": _TEXT,
        "time_ns": "",
        "bytes": _INT,
        "gbps": "",
        "interval_ns": "",
        "bytes_kind": _TEXT,
        "queue_bytes": _INT,
    },
    "trace.csv": {"time_ns": "", "flow": _INT, "variable": _TEXT, "value": ""},
    "packets.csv": {
        "time_ns": "",
        "event": _TEXT,
        "port": _TEXT,
        "queue": _INT,
        "flow": _INT,
        "kind": _TEXT,
        "seq": _INT,
        "payload_bytes": _INT,
        "wire_bytes": _INT,
        "ecn": _TEXT,
        "queue_bytes": _INT,
    },
}

# Columns that not every version of the simulator writes: left out of empty frames.
_OPTIONAL_COLUMNS = {"throughput.csv": {"queue_bytes"}}


@dataclass(eq=False)
class Result:
    """One run's results: the output files of a results directory, parsed.

    ``fct``, ``queues``, ``throughput`` and ``trace`` are DataFrames of the CSV files of the same names
    (columns as README.md documents them; empty fields are NaN or <NA>), ``summary`` is summary.json as a
    dict, ``scenario`` the text of scenario.resolved.toml, ``dir`` the results directory (None for a run
    without ``out``), ``wall_seconds`` the simulation's wall time (None for loaded results), and
    ``packets`` the packet trace (packets.csv) of a run that asked for one (``[output.packet_trace]``),
    else None. Results compare by identity: compare their frames with pandas.
    """

    fct: pd.DataFrame
    queues: pd.DataFrame
    throughput: pd.DataFrame
    trace: pd.DataFrame
    summary: Dict[str, Any]
    scenario: str
    dir: Optional[Path] = None
    wall_seconds: Optional[float] = None
    packets: Optional[pd.DataFrame] = None

    @property
    def name(self) -> str:
        """The run's name (the scenario's ``name``), a default label for plots."""
        match = re.search(r'^name\s*=\s*"((?:[^"\\]|\\.)*)"', self.scenario, re.MULTILINE)
        return match.group(1) if match else (self.dir.name if self.dir else "run")

    def __repr__(self) -> str:
        where = f", dir={str(self.dir)!r}" if self.dir else ""
        return f"<sluice.Result {self.name!r}: {len(self.fct)} flows{where}>"


def frame(name: str, data: Optional[bytes]) -> pd.DataFrame:
    """The DataFrame of output file ``name`` from its bytes; None gives an empty frame with its columns."""
    schema = _SCHEMAS[name]
    if not data:
        optional = _OPTIONAL_COLUMNS.get(name, set())
        columns = {c: kind for c, kind in schema.items() if c not in optional}
        return pd.DataFrame({c: pd.Series(dtype=_dtype(kind)) for c, kind in columns.items()})
    text_columns = [c for c, kind in schema.items() if kind == _TEXT]
    table = pd.read_csv(
        io.BytesIO(data),
        dtype={c: str for c in text_columns},
        keep_default_na=False,
        na_values=[""],
    )
    for column in table.columns:
        kind = schema.get(column)
        if kind == _INT:
            table[column] = _integers(table[column])
        elif kind == "":
            table[column] = table[column].astype("float64")
    return table


def _dtype(kind: str) -> str:
    return {"text": "object", "int": "int64"}.get(kind, "float64")


def _integers(column: pd.Series) -> pd.Series:
    """int64, or nullable Int64 when some fields are empty."""
    if column.isna().any():
        return column.astype("Int64")
    return column.astype("int64")


def result_of(files: Mapping[str, Optional[bytes]], directory: Optional[Path]) -> Result:
    """A Result from the output files' bytes (a file left out gives an empty frame)."""
    summary = files.get("summary.json")
    scenario = files.get("scenario.resolved.toml")
    packets = files.get("packets.csv")
    return Result(
        fct=frame("fct.csv", files.get("fct.csv")),
        queues=frame("queues.csv", files.get("queues.csv")),
        throughput=frame("throughput.csv", files.get("throughput.csv")),
        trace=frame("trace.csv", files.get("trace.csv")),
        summary=json.loads(summary) if summary else {},
        scenario=scenario.decode("utf-8") if scenario else "",
        dir=directory,
        packets=frame("packets.csv", packets) if packets is not None else None,
    )


_FILES = ("fct.csv", "summary.json", "queues.csv", "throughput.csv", "trace.csv", "scenario.resolved.toml")


def load(dir: Union[str, "os.PathLike[str]"]) -> Result:
    """Reads a results directory (as ``sluice run`` writes it) into a Result.

    Missing files give empty DataFrames (``summary`` {} and ``scenario`` ""), but a directory with none
    of the output files raises FileNotFoundError.
    """
    directory = Path(dir)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such results directory")
    files = {name: _read(directory / name) for name in _FILES}
    if all(data is None for data in files.values()):
        raise FileNotFoundError(f"{directory}: not a results directory (none of {', '.join(_FILES)})")
    files["packets.csv"] = _read(directory / "packets.csv")
    return result_of(files, directory)


def _read(path: Path) -> Optional[bytes]:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
