#!/usr/bin/env python3
"""Tokenizes text into llm.c-format token shards that `zerotrain --data DIR` reads.

    prepare_data.py --tokenizer PATH --text FILE|DIR [FILE|DIR ...] --out DIR
                    [--shard-tokens N] [--val-fraction F] [--text-field KEY] [--doc-token TOKEN] [--name NAME]

PATH is a tokenizer.json (a Hugging Face model folder's), GPT-2's vocab.json (merges.txt beside it),
or a folder holding either. Inputs are text files, JSONL files (*.jsonl: one document per line, its
text under --text-field) or folders of them (*.txt, *.md, *.jsonl, recursively, in name order). A
text file is one document. Every document is preceded by the document token (GPT-2's <|endoftext|>,
Llama-3's <|begin_of_text|>, ...), as llm.c writes them.

Output: NAME_val_000000.bin ... (the first --val-fraction of the input bytes) and NAME_train_000000.bin
..., each --shard-tokens tokens (the last of each split shorter), in llm.c's format: a 256 x int32
header (magic 20240520 version 1 with uint16 tokens when every id fits, 20240801 version 7 with
uint32 tokens otherwise; header[2] the token count), then the tokens; and manifest.json (tokenizer
name and sha256, vocabulary size, token width, counts per shard and split). Nothing is downloaded.

Bad input (a tokenizer that does not parse, an input that is missing or not UTF-8, a JSONL line
without the text field) is one error line naming the file, the place and the fix; exit status 2.
"""

import argparse
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MAGIC_U16, VERSION_U16 = 20240520, 1
MAGIC_U32, VERSION_U32 = 20240801, 7
HEADER_INTS = 256
DOC_TOKENS = ("<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>", "<s>", "</s>")
TEXT_SUFFIXES = (".txt", ".md", ".jsonl")
PIECE_BYTES = 1 << 16   # a text file is encoded in pieces of about this size, cut at a line start (see piece_cut)
LONGEST_PIECE = 1 << 22  # past this without such a line start, a piece is cut after any line end
BATCH_BYTES = 1 << 22   # text handed to the tokenizer at once (encoded in parallel)


class UserError(Exception):
    def __init__(self, where, value, problem, fix):
        super().__init__(f"error: {where}" + (f" = {value}" if value else "") + f": {problem}. Fix: {fix}")


