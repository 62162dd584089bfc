#!/usr/bin/env bash
# Proves that the .debs of scripts/fetch_gpu_debs.sh are enough to configure and build zerotrain
# on a machine that has none of those packages installed (the lent GPU machine), the way
# scripts/gpu_check.sh does there: unpack them into a prefix (scripts/gpu_deps.sh), then, in a
# private mount namespace where every file of the system's copies of those same packages is
# hidden, configure the whole project against the prefix, check that every dependency CMake found
# lies in the prefix, and build a representative set of targets:
#   deps_link_probe_test  includes, links and runs every third-party library (protobuf + protoc,
#                         ISA-L and PCRE2 via pkg-config, xxHash, liburing, nlohmann, CLI11, GTest, OpenBLAS,
#                         MPI, and the CUDA runtime / cuBLASLt / NCCL where nvcc is present)
#   collectives_*_test    a real project executable (MPI, liburing, NCCL and cuBLASLt link)
#   and the project's own objects that include protobuf/ISA-L, xxHash and CBLAS headers; then it
# configures gpu_check.sh's GPU-only fallback (scripts/gpu_only), which checks its link graph.
# Isolation: `unshare -m` gives this script a mount table of its own; in it, /dev/null is
# bind-mounted over each regular file (header, library, CMake/pkg-config file, executable) that dpkg lists
# for the bundled packages installed on this machine. A lookup that misses the prefix and falls
# back to /usr then finds an empty file and fails (the compiler, linker or CMake errors), so a
# package missing from the bundle cannot be masked by the system's copy. Other processes keep
# seeing the system as it is. The CUDA toolkit (nvcc, cudart, cuBLASLt, NCCL) is not bundled and
# stays visible, as on the GPU machine. Cold, about 95 s of CPU time: under a minute on 2 idle cores
# (46 s measured), longer on a loaded machine. Run by .ci/run.
#   bash scripts/debs_build_check.sh [CMAKE_ARGS...]   (ZT_DEBS_CHECK_DIR: work folder, default build-debs/)
#   ZT_DEBS_CHECK_OMIT="libxxhash-dev ..." leaves those packages out of the prefix (their system
#   copies stay hidden): the check must then fail, which shows that it can.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${ZT_DEBS_CHECK_DIR:-$root/build-debs}"
prefix="$work/prefix"
build="$work/build"
jobs="${ZT_JOBS:-$(nproc)}"

if [ "${1:-}" != --isolated ]; then
  t0=$SECONDS
  bash "$root/scripts/fetch_gpu_debs.sh"
  if ! unshare -m --propagation private true 2>/dev/null; then
    echo "debs_build_check: SKIPPED: no private mount namespace here (unshare -m needs root or user namespaces)"
    # CI runs as root, where the namespace exists: a skip there would hide the check.
    [ "${CI:-}" = true ] && { echo "debs_build_check: FAILED: CI=true and the check cannot run"; exit 1; }
    exit 0
  fi
  unshare -m --propagation private bash "$0" --isolated "$@"
  echo "debs_build_check: passed in $((SECONDS - t0)) s"
  exit 0
fi

