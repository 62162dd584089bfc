#!/usr/bin/env bash
# with_tokenizers.sh PYTHON CMD...: runs CMD when PYTHON (the virtualenv scripts/setup.sh
# makes) has the tokenizers package; otherwise skips (77), or fails under CI=true.
py=$1
shift
if [ ! -x "$py" ] || ! "$py" -c "import tokenizers, tqdm, numpy" 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: $py with the tokenizers package is missing (scripts/setup.sh installs it)"; exit 1; fi
  echo "SKIP: no $py with the tokenizers package (run scripts/setup.sh)"; exit 77
fi
exec "$@"
