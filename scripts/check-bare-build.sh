#!/usr/bin/env bash
# Checks that the simulator alone (the default build of `sluice`) needs nothing beyond the Rust toolchain
# and a C linker: it builds with a PATH that holds only cargo, rustc and the linker's programs (cc, ld,
# as), so clang, pkg-config, bpftool and make cannot be found, and with pkg-config's search paths
# emptied; and no crate of its dependency tree is a `-sys` crate (none compiles or links a native library,
# so headers such as libelf's, which cannot be hidden on this machine, are never looked for).
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot="$(rustc --print sysroot)"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
ln -s "$sysroot/bin/cargo" "$sysroot/bin/rustc" "$bin/"
for tool in cc ld as; do
  ln -s "$(command -v "$tool")" "$bin/$tool"
done
native="$(cargo tree -p sluice -e normal,build --prefix none | grep -E -- '-sys v' | sort -u || true)"
if [ -n "$native" ]; then
  echo "check-bare-build: the simulator's build pulls in native libraries:" >&2
  echo "$native" >&2
  exit 1
fi
env -i HOME="$HOME" PATH="$bin" PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=/nonexistent \
  CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" CARGO_TARGET_DIR="$PWD/target/bare" \
  cargo build --locked -p sluice --quiet
echo "check-bare-build: the simulator builds with only the Rust toolchain and a C linker"
