#!/usr/bin/env bash
# The monitors end to end through the binary at 2 ranks: csv_monitor and tensorboard files read back
# by real readers (Python's csv, the tensorboard package's EventAccumulator) hold every scalar of
# every step; the comms logger's summary and the flops profile are in the output; wandb and comet
# are refused, a disabled wandb block is accepted, and an unusable output_path stops the run at
# start-up with its key and leaves nothing behind.
# Usage: monitor_cli_test.sh MPIEXEC "MPI FLAGS" ZEROTRAIN TEST_PYTHON READER
set -uo pipefail
mpiexec=$1 mpi_flags=$2 zt=$3 py=$4 reader=$5
if [ ! -x "$py" ] || ! "$py" -c "import tensorboard" 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: $py with the tensorboard package is missing (scripts/setup.sh installs it)"; exit 1; fi
  echo "SKIP: no $py with the tensorboard package (run scripts/setup.sh)"; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--model tiny --vocab 256 --micro-batch 2 --grad-accum 1 --lr 3e-3 --weight-decay 0.1 --adam-beta1 0.9
       --adam-beta2 0.95 --adam-eps 1e-8 --max-grad-norm 1.0 --steps 5)
check_flags=()  # `check` takes the flags without the model overrides
for f in "${flags[@]}"; do [ "$f" = --vocab ] || [ "$f" = 256 ] || check_flags+=("$f"); done
status=0
fail() { echo "FAIL: $*"; status=1; }

cat > "$work/cfg.json" <<JSON
{
  "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto", "steps_per_print": 1,
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "zero_optimization": {"stage": 3, "overlap_comm": true},
  "tensorboard": {"enabled": true, "output_path": "$work/out", "job_name": "tb_job"},
  "csv_monitor": {"enabled": true, "output_path": "$work/out", "job_name": "csv_job"},
  "comms_logger": {"enabled": true, "verbose": true},
  "flops_profiler": {"enabled": true, "profile_step": 2, "output_file": "$work/flops.txt"},
  "wandb": {"enabled": false}
}
JSON
# shellcheck disable=SC2086
if ! "$mpiexec" $mpi_flags -np 2 "$zt" --config "$work/cfg.json" "${flags[@]}" --metrics "$work/m.jsonl" \
     --trace "$work/trace.json" > "$work/run.log" 2>&1; then
  cat "$work/run.log"; echo "FAIL: the monitored run did not finish"; exit 1
fi
"$py" "$reader" --metrics "$work/m.jsonl" --csv "$work/out/csv_job" --tensorboard "$work/out/tb_job" || status=1
grep -q "outputs: metrics -> .*csv_monitor -> .*tensorboard -> .*comms_logger.*flops profiler: step 3" "$work/run.log" \
  || fail "the header does not say where the outputs go"
grep -Eq "^step +3/5 \| loss .* tokens/s \| peak .* GiB \| ETA [0-9]" "$work/run.log" || fail "no readable progress line with the ETA"
grep -q "^Comm. Op            Message Size" "$work/run.log" || fail "no comms_logger summary table"
grep -q "comms | step 4 | comm op: all_gather" "$work/run.log" || fail "no verbose comms lines"
grep -q "Profile summary at step 3" "$work/flops.txt" || fail "no flops profile in flops_profiler.output_file"
grep -q "MFU = model FLOPs / step latency / peak" "$work/flops.txt" || fail "the profile has no MFU"
grep -q "% hidden behind compute" "$work/run.log" || fail "no hidden-communication share with --trace"
[ "$(ls "$work/out/tb_job" | grep -c tfevents)" = 1 ] || fail "expected one event file"

# wandb / comet: refused with the reason and the fix (exit 2), before anything runs.
for m in wandb comet; do
  sed "s/\"wandb\": {\"enabled\": false}/\"$m\": {\"enabled\": true, \"project\": \"p\"}/" "$work/cfg.json" > "$work/$m.json"
  out=$("$zt" check --config "$work/$m.json" --world-size 2 "${check_flags[@]}" 2>&1); rc=$?
  [ $rc = 2 ] || fail "$m: exit $rc, expected 2"
  echo "$out" | grep -q "error: $m = .*does not implement (the .* monitor, which sends metrics over the network; .*use \"tensorboard\" or \"csv_monitor\")" \
    || fail "$m: message: $out"
done
# An output_path that cannot be a folder: exit 2 naming the key, no event file, no metrics file.
touch "$work/a_file"
sed "s|\"output_path\": \"$work/out\", \"job_name\": \"tb_job\"|\"output_path\": \"$work/a_file\", \"job_name\": \"tb_job\"|" \
  "$work/cfg.json" > "$work/bad.json"
out=$("$zt" --config "$work/bad.json" "${flags[@]}" --metrics "$work/bad.jsonl" 2>&1); rc=$?
[ $rc = 2 ] || fail "bad output_path: exit $rc, expected 2"
echo "$out" | grep -q "error: tensorboard.output_path = \"$work/a_file\": cannot create the folder" || fail "bad output_path: $out"
[ ! -e "$work/bad.jsonl" ] || fail "the refused run left its metrics file behind"
[ $status = 0 ] && echo "monitor_cli_test: ok"
exit $status
