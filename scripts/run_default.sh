#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, checks every shipped config (the
# plans), then trains the `small` model on the built-in data with the stage-2 config on 2 CPU ranks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
zt="${ZT_BUILD_DIR:-$root/build}/runtime/cli/zerotrain"
# The shipped configs carry their numbers; the HF templates under configs/hf/ take them from the
# flags an HF Trainer user passes (configs/README.md).
hf_flags=(--micro-batch 4 --grad-accum 1 --lr 3e-3 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95
          --adam-eps 1e-8 --max-grad-norm 1.0 --warmup-steps 10 --bf16)
for cfg in "$root"/configs/*.json "$root"/configs/hf/*.json; do
  extra=()
  [[ "$cfg" == */hf/* ]] && extra=("${hf_flags[@]}")
  echo "== zerotrain check --config ${cfg#$root/} --world-size 2 ${extra[*]}"
  "$zt" check --config "$cfg" --world-size 2 --model small "${extra[@]}" | tail -n 3
done
mpi=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
# --backend cpu: CPU ranks also on a GPU machine.
echo "== ${mpi[*]} zerotrain --config configs/stage2.json --backend cpu --steps 150"
OMPI_MCA_mpi_yield_when_idle=1 "${mpi[@]}" "$zt" --config "$root/configs/stage2.json" --backend cpu --steps 150 \
  --eval-every 50 --metrics "${ZT_BUILD_DIR:-$root/build}/default_run_metrics.jsonl"
