"""``python -m sluice.ray_sweep SWEEP [options]``: a sweep run as Ray tasks, what ``sluice sweep --ray``
starts. It prints what the command line prints and exits 0, or 1 when runs failed."""

from __future__ import annotations

import argparse
import sys

from . import _native
from ._sweep import sweep


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="sluice sweep --ray", description=__doc__)
    parser.add_argument("sweep")
    parser.add_argument("--address", default="auto", help='the Ray cluster: "auto", HOST:PORT, or "local" to start one')
    parser.add_argument("--out")
    parser.add_argument("--best")
    parser.add_argument("--subject-to", action="append", default=[])
    parser.add_argument("--yes", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    address = None if args.address == "local" else args.address
    try:
        result = sweep(
            args.sweep,
            out=args.out,
            best=args.best,
            subject_to=args.subject_to,
            yes=args.yes,
            backend="ray",
            address=address,
            progress=not args.quiet,
        )
    except _native.SweepError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = result.table
    failed = len(result.failed)
    if not args.quiet:
        print(f"{len(table)} runs through Ray, {failed} failed")
        print(f"table: {result.dir / 'sweep.csv'}")
        if result.best is not None:
            print(f"best: {result.best['value']} at {result.best['settings']}")
            print(f"best scenario: {result.dir / 'best.toml'}")
    for index, error in result.failed[:5]:
        print(f"  run {index}: {error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
