#!/usr/bin/env bash
# Checks the profile-guided build (scripts/build-pgo.sh): it builds, and its binary simulates exactly what
# the plain build does. Scenarios outside its training set (ws128, a token algorithm, a run on two
# threads) run with both binaries, and every file of their results must be byte-identical.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build-pgo.sh
cargo build --profile ci -p sluice --quiet
plain=target/ci/sluice
guided=target/pgo/sluice
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
compare() {
  local name=$1
  shift
  "$plain" run "$@" --out "$out/$name-plain" --quiet >/dev/null
  "$guided" run "$@" --out "$out/$name-guided" --quiet >/dev/null
  if ! diff -r "$out/$name-plain" "$out/$name-guided" >/dev/null; then
    echo "check-pgo-build: $name: the profile-guided build's results differ from the plain build's:" >&2
    diff -rq "$out/$name-plain" "$out/$name-guided" >&2 || true
    exit 1
  fi
  echo "check-pgo-build: $name: $(find "$out/$name-plain" -type f | wc -l) files identical"
}
compare ws128 scenarios/ws128.toml
compare homa scenarios/quickstart.toml --set cc.algorithm=homa
compare threads scenarios/scale/k16_websearch.toml --set workload.0.duration=20us --set simulation.threads=2
