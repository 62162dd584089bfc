#!/usr/bin/env bash
# The binary on corpora of many shards, at 2 ranks: a train split cut into 4 shards that share their
# boundary tokens trains bitwise like the same tokens in one shard (every window lies inside one
# shard), through --data DIR and through --data-train/--data-val globs, in uint16 and in uint32;
# resumed from its step-3 checkpoint it ends bitwise where the uninterrupted run ends; bad shards
# stop the run at start-up with exit 2 and the file named.
# Usage: data_cli_test.sh MPIEXEC "MPI FLAGS" ZEROTRAIN
set -uo pipefail
mpiexec=$1 mpi_flags=$2 zt=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

# T = 16: 4 shards of 5 windows each (81 tokens, the last one also the next shard's first).
python3 - "$work" <<'PY'
import os, random, struct, sys
work = sys.argv[1]
T, k, shards = 16, 5, 4
rng = random.Random(3)
train = [rng.randrange(500) for _ in range(shards * k * T + 1)]
val = [rng.randrange(500) for _ in range(6 * T + 1)]
def shard(path, tokens, wide=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    head = [20240801, 7, len(tokens)] if wide else [20240520, 1, len(tokens)]
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *(head + [0] * 253)))
        f.write(struct.pack(f"<{len(tokens)}{'I' if wide else 'H'}", *tokens))
shard(f"{work}/one/train.bin", train)
shard(f"{work}/one/val.bin", val)
for wide, d in ((False, "many"), (True, "wide")):
    for s in range(shards):
        shard(f"{work}/{d}/c_train_{s:06d}.bin", train[s * k * T:(s + 1) * k * T + 1], wide)
    shard(f"{work}/{d}/c_val_000000.bin", val, wide)
shard(f"{work}/mixed/c_train_000000.bin", train)
shard(f"{work}/mixed/c_train_000001.bin", train, True)
shard(f"{work}/mixed/c_val_000000.bin", val)
shard(f"{work}/empty/c_train_000000.bin", train)
shard(f"{work}/empty/c_train_000001.bin", [])
shard(f"{work}/empty/c_val_000000.bin", val)
PY
flags=(--model tiny --vocab 512 --seq-len 16 --micro-batch 2 --steps 6 --eval-every 3 --seed 5)
# shellcheck disable=SC2086
run() { "$mpiexec" $mpi_flags -np 2 "$zt" "${flags[@]}" "$@"; }
# The losses, validation losses and the final checksum: what must be bitwise equal.
numbers() { grep -E "^(step|eval|done)" "$1" | grep -oE "(val )?loss [0-9.]+|checksum 0x[0-9a-f]+"; }

run --data "$work/one" > "$work/one.log" 2>&1 || { cat "$work/one.log"; fail "one shard: the run failed"; }
numbers "$work/one.log" > "$work/one.num"
[ "$(grep -c checksum "$work/one.num")" = 1 ] || fail "no final checksum in the one-shard run"
for case in "many:--data $work/many" "glob:--data-train $work/many/c_train_*.bin --data-val $work/many/c_val_*.bin" \
            "wide:--data $work/wide"; do
  name=${case%%:*}
  set -f  # the globs go to zerotrain unexpanded
  # shellcheck disable=SC2086
  run ${case#*:} > "$work/$name.log" 2>&1 || { set +f; cat "$work/$name.log"; fail "$name: the run failed"; continue; }
  set +f
  numbers "$work/$name.log" | cmp -s - "$work/one.num" || { diff <(numbers "$work/$name.log") "$work/one.num"; fail "$name: not bitwise the one-shard run"; }
done
grep -qF "data: $work/many (4 shards, 324 tokens train / 97 tokens val, 16-bit)" "$work/many.log" \
  || fail "the header does not describe the shards: $(grep -i data "$work/many.log" | head -3)"

# Resume: steps 4-6 from the step-3 checkpoint end where the whole run ends.
run --data "$work/many" --save "$work/ck" --save-every 3 > "$work/save.log" 2>&1 || { cat "$work/save.log"; fail "save run"; }
run --data "$work/many" --load "$work/ck" --load-tag global_step3 > "$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "resume run"; }
[ "$(numbers "$work/resume.log" | tail -1)" = "$(tail -1 "$work/one.num")" ] \
  || fail "resumed: $(numbers "$work/resume.log" | tail -1), uninterrupted: $(tail -1 "$work/one.num")"

# Bad shards: exit 2 at start-up, naming the file.
check_bad() {  # name, expected message
  out=$(run --data "$work/$1" 2>&1); rc=$?
  [ $rc = 2 ] || fail "$1: exit $rc, expected 2"
  echo "$out" | grep -qF "$2" || fail "$1: no '$2' in: $out"
}
check_bad mixed "error: $work/mixed/c_train_000001.bin = 32-bit tokens: mixed token widths in the train shards"
check_bad empty "error: $work/empty/c_train_000001.bin = 0 tokens: empty token shard"
out=$(run --data-train "$work/none_*.bin" --data-val "$work/many/c_val_*.bin" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -qF "error: --data-train = $work/none_*.bin: the pattern matches no file" \
  || fail "a glob matching nothing: exit $rc: $out"
[ $status = 0 ] && echo "data_cli_test: ok"
exit $status
