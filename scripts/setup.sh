#!/usr/bin/env bash
# Installs the Debian packages sluice needs beyond Rust: clang/llvm compile the kernel datapath's BPF side,
# libbpf-dev and bpftool provide its headers and vmlinux.h, libelf/zlib/pkg-config/make build libbpf,
# iproute2, iperf3 and python3 (the many-connection sink) run the kernel test bed; ethtool (offloads off on
# the veths), iputils-ping and procps (sysctl) run the software switch's bed; g++ builds libFuzzer
# for scripts/fuzz.sh; chromium renders `sluice report`'s HTML in its test (scripts/check_report.py);
# python3-venv gives scripts/test-python.sh its virtual environment.
# Idempotent: installs only what is missing. Needs root.
set -euo pipefail
PACKAGES=(clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config make iproute2 iperf3 python3 python3-venv g++ chromium
  ethtool iputils-ping procps)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: run as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
