#!/usr/bin/env bash
# Training throughput reading a large corpus of shards against the same run on the built-in data
# (the goal: within 2%, the loader never stalls the step). Writes a corpus of MIB MiB of uint16
# tokens (ids below 256), then runs the same models alternately on each (built-in, corpus, ...,
# ROUNDS times) and compares the median of each run's median tokens/s. Prints a table and one JSON
# line per model. Usage: corpus_reading_bench.sh ZEROTRAIN [MIB, default 4096] [ROUNDS, default 3] [PYTHON]
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
# tiny: the smallest step (~0.25 ms), where a loader that stalls would show most; small: a step of
# milliseconds, closer to real work. 2,000 steps a run so that the median is over many steps.
rate() { "$zt" --vocab 256 --eval-every 0 --eval-batches 1 "$@" | sed -nE 's/^done: .*median ([0-9.]+) tokens\/s.*/\1/p'; }
declare -A builtin corpus
for model in tiny small; do
  steps=2000; [ "$model" = small ] && steps=200
  for ((i = 0; i < rounds; i++)); do
    builtin[$model]+="$(rate --model $model --steps $steps) "
    corpus[$model]+="$(rate --model $model --steps $steps --data "$work") "
  done
done
"$py" - "$mib" "${builtin[tiny]}" "${corpus[tiny]}" "${builtin[small]}" "${corpus[small]}" <<'PY'
import json, statistics, sys
mib = int(sys.argv[1])
runs = [[float(x) for x in a.split()] for a in sys.argv[2:6]]
print("| measurement | tokens/s (median of runs) | peer | ratio |\n|---|---|---|---|")
for model, a, b in (("tiny", runs[0], runs[1]), ("small", runs[2], runs[3])):
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"| {model}, {mib} MiB corpus of shards | {mb:.0f} ({', '.join(f'{x:.0f}' for x in b)}) "
          f"| built-in data {ma:.0f} ({', '.join(f'{x:.0f}' for x in a)}) | {mb / ma:.3f} (goal >= 0.98) |")
    print(json.dumps({"bench": "corpus_reading", "model": model, "mib": mib, "builtin_tokens_per_s": a,
                      "corpus_tokens_per_s": b, "ratio": round(mb / ma, 4)}))
PY
