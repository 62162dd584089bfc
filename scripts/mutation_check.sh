#!/usr/bin/env bash
# The mutation check: applies each named one-line mutation of the core in scripts/mutations.txt
# (or the file given with --list) to this checkout, one at a time, rebuilds only the test
# executables that mutation names (and what they depend on), runs their CTest tests and reports
# whether a test caught it (failed) or the mutation survived. The source is restored after each
# mutation, also on Ctrl-C, and the executables are rebuilt from the restored source at the end.
#
#   bash scripts/mutation_check.sh [--build DIR] [--list FILE] [--only NAME[,NAME...]] [--all]
#   bash scripts/mutation_check.sh --check-list [--list FILE]
#
# --check-list only reads the list against the source (seconds, no build, no mutation applied):
# every file exists, every from: text occurs exactly once in its file, every tests: name is a test
# executable some tests/**/CMakeLists.txt defines. CTest runs it (mutation_list), so a refactor that
# rewrites a mutated line fails the suite instead of rotting the list.
#
# --all runs every selected test of a mutation (the table then lists every test that failed);
# without it the first failure ends that mutation's run. Needs a configured build (scripts/build.sh).
# CI runs only --check-list; the mutations themselves take about a minute each on 2 cores, so; run it before closing a change to
# runtime/zero/, runtime/engine/, collectives/ or offload/, and quote its table. Exit status: 0 when
# every mutation was caught, 1 when one survived, 2 for bad input.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
list="$root/scripts/mutations.txt"
only=""
stop_on_failure=1
check_list=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --list) list="$2"; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    --all) stop_on_failure=0; shift ;;
    --check-list) check_list=1; shift ;;
    *) echo "mutation_check: unknown argument '$1' (use --build DIR, --list FILE, --only NAMES, --all, --check-list)" >&2; exit 2 ;;
  esac
done
[ -f "$list" ] || { echo "mutation_check: no mutation list at $list" >&2; exit 2; }
[ $check_list = 1 ] || [ -f "$build/CMakeCache.txt" ] || { echo "mutation_check: $build is not a configured build: run scripts/build.sh first" >&2; exit 2; }
jobs="${ZT_JOBS:-$(nproc)}"

# --- the list: blocks of "key: value" lines ------------------------------------------------------
names=(); files=(); froms=(); tos=(); tests=()
flush() {
  [ -n "${n:-}" ] || return 0
  for k in f a b t; do
    [ -n "${!k:-}" ] || { echo "mutation_check: $list: mutation '$n' lacks a file:, from:, to: or tests: line" >&2; exit 2; }
  done
  if [ -z "$only" ] || [[ "$only" == *",$n,"* ]]; then
    names+=("$n"); files+=("$f"); froms+=("$a"); tos+=("$b"); tests+=("$t")
  fi
  n=""; f=""; a=""; b=""; t=""
}
n=""; f=""; a=""; b=""; t=""
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    "#"*) ;;
    "") flush ;;
    "name: "*) n="${line#name: }" ;;
    "file: "*) f="${line#file: }" ;;
    "from: "*) a="${line#from: }" ;;
    "to: "*) b="${line#to: }" ;;
    "tests: "*) t="${line#tests: }" ;;
    *) echo "mutation_check: $list: cannot read line '$line' (expected name:, file:, from:, to: or tests:)" >&2; exit 2 ;;
  esac
