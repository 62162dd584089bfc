#!/usr/bin/env bash
# Configures and builds zerotrain into build/ (or $ZT_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${ZT_BUILD_DIR:-$root/build}"
generator=()
command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE="${ZT_BUILD_TYPE:-Release}" "$@"
cmake --build "$build" -j "${ZT_JOBS:-$(nproc)}"
