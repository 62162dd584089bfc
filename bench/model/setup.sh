#!/usr/bin/env bash
# Installs what bench/model/ needs beyond the build: Debian's python3-torch (1.13 on Debian 12, a CPU
# build) for the PyTorch peer. Idempotent. The test suite does not need it.
set -euo pipefail
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "bench/model setup: torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') present"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq python3-torch
