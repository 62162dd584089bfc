#!/usr/bin/env bash
# expect_abort.sh MAX_SECONDS REGEX CMD...: passes when CMD exits non-zero within MAX_SECONDS and its
# output (stdout+stderr) matches the extended regular expression REGEX on exactly one line (a message
# every rank would print is printed once); prints why otherwise.
set -u
max=$1 regex=$2
shift 2
start=$(date +%s%N)
out=$(timeout --kill-after=5 $((max + 30)) "$@" 2>&1)
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
elapsed=$(printf "%d.%03d" $((elapsed_ms / 1000)) $((elapsed_ms % 1000)))
echo "$out" | tail -n 40
echo "expect_abort: exit code $rc after ${elapsed}s (bound ${max}s)"
fail=0
if [ "$rc" -eq 0 ]; then echo "expect_abort: FAIL: the job exited 0; expected a non-zero exit"; fail=1; fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "expect_abort: FAIL: the job hung and was killed"; fail=1; fi
if [ "$elapsed_ms" -gt $((max * 1000)) ]; then echo "expect_abort: FAIL: took longer than ${max}s"; fail=1; fi
matches=$(echo "$out" | grep -Ec -- "$regex")
if [ "$matches" -eq 0 ]; then echo "expect_abort: FAIL: output does not match: $regex"; fail=1; fi
if [ "$matches" -gt 1 ]; then echo "expect_abort: FAIL: $matches lines match (expected one): $regex"; fail=1; fi
[ "$fail" -eq 0 ] && echo "expect_abort: PASS"
exit "$fail"