done <"$list"
flush
[ ${#names[@]} -gt 0 ] || { echo "mutation_check: no mutation selected from $list" >&2; exit 2; }

# --- --check-list: the list against today's source, nothing built or changed ---------------------
if [ $check_list = 1 ]; then
  defined="$(cat "$root"/tests/*/CMakeLists.txt "$root"/tests/CMakeLists.txt |
             grep -oE '(add_executable|zt_add_unit_test)\([A-Za-z0-9_]+' | sed -E 's/.*\(//' | sort -u)"
  bad=0
  for i in "${!names[@]}"; do
    name="${names[$i]}"; file="${files[$i]}"
    if [ ! -f "$root/$file" ]; then
      echo "mutation_check: $list: mutation '$name': no file $file (fix its file: line)"; bad=$((bad + 1)); continue
    fi
    count="$(FROM="${froms[$i]}" perl -0777 -ne 'my $c = () = /\Q$ENV{FROM}\E/g; print $c' "$root/$file")"
    if [ "$count" != 1 ]; then
      echo "mutation_check: $list: mutation '$name': its from: text occurs $count times in $file, not once (fix its from: line)"
      bad=$((bad + 1))
    fi
    for t in ${tests[$i]}; do
      grep -qx "$t" <<<"$defined" || { echo "mutation_check: $list: mutation '$name': no test executable '$t' in tests/ (fix its tests: line)"; bad=$((bad + 1)); }
    done
  done
  echo "mutation_check: --check-list: ${#names[@]} mutation(s), $bad problem(s)"
  [ $bad = 0 ] && exit 0 || exit 1
fi

# --- one substitution, exact and unique ----------------------------------------------------------
# replace FILE FROM TO: fails (exit 2) unless FROM occurs exactly once in FILE.
replace() {
  FROM="$2" TO="$3" perl -0777 -i -pe '
    my $c = () = /\Q$ENV{FROM}\E/g;
    die "occurs $c times\n" if $c != 1;
    s/\Q$ENV{FROM}\E/$ENV{TO}/;' "$1"
}

# An anchored CTest regex of the tests whose command runs one of the named executables.
test_regex() {
  local exes="$1"
  (cd "$build" && ctest --show-only=json-v1) | jq -r --arg exes " $exes " '
    .tests | to_entries[] | select(.value.command != null) |
    select(any(.value.command[]; . as $a | ($a | split("/") | last) as $b | ($exes | contains(" " + $b + " ")))) |
    .value.name | gsub("(?<c>[][.*+?^$(){}|\\\\])"; "\\\(.c)")' | paste -sd'|' - | sed -E 's/.+/^(&)$/'
}

backup="$(mktemp -d)"
current=""
restore() {
  if [ -n "$current" ]; then
    cp -p "$backup/file" "$root/$current"
    touch "$root/$current"
    current=""
  fi
}
trap 'restore; rm -rf "$backup"' EXIT
trap 'echo "mutation_check: interrupted; source restored" >&2; exit 130' INT TERM

all_targets=""
results=()
survived=0
t_start=$SECONDS
for i in "${!names[@]}"; do
  name="${names[$i]}"; file="${files[$i]}"; targets="${tests[$i]}"
  all_targets="$all_targets $targets"
  [ -f "$root/$file" ] || { echo "mutation_check: $name: no file $file" >&2; exit 2; }
  cp -p "$root/$file" "$backup/file"
  current="$file"
  if ! err="$(replace "$root/$file" "${froms[$i]}" "${tos[$i]}" 2>&1)"; then
    echo "mutation_check: $name: the text to change in $file $err (fix its from: line in $list)" >&2
    exit 2
  fi
  t0=$SECONDS
  echo "== $name ($file)"
  log="$build/mutation_$name.log"
  # shellcheck disable=SC2086
  if ! cmake --build "$build" -j "$jobs" --target $targets >"$log" 2>&1; then
    verdict="caught: does not compile"
  else
    regex="$(test_regex "$targets")"
    if [ -z "$regex" ]; then
      restore
      echo "mutation_check: $name: none of '$targets' has a CTest test in $build" >&2
      exit 2
    fi
    flags=(--timeout 300 -R "$regex")
    [ $stop_on_failure = 1 ] && flags+=(--stop-on-failure)
    (cd "$build" && ctest "${flags[@]}" -j1) >>"$log" 2>&1 || true
    failed="$(grep -oE '^[[:space:]]*[0-9]+ - [^ ]+ \((Failed|Timeout|SEGFAULT|Subprocess aborted|Child aborted|Exception|OTHER_FAULT|Not Run)' "$log" |
              sed -E 's/^[[:space:]]*[0-9]+ - ([^ ]+) .*/\1/' | sort -u | paste -sd' ' - || true)"
    ran="$(grep -cE '^ *Start +[0-9]+:' "$log" || true)"
    if [ -n "$failed" ]; then verdict="caught by $failed"
    else verdict="SURVIVED ($ran tests passed)"; survived=$((survived + 1)); fi
  fi
  restore
  results+=("| $name | \`$file\` | $verdict | $((SECONDS - t0)) s |")
  echo "   $verdict ($((SECONDS - t0)) s; log $log)"
done

# Rebuild what was built mutated from the restored source (ccache makes this quick).
echo "== rebuilding the unmutated executables"
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $(echo $all_targets | tr ' ' '\n' | sort -u) >/dev/null

echo
echo "| mutation | file | result | time |"
echo "|---|---|---|---|"
printf '%s\n' "${results[@]}"
echo
echo "mutation_check: ${#names[@]} mutation(s), $survived survived, $((SECONDS - t_start)) s"
[ $survived = 0 ]
