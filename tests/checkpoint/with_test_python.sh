#!/usr/bin/env bash
# with_test_python.sh PYTHON CMD...: runs CMD when PYTHON (the test-only venv with numpy and
# safetensors that scripts/setup.sh makes) exists; otherwise says so and exits 77 (CTest: skipped).
py=$1
shift
if [ ! -x "$py" ] || ! "$py" -c 'import numpy, safetensors' 2>/dev/null; then
  echo "skipped: $py with numpy and safetensors is missing (run scripts/setup.sh)"
  exit 77
fi
exec "$@"
