"""Shared paths and helpers of the sluice Python tests."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "scenarios" / "quickstart.toml"
# A small variant that still simulates long enough (about a second) to overlap with other threads.
LONGER = {"workload.0.duration": "5ms"}
CLI = Path(os.environ.get("SLUICE_CLI", REPO / "target" / "ci" / "sluice"))


@pytest.fixture
def cli():
    """Runs the sluice binary (target/ci/sluice, or $SLUICE_CLI); skips when it has not been built."""
    if not CLI.is_file():
        pytest.skip(f"{CLI} is missing: build it with `cargo build --profile ci -p sluice`")

    def run(*args):
        return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, check=False)

    return run