# ---- inside the private mount namespace ---------------------------------------------------
shift
# shellcheck source=scripts/gpu_deps.sh
source "$root/scripts/gpu_deps.sh"
debs="$root/.debs"
if [ -n "${ZT_DEBS_CHECK_OMIT:-}" ]; then
  debs="$work/debs-omit"; rm -rf "$debs"; mkdir -p "$debs"
  for f in "$root"/.debs/*.deb; do
    p="$(basename "$f" | cut -d_ -f1)"
    [[ " $ZT_DEBS_CHECK_OMIT " == *" $p "* ]] && echo "debs_build_check: leaving $p out" && continue
    ln -s "$f" "$debs/"
  done
fi
zt_deps_unpack "$debs" "$prefix"  # before hiding: dpkg itself loads bundled libraries (libmd)
mapfile -t pkgs < <(ls "$root/.debs"/*.deb | xargs -n1 basename | cut -d_ -f1 | sort -u)
files=()
# Runtime libraries the system's own tools load stay visible: mount itself (libmount → libselinux)
# needs libpcre2-8, and every Debian or Ubuntu image has it; the bundle carries it for the link.
keep_visible=" libpcre2-8-0 "
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || continue
  [[ "$keep_visible" == *" $p "* ]] && continue
  while IFS= read -r f; do
    case "$f" in /usr/share/doc/* | /usr/share/man/* | /usr/share/locale/* | /usr/share/lintian/*) continue ;; esac
    # Regular files only: a bind mount over a link would hide its target, which may belong to
    # another package (zlib1g-dev's libz.so leads to zlib1g's libz.so.1, which cmake loads). A
    # link to a hidden file leads to an empty file too.
    [ -f "$f" ] && [ ! -L "$f" ] && files+=("$f")
  done < <(dpkg -L "$p")
done
for f in "${files[@]}"; do mount --bind /dev/null "$f"; done
echo "debs_build_check: hid ${#files[@]} files of the system's copies of the ${#pkgs[@]} bundled packages"
# The hiding works: the system's headers and tools of those packages are empty now.
for f in /usr/include/xxhash.h /usr/include/nlohmann/json.hpp /usr/include/pcre2.h /usr/bin/protoc; do
  [ ! -e "$f" ] || [ ! -s "$f" ] || { echo "debs_build_check: $f is still visible" >&2; exit 1; }
done

zt_deps_env "$prefix"
zt_deps_report "$prefix"
mapfile -t dep_args < <(zt_deps_cmake_args "$prefix")

gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
rm -rf "$build"
cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DZT_BUILD_BENCH=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_OPTIMIZE_DEPENDENCIES=ON "${dep_args[@]}" "$@" >"$work/configure.log" 2>&1 ||
  { tail -40 "$work/configure.log"; echo "debs_build_check: configure FAILED (log: $work/configure.log)" >&2; exit 1; }
grep -E '^-- zerotrain:' "$work/configure.log"

# Every dependency CMake found must lie in the prefix (the CUDA toolkit and NCCL excepted).
cache="$build/CMakeCache.txt"
bad=0
check_key() {  # check_key KEY: the cache value exists and starts with the prefix
  local v; v="$(grep -E "^$1:[A-Z]+=" "$cache" | head -1 | cut -d= -f2-)"
  if [ -z "$v" ]; then echo "  $1: not in the cache"; bad=1
  elif [[ "$v" != "$prefix"/* ]]; then echo "  $1 = $v: NOT in the prefix"; bad=1
  else echo "  $1 = ${v#"$prefix"/}"; fi
}
echo "debs_build_check: what CMake found (paths relative to the prefix):"
for k in nlohmann_json_DIR CLI11_DIR GTest_DIR BLAS_openblas_LIBRARY CBLAS_INCLUDE_DIR ZT_XXHASH_LIBRARY \
         ZT_XXHASH_INCLUDE_DIR ZT_URING_LIBRARY ZT_URING_INCLUDE_DIR Protobuf_PROTOC_EXECUTABLE Protobuf_INCLUDE_DIR \
         Protobuf_LITE_LIBRARY_RELEASE PKG_CONFIG_EXECUTABLE; do
  check_key "$k"
done
grep -q '^ZT_MPI:BOOL=ON' "$cache" && check_key MPI_C_HEADER_DIR && check_key MPI_mpi_LIBRARY
isal="$(grep -E '^ISAL_LIBDIR:INTERNAL=' "$cache" | cut -d= -f2-)"
[[ "$isal" == "$prefix"/* ]] && echo "  ISA-L (pkg-config) libdir = ${isal#"$prefix"/}" ||
  { echo "  ISA-L (pkg-config) libdir = $isal: NOT in the prefix"; bad=1; }
pcre2="$(grep -E '^PCRE2_LIBDIR:INTERNAL=' "$cache" | cut -d= -f2-)"
[[ "$pcre2" == "$prefix"/* ]] && echo "  PCRE2 (pkg-config) libdir = ${pcre2#"$prefix"/}" ||
  { echo "  PCRE2 (pkg-config) libdir = $pcre2: NOT in the prefix"; bad=1; }
[ "$bad" -eq 0 ] || { echo "debs_build_check: a dependency was found outside the prefix" >&2; exit 1; }

# CMAKE_OPTIMIZE_DEPENDENCIES (configure above) lets these objects build without first building
# every library their target links (zt_monitor links the engine, which links everything).
targets=(deps_link_probe_test
         runtime/monitor/CMakeFiles/zt_monitor.dir/tb_event_writer.cpp.o   # ISA-L, protoc's header
         runtime/checkpoint/CMakeFiles/zt_checkpoint.dir/checksum.cpp.o    # xxHash
         kernels/cpu/CMakeFiles/zt_kernels_cpu.dir/matmul.cpp.o            # CBLAS
         runtime/data/CMakeFiles/zt_data.dir/bpe_tokenizer.cpp.o)          # PCRE2
if grep -q '^ZT_CUDA:BOOL=ON' "$cache"; then
  targets+=(collectives_nccl_test)  # MPI, liburing, NCCL, cuBLASLt
else
  targets+=(collectives_unit_test)  # MPI, liburing
fi
echo "debs_build_check: building ${targets[*]}"
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$work/build.log" 2>&1 ||
  { grep -E -B2 -A12 'FAILED:|error:' "$work/build.log" | head -60
    echo "debs_build_check: build FAILED (log: $work/build.log)" >&2; exit 1; }
echo "debs_build_check: built $(grep -c '^\[' "$work/build.log") steps"
(cd "$build" && ctest -R '^DepsLinkProbe\.' --output-on-failure -V 2>&1 | grep -E '^[0-9]+: (protobuf|xxhash|pcre2|liburing|MPI|CUDA)|tests passed|tests failed' | sort -u)
(cd "$build" && ctest -R '^DepsLinkProbe\.' >/dev/null) || { echo "debs_build_check: the probe failed" >&2; exit 1; }

# gpu_check.sh's GPU-only fallback project against the same prefix: its configure fails if any
# target links a name that is not a target (scripts/gpu_only/CMakeLists.txt checks the graph).
if command -v nvcc >/dev/null; then
  cmake -S "$root/scripts/gpu_only" -B "$work/gpu_only" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${dep_args[@]}" "$@" >"$work/gpu_only.log" 2>&1 ||
    { grep -A3 'CMake Error' "$work/gpu_only.log" | head -30
      echo "debs_build_check: the GPU-only fallback does not configure (log: $work/gpu_only.log)" >&2; exit 1; }
  echo "debs_build_check: the GPU-only fallback project configures; every link item is a target"
fi
