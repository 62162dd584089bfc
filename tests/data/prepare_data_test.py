#!/usr/bin/env python3
"""scripts/prepare_data.py end to end on tokenizers trained here with the tokenizers trainer (nothing
is fetched): a text file, a folder of text files and a JSONL file become llm.c shards whose headers,
sizes and manifest agree, whose tokens decode back to every input document in order, and whose
documents each start with the end-of-text token; a file many pieces long gives the tokens of one
whole-file encoding, for a byte-level and a Llama-2 style tokenizer; a vocabulary above 65,536 gives uint32 shards
(magic 20240801 version 7); a tokenizer that does not parse and a missing input are one error line
naming the file, exit 2.

Usage: prepare_data_test.py PREPARE_DATA_PY   (run with the test virtualenv's Python)
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

SCRIPT = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sentencepiece_variant  # noqa: E402 (beside this file)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def words_text(rng, n_words):
    vocab = ["the", "model", "shard", "token", "window", "naïve", "café", "über", "日本語", "rank", "loss", "step",
             "gradient", "zero", "stage", "data", "of", "a", "in", "is", "—", "ok."]
    lines, line = [], []
    for _ in range(n_words):
        line.append(rng.choice(vocab))
        if rng.random() < 0.08:
            lines.append(" ".join(line))
            line = []
            if rng.random() < 0.2:
                lines.append("")
    return "\n".join(lines) + "\n"


def train_tokenizer(path, corpus, vocab_size, extra_tokens=0):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    if extra_tokens:
        tok.add_tokens([f"<w{i}>" for i in range(extra_tokens)])
    tok.save(path)
    return Tokenizer.from_file(path)


def read_shard(path):
    raw = open(path, "rb").read()
    header = np.frombuffer(raw[:1024], dtype=np.int32)
    dtype = {(20240520, 1): np.uint16, (20240801, 7): np.uint32}.get((int(header[0]), int(header[1])))
    check(dtype is not None, f"{path}: header magic/version {header[0]}/{header[1]}")
    tokens = np.frombuffer(raw[1024:], dtype=dtype or np.uint16)
    check(len(tokens) == header[2], f"{path}: header counts {header[2]} tokens, the file holds {len(tokens)}")
    return int(header[0]), tokens


def run(args):
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)


def split_documents(stream, eot):
    docs, cur = [], None
    for t in stream:
        if t == eot:
            if cur is not None:
                docs.append(cur)
            cur = []
        else:
            check(cur is not None, "the stream does not start with the document token")
            cur.append(int(t))
    if cur is not None:
        docs.append(cur)
    return docs


def prepared(out, tok, documents, shard_tokens, magic):
    m = json.load(open(os.path.join(out, "manifest.json")))
    check(m["magic"] == magic and m["token_bytes"] == (2 if magic == 20240520 else 4), f"manifest width: {m}")
    check(m["vocab_size"] == tok.get_vocab_size(), "manifest vocab_size")
    check(m["documents"] == len(documents), f"manifest documents {m['documents']} != {len(documents)}")
    check(len(m["tokenizer"]["sha256"]) == 64, "manifest tokenizer hash")
    names = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
    check([s["file"] for s in m["shards"]] == [n for n in names if "_val_" in n] + [n for n in names if "_train_" in n],
          f"manifest shards {m['shards']} vs files {names}")
    stream, totals = [], {"train": 0, "val": 0}
    for split in ("val", "train"):
        shards = [s for s in m["shards"] if s["split"] == split]
        check(len(shards) >= 1, f"no {split} shard")
        for i, s in enumerate(shards):
            got_magic, t = read_shard(os.path.join(out, s["file"]))
            check(got_magic == magic, f"{s['file']}: magic {got_magic}, expected {magic}")
            check(len(t) == s["tokens"], f"{s['file']}: manifest says {s['tokens']} tokens, file {len(t)}")
            if i + 1 < len(shards):
                check(len(t) == shard_tokens, f"{s['file']}: {len(t)} tokens, every shard but the last holds {shard_tokens}")
            totals[split] += len(t)
            stream.extend(t.tolist())
    check(totals["train"] == m["train_tokens"] and totals["val"] == m["val_tokens"], "manifest token counts")
    eot = tok.token_to_id("<|endoftext|>")
    check(m["doc_token"]["id"] == eot, "manifest doc_token")
    docs = split_documents(stream, eot)
    check(len(docs) == len(documents), f"{len(docs)} documents in the shards, {len(documents)} given")
    for i, (ids, text) in enumerate(zip(docs, documents)):
        check(tok.decode(ids, skip_special_tokens=False) == text, f"document {i} does not decode back to its text")
    return m, stream


with tempfile.TemporaryDirectory() as work:
    rng = random.Random(5)
    corpus = os.path.join(work, "corpus.txt")
    open(corpus, "w", encoding="utf-8").write(words_text(rng, 20000))
    tok = train_tokenizer(os.path.join(work, "tokenizer.json"), corpus, 600)

    # Inputs: one text file, a folder of two (and a file that is not text, skipped), JSONL of three.
    docs = [words_text(rng, 3000)]
    open(os.path.join(work, "a.txt"), "w", encoding="utf-8").write(docs[0])
    os.makedirs(os.path.join(work, "folder", "sub"))
    for name in ("sub/c.txt", "b.txt"):  # name order: b.txt, sub/c.txt
        open(os.path.join(work, "folder", name), "w", encoding="utf-8").write(words_text(rng, 2000))
    open(os.path.join(work, "folder", "image.png"), "wb").write(b"\x89PNG\xff")
    docs += [open(os.path.join(work, "folder", n), encoding="utf-8").read() for n in ("b.txt", "sub/c.txt")]
    jsonl = [words_text(rng, 500) for _ in range(3)]
    with open(os.path.join(work, "d.jsonl"), "w", encoding="utf-8") as f:
        for t in jsonl:
            f.write(json.dumps({"id": 1, "text": t}) + "\n\n")
    docs += jsonl
    out = os.path.join(work, "out")
    r = run(["--tokenizer", os.path.join(work, "tokenizer.json"), "--text", os.path.join(work, "a.txt"),
             os.path.join(work, "folder"), os.path.join(work, "d.jsonl"), "--out", out, "--shard-tokens", "1500",
             "--val-fraction", "0.2", "--name", "test"])
    check(r.returncode == 0, f"prepare_data failed: {r.stdout}{r.stderr}")
    if r.returncode == 0:
        check("M tokens/s" in r.stdout, f"no tokens/s in the summary: {r.stdout}")
        m, stream = prepared(out, tok, docs, 1500, 20240520)
        check(len([s for s in m["shards"] if s["split"] == "train"]) >= 3, "expected several train shards")
        check(0.17 < m["val_tokens"] / (m["val_tokens"] + m["train_tokens"]) < 0.23, f"val share: {m['val_tokens']}")
        check(os.path.isfile(os.path.join(out, "test_train_000000.bin")), "llm.c naming")

    # GPT-2's vocab.json + merges.txt form of the same tokenizer gives the same tokens.
    tok.model.save(work)  # vocab.json, merges.txt
    out2 = os.path.join(work, "out_vm")
    r = run(["--tokenizer", os.path.join(work, "vocab.json"), "--text", os.path.join(work, "a.txt"), "--out", out2,
             "--val-fraction", "0"])
    check(r.returncode == 0, f"vocab.json + merges.txt: {r.stderr}")
    if r.returncode == 0:
        _, t = read_shard(os.path.join(out2, "data_train_000000.bin"))
        eot = tok.token_to_id("<|endoftext|>")
        check(t.tolist() == [eot] + tok.encode(docs[0], add_special_tokens=False).ids,
              "vocab.json + merges.txt tokens differ from tokenizer.json's")

    # A file many pieces long encodes as one whole-file encoding does, whatever its lines start and
    # end with: indents, runs of blank lines, CRLF, non-ASCII, an added token that takes the
    # whitespace before (lstrip) or after (rstrip) it; for the byte-level tokenizer and a Llama-2
    # style one (the SentencePiece-style fixture: its U+2581 start mark only at the document's start).
    lines = words_text(rng, 60000).split("\n")
    heads, tails = ["", "", "", "  ", "\t", "\u65e5\u672c ", "\u00a0", "<mask>", "\u2014"], ["", "", "", " ", "<mask>", "\r", "\u3002"]
    mixed = "\n".join(rng.choice(heads) + l + rng.choice(tails) for l in lines)
    open(os.path.join(work, "mixed.txt"), "w", encoding="utf-8", newline="").write(mixed)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True)])
    tok.save(os.path.join(work, "masked.json"))
    sp = sentencepiece_variant.variant_tokenizer(sentencepiece_variant.variant_named("llama2_legacy"))
    sp["added_tokens"].append({"id": sp["model"]["vocab"]["<0xFF>"] + 1000, "content": "<mask>", "single_word": False,
                               "lstrip": True, "rstrip": True, "normalized": False, "special": True})
    json.dump(sp, open(os.path.join(work, "llama2.json"), "w", encoding="utf-8"))
    check(len(mixed.encode()) > 5 * 65536, f"the mixed text is {len(mixed.encode())} bytes: too few pieces")
    for name, doc_token in (("masked.json", "<|endoftext|>"), ("llama2.json", "<s>")):
        whole = Tokenizer.from_file(os.path.join(work, name))
        out4 = os.path.join(work, "out_" + name)
        r = run(["--tokenizer", os.path.join(work, name), "--text", os.path.join(work, "mixed.txt"), "--out", out4,
                 "--val-fraction", "0", "--shard-tokens", str(10**8)])
        check(r.returncode == 0, f"{name}: {r.stderr}")
        if r.returncode == 0:
            _, t = read_shard(os.path.join(out4, "data_train_000000.bin"))
            want = [whole.token_to_id(doc_token)] + whole.encode(mixed, add_special_tokens=False).ids
            first = next((i for i, (a, b) in enumerate(zip(t.tolist(), want)) if a != b), min(len(t), len(want)))
            check(t.tolist() == want, f"{name}: the pieces' {len(t)} tokens differ from the whole file's {len(want)} "
                                      f"from token {first}: {t[first:first + 4].tolist()} against {want[first:first + 4]}")

    # Above 65,536 entries: uint32 shards, ids above 65,535 kept.
    wide = train_tokenizer(os.path.join(work, "wide.json"), corpus, 600, extra_tokens=66000)
    check(wide.get_vocab_size() > 65536, f"wide vocabulary {wide.get_vocab_size()}")
    wide_docs = [words_text(rng, 800) + " <w65999> <w12> " for _ in range(2)]
    for i, t in enumerate(wide_docs):
        open(os.path.join(work, f"w{i}.txt"), "w", encoding="utf-8").write(t)
    out3 = os.path.join(work, "out_wide")
    r = run(["--tokenizer", os.path.join(work, "wide.json"), "--text", os.path.join(work, "w0.txt"),
             os.path.join(work, "w1.txt"), "--out", out3, "--val-fraction", "0.5"])
    check(r.returncode == 0, f"wide: {r.stderr}")
    if r.returncode == 0:
        _, stream = prepared(out3, wide, wide_docs, 10**8, 20240801)
        check(max(stream) == wide.token_to_id("<w65999>") and max(stream) > 65535, f"largest id {max(stream)}")

    # Bad input: one line naming the file, exit 2.
    bad = os.path.join(work, "bad.json")
    open(bad, "w").write("{not json")
    r = run(["--tokenizer", bad, "--text", os.path.join(work, "a.txt"), "--out", os.path.join(work, "o4")])
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and f"error: {bad}: not a tokenizer.json" in r.stderr,
          f"unparsable tokenizer: rc {r.returncode}: {r.stderr}")
    r = run(["--tokenizer", os.path.join(work, "tokenizer.json"), "--text", os.path.join(work, "missing.txt"),
             "--out", os.path.join(work, "o5")])
    check(r.returncode == 2 and "error: --text = " + os.path.join(work, "missing.txt") + ": no such file" in r.stderr,
          f"missing input: rc {r.returncode}: {r.stderr}")
    open(os.path.join(work, "latin1.txt"), "wb").write(b"caf\xe9\n")
    r = run(["--tokenizer", os.path.join(work, "tokenizer.json"), "--text", os.path.join(work, "latin1.txt"),
             "--out", os.path.join(work, "o6")])
    check(r.returncode == 2 and os.path.join(work, "latin1.txt") + ":byte 3 = 0xe9: the text is not UTF-8" in r.stderr,
          f"not UTF-8: rc {r.returncode}: {r.stderr}")

if failures:
    print(f"prepare_data_test: {len(failures)} failure(s)")
    sys.exit(1)
print("prepare_data_test: ok")
