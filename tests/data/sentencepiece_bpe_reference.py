#!/usr/bin/env python3
"""Makes the fixtures of the SentencePiece-style tests in tests/model/test_bpe_tokenizer.cpp with the
tokenizers package (the test virtualenv's, pinned in scripts/requirements-test.txt): a BPE model laid
out as Llama-2's, Mistral's and TinyLlama's tokenizer.json are (the control tokens <unk> <s> </s> at
ids 0-2, the 256 byte tokens <0x00>..<0xFF> at ids 3-258 as plain vocabulary entries, byte_fallback
and fuse_unk on, words starting with the metaspace U+2581), trained here on the generated English
text of bpe_tokenizer_reference.py with a small alphabet so that many characters fall back to bytes;
and expected.json: for each variant (the legacy normalizer Prepend + Replace with no pre-tokenizer,
the Metaspace pre-tokenizer with each prepend scheme and split, the Metaspace decoder, byte_fallback
or fuse_unk off, added tokens matched in the raw and in the normalized text), the ids tokenizers
gives for every text, with and without the post-processor's special tokens, and the decoded text.
The texts are the fixed list of bpe_tokenizer_reference.py plus random strings (seeded) mixing
English words, digits, whitespace runs, accented letters, CJK, emoji, combining marks and
characters that only byte fallback can spell. Nothing is fetched. The fixtures are committed, so the
C++ test needs no Python; run this again only to change them.

Usage: .venv-test/bin/python3 tests/data/sentencepiece_bpe_reference.py tests/model/data/sentencepiece_bpe
"""
import json
import os
import random
import sys

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bpe_tokenizer_reference import TEXTS, WORDS, corpus_text  # noqa: E402

SPACE = "\u2581"
CONTROL = ["<unk>", "<s>", "</s>"]
BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]

# Characters for the random strings: some in the trained alphabet, many not (byte fallback or <unk>).
POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "0123456789",
    " \t\n\r" + " " * 8,
    ".,;:!?'\"()[]{}-_/\\@#$%^&*+=<>|~`",
    "éèêëàâäôöûüùçñßÉÀÖÜ",
    "日本語中文模型の学習",
    "😀🚀👍🏽🎉🤖",
    "\u0301\u0308\u200d\ufe0f",
    "\u00a0\u3000\u2028\u2581",
    "\U0001F9EA\u2603\u2764\u0416\u03A9\u05D0\u0627\uAC00",
]
LITERALS = ["<s>", "</s>", "<unk>", "<0x41>", "<mask>", " <mask> ", "stage", " stage"]


def random_text(rng):
    parts = []
    for _ in range(rng.randint(0, 14)):
        pick = rng.random()
        if pick < 0.35:
            parts.append(rng.choice(WORDS))
        elif pick < 0.45:
            parts.append(rng.choice(LITERALS))
        else:
            pool = rng.choice(POOLS)
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 4))))
        parts.append(rng.choice(["", " ", " ", " ", "  ", "\n"]))
    return "".join(parts)


def train(corpus_lines):
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=CONTROL, limit_alphabet=64, show_progress=False)
    tok.train_from_iterator(corpus_lines, trainer)
    spec = json.loads(tok.to_str())
    # Llama-2's layout: the byte tokens right after the control tokens, as plain vocabulary entries.
    trained = sorted(((t, i) for t, i in spec["model"]["vocab"].items() if t not in CONTROL), key=lambda e: e[1])
    vocab = {t: i for i, t in enumerate(CONTROL + BYTE_TOKENS)}
    for token, _ in trained:
        vocab.setdefault(token, len(vocab))
    spec["model"]["vocab"] = vocab
    for added in spec["added_tokens"]:
        added["id"] = vocab[added["content"]]
    return spec


LEGACY_NORMALIZER = normalizers.Sequence([normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)])
LLAMA_DECODER = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
BOS_TEMPLATE = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])


def variants():
    """(name, normalizer, pre_tokenizer, decoder, model changes, added tokens beyond the control ones)."""
    def metaspace(scheme, split):
        return pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme=scheme, split=split)

    added = [AddedToken("<mask>", lstrip=True, rstrip=True, special=True, normalized=False),
             AddedToken("stage", single_word=False, special=False, normalized=True)]
    return [
        # Llama-2, TinyLlama, Mistral v0.1 as published: the normalizer writes the spaces.
        ("llama2_legacy", LEGACY_NORMALIZER, None, LLAMA_DECODER, {}, []),
        # Llama-2 files written by newer transformers (legacy=False): Metaspace, prefix on the first piece.
        ("metaspace_first", None, metaspace("first", False), LLAMA_DECODER, {}, []),
        # tokenizers' own SentencePieceBPETokenizer: Metaspace split at every space, Metaspace decoder.
        ("metaspace_always_split", None, metaspace("always", True), decoders.Metaspace(SPACE, "always", True), {}, []),
        ("metaspace_never_split", None, metaspace("never", True), decoders.Metaspace(SPACE, "never", True), {}, []),
        ("no_byte_fallback", LEGACY_NORMALIZER, None, LLAMA_DECODER, {"byte_fallback": False}, []),
        ("no_fuse_unk", LEGACY_NORMALIZER, None, LLAMA_DECODER, {"byte_fallback": False, "fuse_unk": False}, []),
        ("added_tokens", LEGACY_NORMALIZER, None, LLAMA_DECODER, {}, added),
    ]


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(23)
    corpus = corpus_text(rng, 30000).split("\n")
    base = train(corpus)
    base["normalizer"] = None
    base["pre_tokenizer"] = None
    base["decoder"] = None
    base["post_processor"] = None
    base_path = os.path.join(out_dir, "tokenizer.json")
    with open(base_path, "w", encoding="utf-8") as f:
        json.dump(base, f, ensure_ascii=False, separators=(",", ":"))

    texts = TEXTS + ["<s>Hello world</s>", "before<s>after", "<0x41> is not a byte", "\u2581already marked",
                     "  <s>  ", "stage<mask>stage", "x <mask> y"] + [random_text(rng) for _ in range(400)]
    expected = {"texts": texts, "variants": []}
    for name, normalizer, pre_tokenizer, decoder, model_changes, added in variants():
        tok = Tokenizer.from_file(base_path)
        tok.normalizer = normalizer
        tok.pre_tokenizer = pre_tokenizer
        tok.decoder = decoder
        tok.post_processor = BOS_TEMPLATE
        if model_changes:
            spec = json.loads(tok.to_str())
            spec["model"].update(model_changes)
            tok = Tokenizer.from_str(json.dumps(spec))
        if added:
            tok.add_tokens(added)
        spec = json.loads(tok.to_str())
        ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        with_special = [tok.encode(t, add_special_tokens=True).ids for t in texts]
        decoded = [tok.decode(i, skip_special_tokens=False) for i in ids]
        expected["variants"].append({"name": name, "normalizer": spec["normalizer"],
                                     "pre_tokenizer": spec["pre_tokenizer"], "decoder": spec["decoder"],
                                     "post_processor": spec["post_processor"], "model_changes": model_changes,
                                     "added_tokens": spec["added_tokens"], "ids": ids,
                                     "ids_with_special_tokens": with_special, "decoded": decoded})
    with open(os.path.join(out_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    fallback = sum(1 for v in expected["variants"][:1] for ids in v["ids"] for i in ids if 3 <= i < 259)
    sizes = {n: os.path.getsize(os.path.join(out_dir, n)) for n in sorted(os.listdir(out_dir))}
    print(f"wrote {out_dir}: {sizes}; {len(texts)} texts, {fallback} byte-fallback ids in llama2_legacy")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
