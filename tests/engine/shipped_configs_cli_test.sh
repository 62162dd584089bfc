#!/usr/bin/env bash
# Every shipped config trains 3 steps on 2 CPU ranks through the real binary with no flag but
# --steps: configs/*.json as they are, the HF Trainer templates of configs/hf/ with --bf16 (they ask
# for "auto" precision) and --warmup-steps (their "auto" warmup is the Trainer's 0 otherwise, which
# DeepSpeed refuses). The fp32 stage and offload configs share every number, so they end with the
# same parameters (offload moves state, never changes the math); so do the templates, and a template
# given the Trainer flags for the concrete configs' numbers trains bitwise like them.
# Usage: shipped_configs_cli_test.sh MPIEXEC "MPI FLAGS" ZEROTRAIN CONFIGS_DIR
set -euo pipefail
mpiexec=$1 mpi_flags=$2 zt=$3 configs=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

train() {  # name config flags... -> the run's param_checksum on stdout, its log in $work/name.log
  local name=$1 cfg=$2
  shift 2
  # shellcheck disable=SC2086
  if ! "$mpiexec" $mpi_flags -np 2 "$zt" --config "$cfg" --steps 3 "$@" --metrics "$work/$name.jsonl" \
       > "$work/$name.log" 2>&1; then
    echo "FAIL: $name did not train:" >&2
    cat "$work/$name.log" >&2
    echo none
    return
  fi
  grep '"event":"end"' "$work/$name.jsonl" | sed 's/.*"param_checksum":"\([^"]*\)".*/\1/'
}

declare -A sum
for cfg in "$configs"/*.json; do
  name=$(basename "$cfg" .json)
  sum[$name]=$(train "$name" "$cfg")
  [[ ${sum[$name]} == 0x* ]] || { fail "$name: no param_checksum"; continue; }
  # A config that carries its numbers resolves nothing from defaults: no warning at all.
  if grep -q "warning" "$work/$name.log"; then fail "$name warned:"; grep warning "$work/$name.log"; fi
  grep -q "run: 3 steps (flag --steps)" "$work/$name.log" || fail "$name: the start-up echo does not state the run length"
  echo "ok   $name: ${sum[$name]}"
done
for name in stage0 stage1 stage2 stage3 offload_cpu offload_stage3_cpu offload_nvme bf16; do
  [[ ${sum[$name]:-} == "${sum[stage0]}" ]] || fail "$name: ${sum[$name]:-missing}, stage0.json gave ${sum[stage0]}"
done
# Parameters alone on NVMe (the optimizer in backend memory): the run's preflight checks the
# parameters' nvme_path (it once read the optimizer's, empty here, and refused every such run).
/usr/bin/python3 - "$configs/offload_nvme.json" "$work/param_nvme.json" "$work" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["zero_optimization"]["offload_optimizer"]
c["zero_optimization"]["offload_param"]["nvme_path"] = sys.argv[3]
json.dump(c, open(sys.argv[2], "w"))
PY
sum[param_nvme]=$(train param_nvme "$work/param_nvme.json")
[[ ${sum[param_nvme]} == "${sum[stage0]}" ]] || fail "offload_param nvme alone: ${sum[param_nvme]}, stage0.json gave ${sum[stage0]}"
# grad_accum.json has a 150-step WarmupDecayLR: a 3-step run says how far into it it got.
grep -q "run: 3 steps (flag --steps) of a 150-step schedule" "$work/grad_accum.log" || fail "grad_accum: no schedule length"
grep -q "schedule: step 3 of 150" "$work/grad_accum.log" || fail "grad_accum: the end does not say how to continue"

first=""
for cfg in "$configs"/hf/*.json; do
  name=hf_$(basename "$cfg" .json)
  sum[$name]=$(train "$name" "$cfg" --bf16 --warmup-steps 2)
  [[ ${sum[$name]} == 0x* ]] || { fail "$name: no param_checksum"; continue; }
  first=${first:-${sum[$name]}}
  [[ ${sum[$name]} == "$first" ]] || fail "$name: ${sum[$name]}, the first template gave $first"
  echo "ok   $name: ${sum[$name]}"
done
sum[hf_flags]=$(train hf_flags "$configs/hf/zero2.json" --bf16 --micro-batch 4 --grad-accum 1 --lr 3e-3 \
  --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 --adam-eps 1e-8 --max-grad-norm 1.0 --warmup-steps 10)
[[ ${sum[hf_flags]} == "${sum[stage2]}" ]] || fail "hf/zero2.json with the Trainer flags: ${sum[hf_flags]}, stage2.json ${sum[stage2]}"
[ $status = 0 ] && echo "shipped_configs_cli_test: ok"
exit $status
