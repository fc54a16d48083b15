#!/usr/bin/env bash
# The Python package's tests: builds the extension into a virtual environment at target/python-venv
# (created on the first run, reused after), with pytest, pandas, pyarrow, matplotlib and Ray, and runs
# python/tests. The extension builds with the `ci` profile, like the workspace's tests; the binary
# target/ci/sluice is built too, for the tests that compare the package's files with the command line's.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
venv=target/python-venv
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet pytest pandas pyarrow matplotlib ray
# --force-reinstall: the package's version does not change with its code. --no-deps: its one dependency,
# pandas, is installed above.
MATURIN_PEP517_ARGS="--profile ci" "$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps ./python
cargo build --profile ci -p sluice --quiet
"$venv/bin/python" -m pytest -q python/tests
