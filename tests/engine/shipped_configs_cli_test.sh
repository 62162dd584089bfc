#!/usr/bin/env bash
# The shipped offload configs train on 2 CPU ranks through the real binary and end with the same
# parameters as the plain stage configs (offload moves state, never changes the math).
# Usage: offload_configs_cli_test.sh MPIEXEC "MPI FLAGS" ZEROTRAIN CONFIGS_DIR
set -euo pipefail
mpiexec=$1 mpi_flags=$2 zt=$3 configs=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--model tiny --vocab 256 --micro-batch 4 --grad-accum 1 --lr 3e-3 --weight-decay 0.1 --adam-beta1 0.9
       --adam-beta2 0.95 --adam-eps 1e-8 --max-grad-norm 1.0 --warmup-steps 10 --steps 6)

checksum() {  # config name -> the run's param_checksum
  # shellcheck disable=SC2086
  "$mpiexec" $mpi_flags -np 2 "$zt" --config "$configs/$1.json" "${flags[@]}" --metrics "$work/$1.jsonl" \
    > "$work/$1.log" 2>&1 || { echo "FAIL: $1 did not train:"; cat "$work/$1.log"; exit 1; }
  grep '"event":"end"' "$work/$1.jsonl" | sed 's/.*"param_checksum":"\([^"]*\)".*/\1/'
}

reference=$(checksum stage2)
[[ $reference == 0x* ]] || { echo "FAIL: no param_checksum from stage2.json"; exit 1; }
status=0
for cfg in stage3 offload_cpu offload_stage3_cpu offload_nvme; do
  got=$(checksum "$cfg")
  if [[ $got == "$reference" ]]; then
    echo "ok   $cfg: $got"
  else
    echo "FAIL $cfg: $got, stage2.json gave $reference"
    status=1
  fi
done
grep -q "host (rank 0, offload)" "$work/offload_stage3_cpu.log" || { echo "FAIL: no host memory line for offload"; status=1; }
exit $status
