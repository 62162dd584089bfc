#!/usr/bin/env bash
# zerotrain checkpoint info and zerotrain export through the real binary: exit codes, the report's
# facts, both export formats, and a damaged rank file reported with its offset (exit 2).
# Usage: checkpoint_cli_test.sh ZEROTRAIN CKPT_DRIVER
set -euo pipefail
zt=$1 driver=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$driver" "$work/c" 2 > /dev/null

"$zt" checkpoint info "$work/c" > "$work/info.txt" || fail "info exited $?: $(cat "$work/info.txt")"
for want in "checkpoint $work/c/slot2 (named by $work/c/latest)" "world size 2, ZeRO stage 2" "step 2 (2 applied, 0 skipped)" \
            "master 1.9 MiB, exp_avg 1.9 MiB, exp_avg_sq 1.9 MiB" "can be loaded as: any world size" \
            "complete tags in $work/c: slot1 slot2" "every rank file matches the manifest"; do
  grep -qF "$want" "$work/info.txt" || fail "info lacks '$want':"$'\n'"$(cat "$work/info.txt")"
done

"$zt" export --checkpoint "$work/c" --out "$work/hf" --format hf > "$work/e1.txt" || fail "export hf: $(cat "$work/e1.txt")"
[ -s "$work/hf/model.safetensors" ] && [ -s "$work/hf/config.json" ] || fail "export hf wrote no files"
grep -q '"model_type": "gpt2"' "$work/hf/config.json" || fail "config.json lacks model_type"
"$zt" export --checkpoint "$work/c" --tag slot1 --out "$work/w.safetensors" --dtype bf16 > "$work/e2.txt" ||
  fail "export bf16: $(cat "$work/e2.txt")"
grep -q "52 tensors, 499488 parameters, bf16" "$work/e2.txt" || fail "export bf16 said: $(cat "$work/e2.txt")"

printf 'x' | dd of="$work/c/slot2/rank00001.safetensors" bs=1 seek=5000 conv=notrunc 2> /dev/null
set +e
"$zt" checkpoint info "$work/c" > "$work/bad.txt" 2>&1
rc=$?
"$zt" export --checkpoint "$work/none" --out "$work/x.safetensors" > "$work/missing.txt" 2>&1
rc2=$?
set -e
[ $rc -eq 2 ] || fail "info on a damaged file exited $rc"
grep -q "rank00001.safetensors: block 0 of tensor" "$work/bad.txt" || fail "no block error: $(cat "$work/bad.txt")"
grep -q "CHECKSUM MISMATCH" "$work/bad.txt" || fail "no mismatch line"
[ $rc2 -eq 2 ] || fail "export of a missing checkpoint exited $rc2"
grep -q "the checkpoint directory does not exist" "$work/missing.txt" || fail "$(cat "$work/missing.txt")"
echo "checkpoint CLI: info, export hf, export bf16, damaged file, missing directory: ok"
