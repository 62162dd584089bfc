#!/usr/bin/env bash
# Installs what bench/model/ needs beyond the build: Debian's python3-torch (1.13 on Debian 12, a CPU
# build) for the PyTorch peers, and transformers beside it in .venv-peer for bench_decode.py.
# Idempotent. The test suite does not need them.
set -euo pipefail
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "bench/model setup: torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') present"
else
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq python3-torch
fi

# bench_decode.py's peer: transformers' generate() on that torch, in a virtualenv that sees Debian's
# torch and numpy (4.44.2: a release that still supports torch 1.13 and has Llama's GQA and llama3 RoPE).
root="$(cd "$(dirname "$0")/../.." && pwd)"
if ! "$root/.venv-peer/bin/python" -c "import transformers" 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$root/.venv-peer"
  "$root/.venv-peer/bin/pip" install -q --disable-pip-version-check transformers==4.44.2 huggingface-hub==0.24.7 \
    safetensors==0.4.5 tokenizers==0.19.1 regex==2024.7.24 tqdm==4.66.5 PyYAML==6.0.2 filelock==4.3.1 fsspec==2026.9.0
fi
echo "bench/model setup: $("$root/.venv-peer/bin/python" -c 'import transformers; print("transformers", transformers.__version__)') in $root/.venv-peer"
