#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the default job.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
zt="${ZT_BUILD_DIR:-$root/build}/runtime/cli/zerotrain"
for cfg in "$root"/configs/*.json; do
  echo "== zerotrain check --config ${cfg#$root/}"
  "$zt" check --config "$cfg" --world-size 2 --model small --micro-batch 4 --grad-accum 1 --lr 3e-4 \
    --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 --adam-eps 1e-8 --max-grad-norm 1.0 \
    --warmup-steps 10 --steps 100
done
