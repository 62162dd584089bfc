"""One SentencePiece-style tokenizer.json from the fixture that tests/data/sentencepiece_bpe_reference.py
writes (tests/model/data/sentencepiece_bpe): the base file with a variant's normalizer, pre-tokenizer,
decoder, post-processor, added tokens and model keys, as tests/model/test_bpe_tokenizer.cpp builds
them. json only, so any Python the tests run under can import it."""
import json
import os

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model", "data", "sentencepiece_bpe")


def expected():
    """The fixture's expected.json: texts and, per variant, its parts and tokenizers' ids."""
    return json.load(open(os.path.join(FIXTURES, "expected.json"), encoding="utf-8"))


def variant_tokenizer(variant):
    """The tokenizer.json (a dict) of one variant of expected()["variants"]."""
    tokenizer = json.load(open(os.path.join(FIXTURES, "tokenizer.json"), encoding="utf-8"))
    for key in ("normalizer", "pre_tokenizer", "decoder", "post_processor", "added_tokens"):
        tokenizer[key] = variant[key]
    tokenizer["model"].update(variant["model_changes"])
    return tokenizer


def variant_named(name, reference=None):
    """The variant called name (llama2_legacy, metaspace_first, ...) of expected.json."""
    return next(v for v in (reference or expected())["variants"] if v["name"] == name)
