#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the whole CTest suite
# (unit, mpi, gpu; gpu tests skip without a device).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${ZT_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure --timeout 600 -j "${ZT_TEST_JOBS:-2}" "$@"
