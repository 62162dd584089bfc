#!/usr/bin/env bash
# Training throughput reading a large memory-mapped corpus against the same run on the built-in data
# (the goal: within 2%, the loader never stalls the step). Writes a corpus of MIB MiB of uint16
# tokens (ids below 256), then runs the same model alternately on each (built-in, corpus, ...,
# ROUNDS times) and compares the median of each run's median tokens/s. Prints a table and one JSON
# line. Usage: mapped_corpus_bench.sh ZEROTRAIN [MIB, default 4096] [ROUNDS, default 3] [PYTHON]
set -euo pipefail
zt=$1 mib=${2:-4096} rounds=${3:-3}
root="$(cd "$(dirname "$0")/../.." && pwd)"
py=${4:-$root/.venv-test/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" - "$work" "$mib" <<'PY'
import sys
import numpy as np
work, mib = sys.argv[1], int(sys.argv[2])
n = (mib << 20) // 2 - 512
rng = np.random.default_rng(0)
for name, count in (("bench_train_000000.bin", n), ("bench_val_000000.bin", 1 << 16)):
    with open(f"{work}/{name}", "wb") as f:
        header = np.zeros(256, np.int32)
        header[:3] = (20240520, 1, count)
        f.write(header.tobytes())
        for first in range(0, count, 1 << 26):
            rng.integers(0, 256, size=min(1 << 26, count - first), dtype=np.uint16).tofile(f)
PY
# tiny: the smallest step, where a loader that stalls would show most.
flags=(--model tiny --vocab 256 --steps 200 --eval-every 0 --eval-batches 1)
rate() { "$zt" "${flags[@]}" "$@" | sed -nE 's/^done: .*median ([0-9.]+) tokens\/s.*/\1/p'; }
builtin=() corpus=()
for ((i = 0; i < rounds; i++)); do
  builtin+=("$(rate)")
  corpus+=("$(rate --data "$work")")
done
"$py" - "$mib" "${builtin[*]}" "${corpus[*]}" <<'PY'
import json, statistics, sys
mib, a, b = int(sys.argv[1]), [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ma, mb = statistics.median(a), statistics.median(b)
print("| measurement | tokens/s (median of runs) | peer | ratio |\n|---|---|---|---|")
print(f"| tiny, {mib} MiB memory-mapped corpus | {mb:.0f} ({', '.join(f'{x:.0f}' for x in b)}) "
      f"| built-in data {ma:.0f} ({', '.join(f'{x:.0f}' for x in a)}) | {mb / ma:.3f} (goal >= 0.98) |")
print(json.dumps({"bench": "mapped_corpus", "mib": mib, "builtin_tokens_per_s": a, "corpus_tokens_per_s": b,
                  "ratio": round(mb / ma, 4)}))
PY
