#!/usr/bin/env bash
# The project's test command: formatting, lints, then every test of the workspace.
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
  ./scripts/setup.sh || echo "continuing: the build fails without the packages above" >&2
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings
# The simulator alone builds without the kernel datapath (no clang, bpftool or BTF needed).
cargo clippy -p sluice --all-targets --release --no-default-features -- -D warnings
cargo test --workspace --release
