#!/usr/bin/env python3
"""Makes the fixtures of tests/model/test_bpe_tokenizer.cpp with the tokenizers package (the test
virtualenv's, pinned in scripts/requirements-test.txt): a byte-level BPE tokenizer (vocabulary 600,
special token <|endoftext|>) trained here on a generated English text with digits, punctuation,
newlines, runs of spaces and some non-ASCII, saved as tokenizer.json and as GPT-2's vocab.json +
merges.txt; and expected.json, the ids and the decoded text tokenizers gives for a list of test
strings under several variants of that tokenizer (the pre-tokenizer, Digits steps included, the added tokens, the model's
ignore_merges with an entry the merges never make), which the C++ test applies to tokenizer.json
itself. Nothing is fetched. The fixtures are committed, so the C++ test needs no Python; run this
again only to change them (the same tokenizers version makes the same files).

Usage: .venv-test/bin/python3 tests/data/bpe_tokenizer_reference.py tests/model/data/bpe
"""
import json
import os
import random
import sys
import tempfile

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

WORDS = ["the", "model", "shard", "token", "window", "rank", "loss", "step", "gradient", "zero", "stage", "data",
         "of", "a", "in", "is", "and", "to", "it's", "don't", "we're", "they've", "I'm", "you'll", "he'd", "The",
         "Optimizer", "state", "partition", "memory", "GPU", "offload", "naïve", "café", "über", "Müller", "élan",
         "日本語", "中文", "模型", "😀", "🚀", "—", "ok.", "(see", "below)", "e.g.,", "3.14", "2024", "1,000", "42%",
         "x=3;", "#1", "\"quoted\"", "end!", "why?"]

# Made-up words from English syllables, so that the trainer finds enough pairs for its 600 entries.
SYLLABLES = ["con", "ver", "gen", "tion", "al", "ing", "pre", "pro", "ment", "ed", "er", "re", "ca", "lo", "di", "ble",
             "un", "im", "par", "ti", "mo", "del", "sta", "ter", "ous", "ly", "ness", "ize", "mi", "na", "tu", "ra"]

TEXTS = [
    "Hello world",
    "the model and the optimizer state",
    " leading space",
    "trailing space ",
    "  two leading spaces",
    "runs   of    spaces  inside",
    "   ",
    " ",
    "",
    "a",
    "\n",
    "\n\n",
    "line one\nline two\n\nline four\n",
    "tabs\tand\r\nCRLF\r\n",
    "numbers 12345 and 3.14159, 1,000,000 and 2024-06-01",
    "punctuation!? (parens) [brackets] {braces} -- dashes... \"quotes\" 'single'",
    "contractions: don't, I'm, they're, we've, you'll, he'd, it's",
    "SHOUTED: DON'T, I'M, IT'S",
    "café naïve über Müller élan",
    "日本語の中文模型",
    "emoji 😀🚀 and 👍🏽 skin tone",
    "non\u00a0breaking\u3000space",
    "combining e\u0301 accent",
    "<|endoftext|>",
    "before<|endoftext|>after",
    "text <|endoftext|> more text",
    "<|endoftext|><|endoftext|>",
    "a partial <|endoftext and <|end",
    "supercalifragilisticexpialidocious",
    "aaaaaaaaaaaaaaaaaaaaaaaa",
    "C++/CUDA ZeRO-3 stage_3 lr=3e-4",
    "end!\n\nnext HE'S 2024 1000000 ok",
    "the [MASK]  token and [MASK]",
    "café [MASK] x",
    "\u00a0[MASK]\u3000y",
    "x [MASK] [MASK] y",
    "stage staged backstage stage3 stage, stage",
    "é stage éstage [MASK]stage",
    "x\u00b2stage stage\u0301 stage_ \u0661stage",
]


def corpus_text(rng, n_words):
    lines, line = [], []
    for _ in range(n_words):
        pick = rng.random()
        if pick < 0.5:
            line.append(rng.choice(WORDS))
        elif pick < 0.9:
            line.append("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))))
        else:
            line.append(str(rng.randint(0, 10 ** rng.randint(1, 6))))
        if rng.random() < 0.07:
            indent = " " * rng.choice([0] * 8 + [1, 4])
            lines.append(indent + (" " * rng.choice([1, 1, 1, 2, 3])).join(line))
            line = []
            if rng.random() < 0.2:
                lines.append("")
    return "\n".join(lines) + "\n"


def variants():
    """(name, pre_tokenizer, added tokens beyond <|endoftext|>, ignore_merges, vocabulary entries added,
    round_trips) the test checks;
    round_trips: every text decodes back to itself (not so with a prefix space, which decodes as a space,
    nor with added tokens that take the spaces around them)."""
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    llama3 = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated", invert=False),
                                      pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    added = [AddedToken("[MASK]", lstrip=True, rstrip=True, special=True),
             AddedToken("stage", single_word=True, special=False)]
    # Every entry of a trained vocabulary is what the merges make of it, so ignore_merges changes
    # nothing until the vocabulary has a word the merges do not reach (" backstage", id 600).
    unreachable = {"\u0120backstage": 600}
    return [("byte_level", byte_level, [], False, {}, True),
            ("prefix_space", pre_tokenizers.ByteLevel(add_prefix_space=True), [], False, {}, False),
            ("llama3_split", llama3, [], False, {}, True),
            ("added_tokens", byte_level, added, False, {}, False),
            ("ignore_merges", byte_level, [], True, unreachable, True),
            # SmolLM2's: each digit its own piece, then ByteLevel with GPT-2's regex; and runs of digits.
            ("digits_individual", pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                           byte_level]), [], False, {}, True),
            ("digits_grouped", pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False),
                                                        byte_level]), [], False, {}, True)]


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write(corpus_text(rng, 30000))
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train([corpus], trainer)
        base_path = os.path.join(out_dir, "tokenizer.json")
        tok.save(base_path, pretty=False)
        tok.model.save(out_dir)  # vocab.json, merges.txt

        expected = {"texts": TEXTS, "variants": []}
        for name, pre_tokenizer, added, ignore_merges, vocab_additions, round_trips in variants():
            variant = Tokenizer.from_file(base_path)
            variant.pre_tokenizer = pre_tokenizer
            if added:
                variant.add_tokens(added)
            if ignore_merges or vocab_additions:
                as_json = json.loads(variant.to_str())
                as_json["model"]["ignore_merges"] = ignore_merges
                as_json["model"]["vocab"].update(vocab_additions)
                variant = Tokenizer.from_str(json.dumps(as_json))
            as_json = json.loads(variant.to_str())
            ids = [variant.encode(t, add_special_tokens=False).ids for t in TEXTS]
            decoded = [variant.decode(text_ids, skip_special_tokens=False) for text_ids in ids]
            if round_trips and decoded != TEXTS:
                raise SystemExit(f"{name}: some text does not decode back to itself")
            expected["variants"].append({"name": name, "pre_tokenizer": as_json["pre_tokenizer"],
                                         "added_tokens": as_json["added_tokens"],
                                         "ignore_merges": as_json["model"]["ignore_merges"],
                                         "vocab_additions": vocab_additions, "ids": ids,
                                         "decoded": decoded, "round_trips": round_trips})
        with open(os.path.join(out_dir, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
    sizes = {n: os.path.getsize(os.path.join(out_dir, n)) for n in sorted(os.listdir(out_dir))}
    print(f"wrote {out_dir}: {sizes} ({sum(sizes.values())} bytes)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
