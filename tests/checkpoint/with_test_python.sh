#!/usr/bin/env bash
# with_test_python.sh PYTHON CMD...: runs CMD when PYTHON (the test-only venv with numpy and
# safetensors that scripts/setup.sh makes) exists; otherwise says so and exits 77 (CTest: skipped),
# or 1 under CI=true, where the tests it guards must run.
py=$1
shift
if [ ! -x "$py" ] || ! "$py" -c 'import numpy, safetensors' 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: $py with numpy and safetensors is missing (scripts/setup.sh makes it); CI=true: this test must run"
    exit 1
  fi
  echo "skipped: $py with numpy and safetensors is missing (run scripts/setup.sh)"
  exit 77
fi
exec "$@"
