#!/usr/bin/env bash
# Config fuzzing for CI: builds the libFuzzer target (tests/config/fuzz/, clang, ASan + UBSan) in
# build-fuzz/ (or $ZT_FUZZ_DIR) and runs it from the shipped configs until it has tried
# ZT_FUZZ_RUNS inputs (default 150000) or ZT_FUZZ_SECONDS have passed (default 300), then prints
# the count. A crash, a leak or a slow input (> 10 s) fails the job and prints the input.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${ZT_FUZZ_DIR:-$root/build-fuzz}"
runs="${ZT_FUZZ_RUNS:-150000}" secs="${ZT_FUZZ_SECONDS:-300}"
"$root/scripts/setup.sh"
t0=$SECONDS
generator=()
command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && generator=(-G Ninja)
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DZT_CUDA=OFF \
  -DZT_MPI=OFF -DZT_BUILD_BENCH=OFF -DZT_CONFIG_FUZZ=ON > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "${ZT_JOBS:-$(nproc)}" --target config_fuzz
t1=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" "$work/artifacts"
cp "$root"/configs/*.json "$root"/configs/hf/*.json "$work/corpus/"
status=0
"$build/tests/config/config_fuzz" -runs="$runs" -max_total_time="$secs" -max_len=16384 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
  > "$work/fuzz.log" 2>&1 || status=$?
t2=$SECONDS
inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/fuzz.log"
  for f in "$work"/artifacts/*; do
    [ -f "$f" ] || continue
    echo "fuzz: failing input $(basename "$f") ($(stat -c %s "$f") bytes), base64:"
    head -c 4096 "$f" | base64
  done
fi
echo "fuzz: ${inputs:-0} configs tried in $((t2 - t1)) s (libFuzzer, ASan + UBSan; build $((t1 - t0)) s), exit $status"
exit $status
