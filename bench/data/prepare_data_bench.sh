#!/usr/bin/env bash
# prepare_data.py's throughput against the 1 M tokens/s goal: a 50,000-entry byte-level BPE (GPT-2's
# size) trained here with the tokenizers trainer on local text (this machine's Python standard
# library sources: nothing is fetched), then prepare_data.py over the same text. Prints a table and
# one JSON line. Usage: prepare_data_bench.sh [PYTHON] [MEGABYTES of text, default 64]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
py=${1:-$root/.venv-test/bin/python3}
mb=${2:-64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The standard library's UTF-8 sources, in name order, up to MEGABYTES.
"$py" - "$work/corpus.txt" "$mb" <<'PY'
import pathlib, sys, sysconfig
out, limit, size = open(sys.argv[1], "w", encoding="utf-8"), int(sys.argv[2]) << 20, 0
for f in sorted(pathlib.Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
    try:
        text = f.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        continue
    out.write(text)
    size += len(text.encode())
    if size >= limit:
        break
PY
"$py" - "$work" <<'PY'
import sys, time
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
work = sys.argv[1]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=50000, special_tokens=["<|endoftext|>"], show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
t = time.perf_counter()
tok.train([f"{work}/corpus.txt"], trainer)
tok.save(f"{work}/tokenizer.json")
print(f"trained a {tok.get_vocab_size()}-entry byte-level BPE in {time.perf_counter() - t:.1f} s", file=sys.stderr)
PY
"$py" "$root/scripts/prepare_data.py" --tokenizer "$work/tokenizer.json" --text "$work/corpus.txt" --out "$work/out" \
  --val-fraction 0.01 > "$work/log.txt"
cat "$work/log.txt"
"$py" - "$work/out/manifest.json" "$(nproc)" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
rate, goal = m["tokens_per_s"], 1_000_000
# Shared machines: the CPU time the run got says what the same run does with its cores to itself.
per_cpu_s = (m["train_tokens"] + m["val_tokens"]) / max(m["cpu_seconds"], 1e-9)
cores = int(sys.argv[2])
print("| measurement | value | goal | ratio |\n|---|---|---|---|")
print(f"| prepare_data.py, {m['vocab_size']}-entry BPE, {m['input_bytes'] / 2**20:.0f} MiB text, {sys.argv[2]} cores "
      f"| {rate / 1e6:.2f} M tokens/s ({(m['train_tokens'] + m['val_tokens']) / 1e6:.1f} M tokens in {m['seconds']} s) "
      f"| 1.00 M tokens/s | {rate / goal:.2f} |")
print(f"| the same per CPU-second ({m['cpu_seconds']} CPU-s over {m['seconds']} s wall), times {cores} cores "
      f"| {per_cpu_s * cores / 1e6:.2f} M tokens/s | 1.00 M tokens/s | {per_cpu_s * cores / goal:.2f} |")
print(json.dumps({"bench": "prepare_data", "vocab": m["vocab_size"], "input_bytes": m["input_bytes"],
                  "tokens": m["train_tokens"] + m["val_tokens"], "seconds": m["seconds"], "cpu_seconds": m["cpu_seconds"], "tokens_per_s": rate,
                  "tokens_per_cpu_s": round(per_cpu_s),
                  "goal_tokens_per_s": goal, "cores": cores}))
PY
