#!/usr/bin/env bash
# The sanitizer job: a CPU-only build with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DZT_SANITIZE=ON) in build-asan/ (or $ZT_ASAN_DIR), then the unit and MPI tests in it. Any
# memory error or undefined behaviour aborts its test, and so does a leak in a unit test (below).
# Prints the build and test times. The build is optimised at -O1 (the level AddressSanitizer's
# own documentation recommends; -O3 under both sanitizers took twice as long to compile, for
# tests that run a few percent faster) with unity builds of the libraries (ZT_UNITY), which
# together cut the job's build (43 minutes at -O3 on the CI machine; 19 minutes here on 2 busy cores).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${ZT_ASAN_DIR:-$root/build-asan}"
"$root/scripts/setup.sh"
# ZT_SANITIZE_CMAKE_ARGS: more cmake arguments, space-separated (a compiler launcher, say).
extra=()
[ -n "${ZT_SANITIZE_CMAKE_ARGS:-}" ] && read -ra extra <<<"$ZT_SANITIZE_CMAKE_ARGS"
t0=$SECONDS
ZT_BUILD_DIR="$build" bash "$root/scripts/build.sh" -DZT_CUDA=OFF -DZT_SANITIZE=ON -DZT_BUILD_BENCH=OFF -DZT_UNITY=ON \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" "${extra[@]}"
t1=$SECONDS
# Two passes. The unit tests run with LeakSanitizer on: a leak fails its test. The MPI tests run
# with leak checking off: every process that starts MPI (those tests and the zerotrain binary
# under mpirun) ends with allocations of Open MPI's plugins, which MPI_Finalize unloads, so
# LeakSanitizer sees them in "<unknown module>" and no suppression can name them. Memory errors and
# undefined behaviour abort their test in both passes.
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
asan="abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0"
cd "$build"
status=0
ASAN_OPTIONS="$asan:detect_leaks=1" ctest --output-on-failure --timeout 900 -j "${ZT_TEST_JOBS:-2}" -L unit "$@" || status=$?
# The "long" tests (hundreds of training steps through the binary, to compare losses) are left out:
# the engine tests run the same code paths under the sanitizers in seconds.
ASAN_OPTIONS="$asan:detect_leaks=0" ctest --output-on-failure --timeout 900 -j "${ZT_TEST_JOBS:-2}" -L mpi -LE long "$@" || status=$?
t2=$SECONDS
echo "sanitize: build $((t1 - t0)) s, unit (with leak checking) + mpi tests $((t2 - t1)) s (ASan + UBSan)"
exit $status
