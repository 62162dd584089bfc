#!/usr/bin/env python3
"""The pretrained loss of a Hugging Face Llama folder on a token split, by zerotrain eval and by
transformers' LlamaForCausalLM on PyTorch, over the same windows (the test suite's reference is a
numpy forward, because its environment has no torch; this is the check against transformers
itself, run where bench/model/setup.sh has made .venv-peer).

Usage: .venv-peer/bin/python bench/model/check_real_loss.py ZEROTRAIN MODEL_DIR DATA_DIR [--seq-len T]
(DATA_DIR: scripts/prepare_data.py's shards made with MODEL_DIR/tokenizer.json). Prints one JSON line
and a table row."""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("zerotrain")
    ap.add_argument("model")
    ap.add_argument("data")
    ap.add_argument("--seq-len", type=int, default=256)
    a = ap.parse_args()
    T = a.seq_len
    out = subprocess.run([a.zerotrain, "eval", "--init-from", a.model, "--seq-len", str(T), "--data", a.data],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout.decode()
    ours = float(re.search(r"^eval: loss ([0-9.]+),", out, re.M).group(1))

    import torch
    from transformers import LlamaForCausalLM
    (shard,) = [f for f in os.listdir(a.data) if "_val_" in f]
    raw = np.fromfile(os.path.join(a.data, shard), dtype=np.uint8)
    tokens = raw[1024:].view(np.uint16)[:raw[:1024].view(np.int32)[2]].astype(np.int64)
    windows = (len(tokens) - 1) // T
    model = LlamaForCausalLM.from_pretrained(a.model, torch_dtype=torch.float32, attn_implementation="eager").eval()
    total = 0.0
    with torch.no_grad():
        for i in range(windows):
            row = torch.tensor(tokens[i * T:i * T + T + 1])
            logits = model(row[None, :-1]).logits[0].double()
            total += float(torch.nn.functional.cross_entropy(logits, row[1:], reduction="sum"))
    theirs = total / (windows * T)
    res = {"check": "real_loss", "model": os.path.basename(os.path.normpath(a.model)), "windows": windows, "seq_len": T,
           "zerotrain": round(ours, 6), "transformers": round(theirs, 6), "abs_diff": abs(ours - theirs),
           "torch": torch.__version__}
    print(json.dumps(res))
    print("| %s | %d × %d | %.6f | %.6f | %.1e |" % (res["model"], windows, T, ours, theirs, abs(ours - theirs)))
    return 0 if abs(ours - theirs) <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
