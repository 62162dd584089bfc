#!/usr/bin/env bash
# One copy of each message: a config error, a warning and a clean start print the same number of
# lines at 1, 4 and 8 ranks, each line once; an error that only one rank has carries that rank.
# Usage: message_count_test.sh MPIEXEC "MPI FLAGS" ZEROTRAIN CONFIGS_DIR
set -uo pipefail
mpiexec=$1 mpi_flags=$2 zt=$3 configs=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

# A concrete config with one problem each: stage 5 (an error) beside an "auto" without its flag (a
# warning); only the warning.
python3 - "$configs/stage2.json" "$work" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["gradient_clipping"] = "auto"
json.dump(c, open(sys.argv[2] + "/warn.json", "w"))
c["zero_optimization"]["stage"] = 5
json.dump(c, open(sys.argv[2] + "/error.json", "w"))
PY

launch() {  # name np want_rc args... -> $work/name.np.log (zerotrain's lines only: mpirun -q)
  local name=$1 np=$2 want=$3
  shift 3
  # shellcheck disable=SC2086
  "$mpiexec" -q $mpi_flags -np "$np" "$zt" --model tiny --eval-batches 1 --eval-every 0 "$@" > "$work/$name.$np.log" 2>&1
  local rc=$?
  [ "$rc" = "$want" ] || { fail "$name at $np ranks exited $rc (want $want):"; cat "$work/$name.$np.log"; }
}

for case in "error 2 --config $work/error.json --steps 2" "warning 0 --config $work/warn.json --steps 2" \
            "clean 0 --config $configs/stage3.json --steps 2"; do
  read -r name want args <<< "$case"
  counts=()
  for np in 1 4 8; do
    # shellcheck disable=SC2086
    launch "$name" "$np" "$want" $args
    counts+=("$(wc -l < "$work/$name.$np.log")")
    dup=$(sort "$work/$name.$np.log" | uniq -d | grep -v '^$')
    [ -z "$dup" ] || fail "$name at $np ranks printed a line twice: $dup"
  done
  [ "${counts[0]}" = "${counts[1]}" ] && [ "${counts[1]}" = "${counts[2]}" ] ||
    { fail "$name: ${counts[*]} lines at 1, 4, 8 ranks"; cat "$work/$name.8.log"; }
  echo "ok   $name: ${counts[0]} lines at 1, 4 and 8 ranks"
done
grep -q '^error: zero_optimization.stage = 5' "$work/error.8.log" || fail "the error is not printed plain"
grep -q '^warning: gradient_clipping' "$work/warning.8.log" || fail "the warning is not printed plain"
[ "$(grep -c warning "$work/clean.8.log")" = 0 ] || fail "the clean start warned"

# One rank with a data folder that does not exist (MPMD): its error carries its rank, and every rank
# exits 2.
# shellcheck disable=SC2086
"$mpiexec" -q $mpi_flags -np 1 "$zt" --model tiny --config "$configs/stage2.json" --steps 2 : \
  -np 1 "$zt" --model tiny --config "$configs/stage2.json" --steps 2 --data "$work/missing" > "$work/one.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "one rank's error: exit $rc"
grep -q "^rank 1: error: .*missing" "$work/one.log" || { fail "one rank's error does not name rank 1:"; cat "$work/one.log"; }
[ "$(grep -c "missing" "$work/one.log")" = 1 ] || { fail "one rank's error printed more than once"; cat "$work/one.log"; }
[ $status = 0 ] && echo "message_count_test: ok"
exit $status
