#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser a user or a peer feeds sluice (crates/sluice-fuzz), on stable
# Rust: builds the libFuzzer targets with coverage instrumentation, then runs each for SECONDS (default
# 60). Exits non-zero when a target crashes, runs out of memory or hangs; the input is saved under
# target/fuzz/artifacts/<target>/. Copy it into crates/sluice-fuzz/regressions/<target>/ with the fix,
# so that `cargo test -p sluice-fuzz` replays it from then on.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (targets: scenario flowlist topology cdf codec wire udp agent program control)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(scenario flowlist topology cdf codec wire udp agent program control)
fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  echo "fuzz.sh: SECONDS must be a positive whole number, got '$seconds'" >&2
  exit 2
fi
if ! command -v c++ >/dev/null 2>&1; then
  echo "fuzz.sh: libFuzzer is built from C++ source: install a C++ compiler (g++)" >&2
  exit 1
fi

# The flags cargo-fuzz passes, less the sanitizer (nightly only): 8-bit edge counters, the PC table and
# comparison tracing that libFuzzer's coverage needs. An explicit --target keeps them away from build
# scripts and proc macros, which are not linked with libFuzzer.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
# The release profile without fat LTO (slow to link, no use here), with the checks that turn silent
# overflows into findings.
export CARGO_PROFILE_RELEASE_LTO=false
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
export CARGO_PROFILE_RELEASE_DEBUG=0
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
host=$(rustc -vV | sed -n 's/^host: //p')
target_dir=target/fuzz

cargo build --release -p sluice-fuzz --features libfuzzer --bins --target "$host" --target-dir "$target_dir"

failed=()
for name in "${targets[@]}"; do
  binary="$target_dir/$host/release/fuzz_$name"
  seeds=crates/sluice-fuzz/corpus/$name
  if [ ! -x "$binary" ] || [ ! -d "$seeds" ]; then
    echo "fuzz.sh: unknown target '$name'" >&2
    exit 2
  fi
  # New inputs go to a working corpus under target/, so the committed seeds stay as they are.
  work=$target_dir/corpus/$name
  artifacts=$target_dir/artifacts/$name
  mkdir -p "$work" "$artifacts"
  options=()
  if [ -f crates/sluice-fuzz/dict/$name.dict ]; then
    options+=(-dict=crates/sluice-fuzz/dict/$name.dict)
  fi
  dirs=("$work" "$seeds")
  if [ -d crates/sluice-fuzz/regressions/$name ]; then
    dirs+=(crates/sluice-fuzz/regressions/$name)
  fi
  echo "== fuzz $name for ${seconds}s"
  if ! "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" ${options[@]+"${options[@]}"} "${dirs[@]}" 2>"$target_dir/$name.log"; then
    tail -n 40 "$target_dir/$name.log" >&2
    echo "fuzz.sh: target $name failed; the input is in $artifacts/" >&2
    failed+=("$name")
  else
    grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added)' "$target_dir/$name.log" || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets ran ${seconds}s each without a failure"
