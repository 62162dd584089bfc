#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, checks every shipped config (the
# plans), then trains the `small` model on the built-in data with the stage-2 config on 2 CPU ranks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
zt="${ZT_BUILD_DIR:-$root/build}/runtime/cli/zerotrain"
# The shipped configs write "auto" for everything these flags cover (configs/README.md).
flags=(--model small --micro-batch 4 --grad-accum 1 --lr 3e-3 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95
       --adam-eps 1e-8 --max-grad-norm 1.0 --warmup-steps 10 --backend cpu)  # CPU ranks also on a GPU machine
for cfg in "$root"/configs/*.json; do
  echo "== zerotrain check --config ${cfg#$root/}"
  "$zt" check --config "$cfg" --world-size 2 "${flags[@]}" --steps 150 | tail -n 3
done
mpi=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
echo "== ${mpi[*]} zerotrain --config configs/stage2.json ${flags[*]} --steps 150"
OMPI_MCA_mpi_yield_when_idle=1 "${mpi[@]}" "$zt" --config "$root/configs/stage2.json" "${flags[@]}" --steps 150 \
  --eval-every 50 --metrics "${ZT_BUILD_DIR:-$root/build}/default_run_metrics.jsonl"
