#!/usr/bin/env bash
# Checkpoints over real MPI ranks: saved at world 2 (stage 1), loaded at worlds 3 (stage 3),
# 4 (stage 0) and 1 (stage 2), each a separate mpirun job, every element checked by the driver.
# Usage: mpi_reshard_test.sh MPIEXEC "MPI FLAGS" CKPT_MPI_DRIVER
set -euo pipefail
mpiexec=$1 mpi_flags=$2 driver=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # np mode stage
  # shellcheck disable=SC2086
  "$mpiexec" $mpi_flags -np "$1" "$driver" "$2" "$work/c" "$3" 17 > "$work/log" 2>&1 ||
    { echo "FAIL: np $1 $2 stage $3:"; cat "$work/log"; exit 1; }
  cat "$work/log"
}
run 2 save 1
run 3 load 3
run 4 load 0
run 1 load 2
echo "mpi checkpoint reshard 2 -> 3, 4, 1: ok"
# Tags that differ between ranks with tag_validation "Fail": every rank throws the agreed error
# (exit 2 from each), nothing is saved.
set +e
# shellcheck disable=SC2086
"$mpiexec" $mpi_flags -np 3 "$driver" tagfail "$work/t" 1 17 > "$work/log" 2>&1
rc=$?
set -e
agreed=$(grep -c ": agreed: .*the checkpoint tag is not the same on every rank" "$work/log" || true)
[ "$rc" = 2 ] && [ "$agreed" = 3 ] || { echo "FAIL: tagfail: exit $rc, $agreed of 3 ranks agreed:"; cat "$work/log"; exit 1; }
[ ! -e "$work/t/tag_of_rank0" ] || { echo "FAIL: tagfail saved a tag"; exit 1; }
echo "mpi checkpoint tag_validation Fail: every rank exits 2: ok"
