#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent: skips what is present.
set -euo pipefail
packages=(cmake g++ make ninja-build pkg-config
          libopenmpi-dev openmpi-bin nlohmann-json3-dev libgtest-dev libopenblas-dev libcli11-dev liburing-dev
          libxxhash-dev python3 python3-venv openssh-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi

# Test-only Python readers (the Hugging Face checkpoint tests write and check safetensors files
# with the reference library), pinned, in a venv beside the checkout; nothing else uses them.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-test"
pins=(numpy==2.2.6 safetensors==0.5.3)
if "$venv/bin/python3" -c 'import numpy, safetensors, sys; sys.exit(numpy.__version__ != "2.2.6" or safetensors.__version__ != "0.5.3")' 2>/dev/null; then
  echo "setup: test venv present ($venv)"
else
  echo "setup: creating the test venv $venv (${pins[*]})"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q "${pins[@]}"
fi
