#!/usr/bin/env bash
# The project's test command: formatting, lints and docs, the simulator's build on a bare toolchain, then
# every test of the workspace (the kernel datapath's and the simulator's property tests included), the
# profile-guided build against the plain one, and a bounded fuzzing run of every parser. Tests build with
# the `ci` profile (release optimisation without fat LTO); the binary users run keeps the release profile.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the stable Rust toolchain (rustup) first" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
# The kernel datapath's BPF side needs clang, bpftool and libbpf headers to build; as root (CI) install
# what is missing, otherwise say what to install.
if [ "$(id -u)" -eq 0 ]; then
  ./scripts/setup.sh
else
  ./scripts/setup.sh || echo "continuing: the kernel datapath's build fails without the packages above" >&2
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features --profile ci -- -D warnings
# The default build of the binary is the simulator alone.
cargo clippy -p sluice --all-targets --profile ci -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --profile ci --quiet
./scripts/check-bare-build.sh
# CI=true (set by CI) makes the kernel tests fail instead of skipping where they cannot run.
cargo test --workspace --all-features --profile ci
# The profile-guided build (scripts/build-pgo.sh) builds and simulates exactly what the plain build does.
./scripts/check-pgo-build.sh
# The Python package (python/): built into target/python-venv and tested with pytest.
./scripts/test-python.sh
# Coverage-guided fuzzing of every parser, a bounded run of each target (FUZZ_SECONDS, default 60).
./scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