def load_tokenizer(path):
    """The tokenizer and the files it came from (hashed into the manifest)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "tokenizer.json")):
            path = os.path.join(path, "tokenizer.json")
        elif os.path.isfile(os.path.join(path, "vocab.json")):
            path = os.path.join(path, "vocab.json")
        else:
            raise UserError("--tokenizer", path, "the folder holds neither tokenizer.json nor vocab.json",
                            "point --tokenizer at a Hugging Face model folder or a tokenizer.json file")
    if not os.path.isfile(path):
        raise UserError("--tokenizer", path, "no such file", "give the path of a tokenizer.json or vocab.json")
    if os.path.basename(path) == "vocab.json":
        merges = os.path.join(os.path.dirname(path), "merges.txt")
        if not os.path.isfile(merges):
            raise UserError(path, "", "GPT-2's vocab.json needs merges.txt in the same folder",
                            "put merges.txt beside vocab.json, or give a tokenizer.json")
        try:  # GPT-2's tokenizer: byte-level BPE without a prefix space
            tok = Tokenizer(models.BPE.from_file(path, merges))
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = decoders.ByteLevel()
            tok.add_special_tokens([t for t in DOC_TOKENS if tok.token_to_id(t) is not None])
        except Exception as e:  # the library's parse errors carry no type of their own
            raise UserError(path, "", f"cannot read vocab.json + merges.txt ({e})",
                            "use GPT-2's vocab.json and merges.txt as published, unmodified")
        return tok, [path, merges]
    try:
        tok = Tokenizer.from_file(path)
    except Exception as e:
        raise UserError(path, "", f"not a tokenizer.json the tokenizers library can parse ({e})",
                        "give the tokenizer.json of a Hugging Face model folder (or vocab.json + merges.txt)")
    return tok, [path]


def sha256_of(paths):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def list_inputs(args):
    files = []
    for item in args:
        if os.path.isdir(item):
            found = []
            for root, dirs, names in os.walk(item):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(root, n) for n in names if n.endswith(TEXT_SUFFIXES) and not n.startswith(".")]
            if not found:
                raise UserError("--text", item, "the folder holds no *.txt, *.md or *.jsonl file",
                                "put the text files there, or name them one by one")
            files += sorted(found)
        elif os.path.isfile(item):
            files.append(item)
        else:
            raise UserError("--text", item, "no such file or folder", "check the path")
    return files


def decode(path, offset, raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}:byte {offset + e.start}", f"0x{raw[e.start]:02x}", "the text is not UTF-8",
                        "convert the file to UTF-8 (e.g. iconv -t UTF-8)")


def is_space_or_cut(char_bytes):
    """True unless char_bytes is one whole UTF-8 character that is not whitespace."""
    try:
        char = char_bytes.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return len(char) != 1 or char.isspace()


def piece_cut(data, start, glued):
    """Where a piece of data may end, at or after start, so that the pieces encode as the whole file
    does: after a line end between two characters that are not whitespace (Unicode's, "word\\nWord").
    A run of whitespace at the end of a text is one token under GPT-2's pattern where the whole file
    splits it ("\\n\\n", "\\r\\n", "\\n  "), so no run is cut; nor is a line that starts with an added
    token that takes the whitespace before it (lstrip) or ends with one that takes the whitespace
    after it (rstrip): glued = (those contents, these contents), as bytes. The next piece is encoded
    after a newline whose ids are then taken off, so that a mark a tokenizer puts at the start of a
    text (Llama-2's "\u2581") is not put there. 0 where data has no such point."""
    lstrip, rstrip = glued
    end = len(data) - 1
    while True:
        at = data.rfind(b"\n", max(1, start), end)
        if at < 0:
            return 0
        end = at
        before, after = at - 1, at + 2  # data[before:at] and data[at + 1:after]: whole characters
        while before > 0 and 0x80 <= data[before] < 0xC0 and at - before < 4:
            before -= 1
        while after < len(data) and 0x80 <= data[after] < 0xC0 and after - at <= 4:
            after += 1
        if is_space_or_cut(data[before:at]) or is_space_or_cut(data[at + 1:after]):
            continue
        if any(t.startswith(data[at + 1:at + 1 + len(t)]) for t in lstrip) or any(data.endswith(t, 0, at) for t in rstrip):
            continue  # (a token cut short by the end of data may be one)
        return at + 1


def text_pieces(path, until_val, glued):
    """(text, starts_document, bytes consumed) for one text file, in pieces cut where piece_cut
    allows, or after any line end once LONGEST_PIECE bytes have no such point. The validation
    boundary (until_val(): the input bytes still to go before it) ends a piece at the first line end
    from it, allowed or not: the two splits are separate token streams."""
    with open(path, "rb") as f:
        offset, rest, first = 0, b"", True
        while True:
            to_val = int(until_val())
            want = to_val - len(rest)
            block = f.read(min(PIECE_BYTES, want) if want > 0 else PIECE_BYTES)
            data = rest + block
            if not block:
                if data or first:
                    yield decode(path, offset, data), first, len(data)
                return
            if 0 < to_val < len(data):  # data reaches past the validation boundary
                cut = data.find(b"\n", to_val - 1) + 1
            else:
                cut = piece_cut(data, len(rest) - 8, glued)  # rest had none, save near its end
                if cut == 0 and len(data) > LONGEST_PIECE:  # e.g. CRLF line ends: cut after one, as
                    cut = data.rfind(b"\n") + 1             # any tool that encodes a corpus in parts
            if cut == 0:  # one long line, or no line start to cut at yet: read on
                rest = data
                continue
            piece, rest = data[:cut], data[cut:]
            yield decode(path, offset, piece), first, len(piece)
            offset += len(piece)
            first = False


def jsonl_pieces(path, field):
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                yield None, False, len(line)
                continue
            try:
                doc = json.loads(line)
            except ValueError as e:
                raise UserError(f"{path}:line {lineno}", "", f"not a JSON object ({e})", "write one JSON object per line")
            if not isinstance(doc, dict) or not isinstance(doc.get(field), str):
                raise UserError(f"{path}:line {lineno}", "", f"no string field \"{field}\"",
                                "pass --text-field with the key that holds each document's text")
            yield doc[field], True, len(line)


class ShardWriter:
    """Cuts one split's token stream into shards of exactly `size` tokens (the last one shorter)."""

    def __init__(self, out, name, split, size, dtype, magic, version):
        self.out, self.name, self.split, self.size = out, name, split, size
        self.dtype, self.magic, self.version = dtype, magic, version
        self.parts, self.held, self.shards = [], 0, []

    def add(self, tokens):
        self.parts.append(tokens)
        self.held += len(tokens)
        while self.held >= self.size:
            self._flush(self.size)

    def close(self):
        if self.held:
            self._flush(self.held)

    def _flush(self, n):
        stream = np.concatenate(self.parts) if len(self.parts) > 1 else self.parts[0]
        head, tail = stream[:n], stream[n:]
        self.parts, self.held = ([tail] if len(tail) else []), len(tail)
        name = f"{self.name}_{self.split}_{len(self.shards):06d}.bin"
        header = np.zeros(HEADER_INTS, dtype=np.int32)
        header[0], header[1], header[2] = self.magic, self.version, n
        tmp = os.path.join(self.out, name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(header.tobytes())
            f.write(head.astype(self.dtype, copy=False).tobytes())
        os.replace(tmp, os.path.join(self.out, name))
        self.shards.append({"file": name, "split": self.split, "tokens": int(n)})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokenizer", required=True, help="tokenizer.json, GPT-2's vocab.json, or a folder with either")
    p.add_argument("--text", required=True, nargs="+", help="text or JSONL files, or folders of them")
    p.add_argument("--out", required=True, help="output folder for the shards and manifest.json")
    p.add_argument("--shard-tokens", type=int, default=100_000_000, help="tokens per shard (default 1e8, llm.c's)")
    p.add_argument("--val-fraction", type=float, default=0.05,
                   help="the first this fraction of the input bytes becomes the validation split")
    p.add_argument("--text-field", default="text", help="the key of a JSONL line's text")
    p.add_argument("--doc-token", help="the token before every document (default: the first of "
                   + ", ".join(DOC_TOKENS) + " the vocabulary has)")
    p.add_argument("--name", default="data", help="shard name prefix (NAME_train_000000.bin)")
    a = p.parse_args(argv)
    if a.shard_tokens < 1 or a.shard_tokens > 2**31 - 1:
        raise UserError("--shard-tokens", str(a.shard_tokens), "must be between 1 and 2^31 - 1 (an int32 count)",
                        "use e.g. 100000000")
    if not 0.0 <= a.val_fraction < 1.0:
        raise UserError("--val-fraction", str(a.val_fraction), "must be in [0, 1)", "use e.g. 0.05")

    tok, tok_files = load_tokenizer(a.tokenizer)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    names = [a.doc_token] if a.doc_token else list(DOC_TOKENS)
    doc_id = next((tok.token_to_id(n) for n in names if tok.token_to_id(n) is not None), None)
    if doc_id is None:
        raise UserError(tok_files[0], "", "the vocabulary has no " + " / ".join(names) + " token to put between documents",
                        "pass --doc-token with the tokenizer's end-of-text or BOS token")
    doc_name = tok.id_to_token(doc_id)
    wide = vocab > 65536
    dtype, magic, version = (np.uint32, MAGIC_U32, VERSION_U32) if wide else (np.uint16, MAGIC_U16, VERSION_U16)

    files = list_inputs(a.text)
    total_bytes = sum(os.path.getsize(f) for f in files)
    val_bytes = a.val_fraction * total_bytes
    os.makedirs(a.out, exist_ok=True)
    writers = {s: ShardWriter(a.out, a.name, s, a.shard_tokens, dtype, magic, version) for s in ("val", "train")}

    from tqdm import tqdm
    bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc="prepare_data", file=sys.stderr, disable=None)
    start, cpu_start = time.perf_counter(), time.process_time()  # process time: every thread's
    counts = {"tokens": 0, "documents": 0}
    consumed = 0  # input bytes read so far (the pieces' order decides the split)
    batch, batch_bytes = [], 0  # (text, starts_document, split)

    # Batches are encoded on a worker thread (the tokenizers package releases the GIL and encodes a
    # batch on every core) while this thread turns the previous batch's ids into shard arrays: the
    # conversion no longer leaves the cores idle between batches.
    pool = ThreadPoolExecutor(max_workers=1)
    pending = []  # at most one (future, batch), encoding

    # A piece that continues a document follows a line end: it is encoded after one, and the
    # newline's own ids are taken off, so that a tokenizer that marks the start of a text (Llama-2's
    # Prepend("▁") normalizer, Metaspace's prefix) marks the document's start only.
    newline_ids = tok.encode("\n", add_special_tokens=False).ids
    added = tok.get_added_tokens_decoder().values()
    glued = (tuple(t.content.encode() for t in added if t.lstrip), tuple(t.content.encode() for t in added if t.rstrip))

    def encode(batch):
        texts = [t if starts else "\n" + t for t, starts, _ in batch]
        pending.append((pool.submit(tok.encode_batch_fast, texts, add_special_tokens=False), batch))
        if len(pending) > 1:
            write(*pending.pop(0))

    def write(future, batch):
        encs = future.result()
        for (text, starts, split), e in zip(batch, encs):
            ids = e.ids
            if not starts:
                if ids[:len(newline_ids)] == newline_ids:
                    ids = ids[len(newline_ids):]
                else:  # a vocabulary where "\n" merges with what follows: the piece alone (this cut's
                    ids = tok.encode(text, add_special_tokens=False).ids  # tokens may differ from the whole file's)
            if starts:
                ids = [doc_id] + ids
                counts["documents"] += 1
            if ids:
                writers[split].add(np.array(ids, dtype=np.int64))
                counts["tokens"] += len(ids)
        elapsed = max(time.perf_counter() - start, 1e-9)
        bar.set_postfix_str(f"{counts['tokens']:,} tokens, {counts['tokens'] / elapsed / 1e6:.2f} M tokens/s")

    for path in files:
        pieces = (jsonl_pieces(path, a.text_field) if path.endswith(".jsonl")
                  else text_pieces(path, lambda: val_bytes - consumed, glued))
        for text, starts, n in pieces:
            split = "val" if consumed < val_bytes else "train"
            consumed += n
            bar.update(n)
            if text is None:
                continue
            batch.append((text, starts, split))
            batch_bytes += n
            if batch_bytes >= BATCH_BYTES:
                encode(batch)
                batch, batch_bytes = [], 0
    if batch:
        encode(batch)
    while pending:
        write(*pending.pop(0))
    pool.shutdown()
    for w in writers.values():
        w.close()
    bar.close()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    split_tokens = {s: sum(x["tokens"] for x in w.shards) for s, w in writers.items()}
    if split_tokens["train"] == 0:
        raise UserError("--text", " ".join(a.text), "no tokens left for the train split",
                        "give more text or a smaller --val-fraction")
    manifest = {
        "format": "llm.c token shards",
        "magic": magic, "version": version, "token_bytes": int(np.dtype(dtype).itemsize),
        "tokenizer": {"name": os.path.basename(os.path.dirname(os.path.abspath(tok_files[0]))) + "/" +
                              os.path.basename(tok_files[0]),
                      "files": [os.path.abspath(f) for f in tok_files], "sha256": sha256_of(tok_files)},
        "vocab_size": vocab,
        "doc_token": {"text": doc_name, "id": doc_id, "placed": "before every document"},
        "inputs": [os.path.abspath(f) for f in files], "input_bytes": total_bytes,
        "documents": counts["documents"], "val_fraction": a.val_fraction,
        "train_tokens": split_tokens["train"], "val_tokens": split_tokens["val"],
        "shards": writers["val"].shards + writers["train"].shards,
        "seconds": round(seconds, 3), "cpu_seconds": round(cpu_seconds, 3),
        "tokens_per_s": round(counts["tokens"] / max(seconds, 1e-9)),
    }
    tmp = os.path.join(a.out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(a.out, "manifest.json"))
    print(f"prepare_data: {len(files)} input(s), {total_bytes / 1e6:.1f} MB, {counts['documents']} documents -> "
          f"{a.out}: {split_tokens['train']:,} train / {split_tokens['val']:,} val tokens in "
          f"{len(manifest['shards'])} shard(s), vocab {vocab} ({'uint32' if wide else 'uint16'}), "
          f"{seconds:.2f} s, {manifest['tokens_per_s'] / 1e6:.2f} M tokens/s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as e:
        print(f"prepare_data: {e}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:
        print(f"prepare_data: error: {e.filename or ''}: {e.strerror or e}. Fix: check the path and its permissions",
              file=sys.stderr)
        sys.exit(2)
