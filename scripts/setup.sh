#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent: skips what is present.
set -euo pipefail
packages=(cmake g++ make ninja-build pkg-config
          libopenmpi-dev openmpi-bin nlohmann-json3-dev libgtest-dev libopenblas-dev libcli11-dev liburing-dev
          python3 openssh-client
          clang libclang-rt-14-dev libomp-dev)  # the config fuzzer: clang's libFuzzer and OpenMP runtimes
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
