#!/usr/bin/env bash
# Builds the simulator with profile-guided optimisation (PGO) into target/pgo/sluice: an instrumented
# build runs a training set of scenarios, LLVM merges the counts, and the release build is made again
# with them, so that the compiler lays out and inlines the event loop by how often each branch is taken.
# The simulated results are the same as the plain release build's (no optimisation changes floating-point
# semantics); only the speed differs (BENCHMARKS.md, "A build guided by a profile").
#
# The training set is deliberately not the benchmarks (ws128, fat320, the scale set): it is the quickstart
# under several algorithms, leafspine160 and the incast, so that the benchmarks measure a build trained
# on other runs.
#
# Usage (from anywhere): scripts/build-pgo.sh, then target/pgo/sluice run SCENARIO. It needs LLVM's
# profdata tool of the toolchain's own LLVM version, which rustup installs (`rustup component add
# llvm-tools`); the script does that if the tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/target/pgo
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
  rustup component add llvm-tools
fi
if [ ! -x "$profdata" ]; then
  echo "build-pgo: $profdata not found; install it with: rustup component add llvm-tools" >&2
  exit 1
fi
rm -rf "$dir/profiles" "$dir/train"
mkdir -p "$dir/profiles" "$dir/train"

echo "build-pgo: 1/3 instrumented build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$dir/profiles" \
  cargo build --release --quiet -p sluice --target-dir "$dir/instrumented"
trained=$dir/instrumented/release/sluice

echo "build-pgo: 2/3 training runs" >&2
train() {
  local name=$1
  shift
  "$trained" run "$@" --out "$dir/train/$name" --quiet >/dev/null
}
for algorithm in dcqcn hpcc dctcp timely swift; do
  train "quickstart-$algorithm" scenarios/quickstart.toml --set cc.algorithm="$algorithm"
done
train quickstart-lossy scenarios/quickstart.toml --set switch.pfc.enabled=false --set cc.algorithm=dctcp
train leafspine160 scenarios/leafspine160.toml --set workload.0.duration=500us
train incast8 scenarios/incast8.toml

echo "build-pgo: 3/3 optimised build" >&2
"$profdata" merge -o "$dir/merged.profdata" "$dir/profiles"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$dir/merged.profdata" \
  cargo build --release --quiet -p sluice --target-dir "$dir/optimised"
cp "$dir/optimised/release/sluice" "$dir/sluice.tmp"
mv "$dir/sluice.tmp" "$dir/sluice"
echo "build-pgo: built $dir/sluice" >&2
