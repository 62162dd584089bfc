#!/usr/bin/env bash
# Template-shaped configs through the real binary: an HF all-"auto" file trains with --bf16 and, the
# same file without it, in fp32; axolotl's ZeRO-3 zeros train at stage 3 on 2 ranks; `check` exits
# 0 / 2 / 3 (valid / invalid / valid but does not fit the target); the built-in config runs 1 step;
# `--backend auto` says what it chose. Usage: templates_cli_test.sh MPIEXEC "MPI FLAGS" ZEROTRAIN TEMPLATES_DIR
set -euo pipefail
mpiexec=$1 mpi_flags=$2 zt=$3 templates=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
# What an HF Trainer user passes (micro batch, accumulation, lr, warmup, steps), for the tiny model.
trainer=(--model tiny --micro-batch 2 --grad-accum 2 --lr 1e-3 --warmup-steps 2 --steps 2 --eval-every 0 --eval-batches 1)

train() {  # name np config args... -> metrics in $work/name.jsonl, log in $work/name.log
  local name=$1 np=$2 cfg=$3
  shift 3
  # shellcheck disable=SC2086
  if ! "$mpiexec" $mpi_flags -np "$np" "$zt" --config "$templates/$cfg" "$@" --metrics "$work/$name.jsonl" \
      > "$work/$name.log" 2>&1; then
    fail "$name did not train:"; cat "$work/$name.log"; return
  fi
  grep -q '"event":"end"' "$work/$name.jsonl" || fail "$name: no end record"
  echo "ok   $name trained ($(grep -c '"event":"step"' "$work/$name.jsonl") steps)"
}

train hf_bf16 1 hf_zero2_auto.json "${trainer[@]}" --bf16
grep -q '"precision":"bf16"' "$work/hf_bf16.jsonl" || fail "hf_bf16 did not train in bf16"
train hf_fp32 1 hf_zero2_auto.json "${trainer[@]}"
grep -q '"precision":"fp32"' "$work/hf_fp32.jsonl" || fail "hf_fp32 did not train in fp32"
train axolotl_zeros 2 axolotl_zero3_bf16_zeros.json "${trainer[@]}"
grep -q '"stage":3' "$work/axolotl_zeros.jsonl" || fail "axolotl_zeros did not run stage 3"
grep -q -- "--backend auto: cpu" "$work/hf_bf16.log" || fail "--backend auto did not say what it chose"

expect_rc() {  # want name args...
  local want=$1 name=$2 rc=0
  shift 2
  "$zt" "$@" > "$work/$name.out" 2>&1 || rc=$?
  if [[ $rc == "$want" ]]; then echo "ok   $name: exit $rc"; else fail "$name: exit $rc, want $want"; cat "$work/$name.out"; fi
}
expect_rc 0 check_valid check --config "$templates/hf_zero3_auto.json" --model small --world-size 8 --bf16 --micro-batch 4 \
  --warmup-steps 10 --steps 100
expect_rc 2 check_invalid check --config "$templates/llamafactory_autotp.json" --micro-batch 4
expect_rc 3 check_does_not_fit check --config "$templates/hf_zero3_auto.json" --model gpt2-1.5b --world-size 8 --bf16 \
  --micro-batch 4 --warmup-steps 10 --steps 100 --backend cuda --gpu-memory 2G --host-ram 1T
grep -q "valid, but does not fit the target" "$work/check_does_not_fit.out" || fail "no 'does not fit' verdict"
expect_rc 0 builtin_one_step --steps 1 --eval-batches 1 --model tiny
exit $status
