# Sourced by scripts/gpu_check.sh (on the GPU machine, which has no apt) and by
# scripts/debs_build_check.sh (here and in CI, which proves the set suffices): unpacks the .debs of
# scripts/fetch_gpu_debs.sh into a prefix and points the build at it.
#   zt_deps_unpack DEBS_DIR PREFIX   dpkg -x every .deb (skipped when PREFIX holds this very set)
#   zt_deps_env PREFIX               PATH, pkg-config, loader and Open MPI relocation variables
#   zt_deps_cmake_args PREFIX        prints the CMake arguments, one a line (mapfile them)
#   zt_deps_report PREFIX            prints which tools and libraries the prefix provides

zt_deps_libdir() { echo "$1/usr/lib/x86_64-linux-gnu"; }

zt_deps_unpack() {
  local debs="$1" prefix="$2" n=0 f
  local want; want="$(cd "$debs" && ls -1 ./*.deb 2>/dev/null | sha256sum | cut -c1-16)"
  if [ -f "$prefix/.zt_unpacked" ] && [ "$(cat "$prefix/.zt_unpacked")" = "$want" ]; then
    echo "deps: $prefix already holds the unpacked $(ls "$debs"/*.deb | wc -l) .debs"
    return 0
  fi
  rm -rf "$prefix"; mkdir -p "$prefix"
  for f in "$debs"/*.deb; do [ -f "$f" ] || continue; dpkg -x "$f" "$prefix" && n=$((n + 1)); done
  echo "deps: unpacked $n .deb files into $prefix"
  [ "$n" -gt 0 ] || return 1
  local lib; lib="$(zt_deps_libdir "$prefix")"
  # Debian points libopenblas.so / libblas.so at openblas-pthread/ through update-alternatives,
  # which dpkg -x does not run: make the links ourselves so FindBLAS and the loader see them.
  if [ -d "$lib/openblas-pthread" ]; then
    ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
    ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
    ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so.3"
    ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so"
  fi
  # pkgconf's Debian package names the executable pkgconf and links pkg-config to it.
  [ -e "$prefix/usr/bin/pkg-config" ] || ln -sf pkgconf "$prefix/usr/bin/pkg-config"
  echo "$want" >"$prefix/.zt_unpacked"
}

zt_deps_env() {
  local prefix="$1" lib; lib="$(zt_deps_libdir "$1")"
  export PATH="$prefix/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$lib/openblas-pthread:$lib:$lib/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # pkg-config: only the prefix's .pc files (LIBDIR replaces the built-in /usr search path), their
  # prefix=/usr rewritten under PREFIX (SYSROOT), and -I kept even where it looks like /usr/include.
  export PKG_CONFIG="$prefix/usr/bin/pkgconf"
  export PKG_CONFIG_LIBDIR="$lib/pkgconfig:$prefix/usr/share/pkgconfig"
  export PKG_CONFIG_PATH="$PKG_CONFIG_LIBDIR"
  export PKG_CONFIG_SYSROOT_DIR="$prefix"
  export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
  # Open MPI's compiler wrappers and launcher look for their files under the build-time prefix
  # (/usr) unless told otherwise.
  if [ -x "$prefix/usr/bin/orterun" ]; then
    export OPAL_PREFIX="$prefix/usr" PMIX_INSTALL_PREFIX="$lib/pmix2"
  fi
}

zt_deps_cmake_args() {
  local prefix="$1" lib; lib="$(zt_deps_libdir "$1")"
  echo "-DCMAKE_PREFIX_PATH=$prefix/usr"
  echo "-DPKG_CONFIG_EXECUTABLE=$prefix/usr/bin/pkgconf"
  echo "-DProtobuf_PROTOC_EXECUTABLE=$prefix/usr/bin/protoc"
  echo "-DCMAKE_BUILD_RPATH=$lib/openblas-pthread;$lib;$lib/openmpi/lib"
  if [ -x "$prefix/usr/bin/mpicc.openmpi" ]; then
    echo "-DMPI_C_COMPILER=$prefix/usr/bin/mpicc.openmpi"
    echo "-DMPIEXEC_EXECUTABLE=$prefix/usr/bin/orterun"
  fi
}

zt_deps_report() {
  local prefix="$1" lib t; lib="$(zt_deps_libdir "$1")"
  for t in pkgconf protoc mpicc.openmpi orterun; do
    if [ -x "$prefix/usr/bin/$t" ]; then
      printf 'deps: %-14s %s (%s)\n' "$t" "$prefix/usr/bin/$t" \
        "$("$prefix/usr/bin/$t" --version 2>&1 | head -1)"
    else
      printf 'deps: %-14s MISSING from %s\n' "$t" "$prefix/usr/bin"
    fi
  done
  for t in nlohmann/json.hpp CLI/CLI.hpp gtest/gtest.h xxhash.h isa-l.h liburing.h pcre2.h google/protobuf/message_lite.h \
           x86_64-linux-gnu/openblas-pthread/cblas.h; do
    [ -e "$prefix/usr/include/$t" ] && printf 'deps: header %-40s ok\n' "$t" || printf 'deps: header %-40s MISSING\n' "$t"
  done
  for t in libxxhash.so libisal.so libpcre2-8.so liburing.so libprotobuf-lite.so libopenblas.so libgtest.a openmpi/lib/libmpi.so; do
    [ -e "$lib/$t" ] && printf 'deps: library %-39s ok\n' "$t" || printf 'deps: library %-39s MISSING\n' "$t"
  done
  echo "deps: pkg-config libisal: $("$prefix/usr/bin/pkgconf" --cflags --libs libisal 2>&1)"
}
