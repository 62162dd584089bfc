#!/usr/bin/env python3
"""Turns a Llama-architecture GGUF file (llama.cpp's format) into the folder Hugging Face's
save_pretrained writes: model.safetensors (fp32), config.json (LlamaForCausalLM) and tokenizer.json
(byte-level BPE rebuilt from the GGUF's vocabulary and merges), which `zerotrain --init-from`,
`zerotrain sample`, `scripts/prepare_data.py` and transformers read as they are.

Why a script on the `gguf` package and not a GGUF reader in the importer: the file is quantized
(SmolLM2-135M's: Q4_1 blocks, a Q8_0 embedding), and llama.cpp's own Python reader dequantizes every
block format it defines; our importer reads the formats training writes (F32, BF16, F16, F64) and
stays that narrow. The conversion takes seconds and happens once, into a cache.

What changes on the way (tests/real/smollm2_test.py checks the result against a forward written from
transformers' Llama math): names (blk.N.attn_q -> model.layers.N.self_attn.q_proj, ...), the
dimensions (GGUF lists them innermost first; numpy's shape is already HF's [out, in]), and the rows
of attn_q and attn_k, which llama.cpp's converter permuted for its interleaved RoPE: they go back to
the rotate-half order HF and zerotrain use. A tied model (no output.weight) stays tied.

Usage: gguf_to_hf_llama.py MODEL.gguf OUT_DIR   (run with the test virtualenv: .venv-test/bin/python3)
"""
import json
import os
import sys

import numpy as np


def fail(message):
    raise SystemExit(f"gguf_to_hf_llama: {message}")


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is None:
            fail(f"{reader.path}: no key {key} (is it a Llama GGUF?)")
        return default
    return f.contents()


HF_NAMES = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def hf_name(name):
    if name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if name == "output_norm.weight":
        return "model.norm.weight"
    if name == "output.weight":
        return "lm_head.weight"
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in HF_NAMES and parts[3] == "weight":
        return f"model.layers.{parts[1]}.{HF_NAMES[parts[2]]}.weight"
    if name.endswith("rope_freqs.weight"):
        return None  # llama3 frequency factors: config.json's rope_scaling says the same
    fail(f"tensor {name}: no Hugging Face Llama name for it")


def unpermute(w, heads):
    """llama.cpp's converter interleaves the two halves of each head's rows; undo it."""
    rows, cols = w.shape
    return w.reshape(heads, rows // heads // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def tokenizer_json(reader):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    if field(reader, "tokenizer.ggml.model") != "gpt2":
        fail("only byte-level BPE vocabularies (tokenizer.ggml.model gpt2) are rebuilt")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    types = field(reader, "tokenizer.ggml.token_type", [1] * len(tokens))
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    pre = field(reader, "tokenizer.ggml.pre", "default")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if pre == "smollm":  # SmolLM's: every digit its own piece, then GPT-2's regex
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    elif pre in ("default", "gpt-2"):
        tok.pre_tokenizer = byte_level
    else:
        fail(f"tokenizer.ggml.pre {pre}: this pre-tokenizer is not rebuilt here")
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, kind in zip(tokens, types) if kind == 3])  # control tokens
    return tok


def main(src, out):
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from safetensors.numpy import save_file

    reader = GGUFReader(src)
    if field(reader, "general.architecture") != "llama":
        fail(f"{src}: general.architecture is {field(reader, 'general.architecture')}, not llama")
    heads = int(field(reader, "llama.attention.head_count"))
    kv_heads = int(field(reader, "llama.attention.head_count_kv", heads))
    tensors = {}
    for t in reader.tensors:
        name = hf_name(t.name)
        if name is None:
            continue
        w = np.ascontiguousarray(dequantize(t.data, t.tensor_type).astype(np.float32))
        if t.name.endswith("attn_q.weight"):
            w = unpermute(w, heads)
        elif t.name.endswith("attn_k.weight"):
            w = unpermute(w, kv_heads)
        tensors[name] = w
    tied = "lm_head.weight" not in tensors
    vocab, dim = tensors["model.embed_tokens.weight"].shape
    eps = float(f"{float(field(reader, 'llama.attention.layer_norm_rms_epsilon')):.6g}")  # the float32's decimal
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "mlp_bias": False, "hidden_act": "silu", "pretraining_tp": 1,
        "hidden_size": int(dim), "intermediate_size": int(field(reader, "llama.feed_forward_length")),
        "num_hidden_layers": int(field(reader, "llama.block_count")), "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "head_dim": int(field(reader, "llama.rope.dimension_count", dim // heads)),
        "max_position_embeddings": int(field(reader, "llama.context_length")), "rms_norm_eps": eps,
        "rope_theta": float(field(reader, "llama.rope.freq_base", 10000.0)), "rope_scaling": None,
        "tie_word_embeddings": tied, "vocab_size": int(vocab), "initializer_range": 0.02,
        "bos_token_id": int(field(reader, "tokenizer.ggml.bos_token_id", 1)),
        "eos_token_id": int(field(reader, "tokenizer.ggml.eos_token_id", 2)),
        "torch_dtype": "float32", "use_cache": True,
    }
    os.makedirs(out, exist_ok=True)
    partial = os.path.join(out, "model.safetensors.partial")
    save_file(tensors, partial, metadata={"format": "pt"})
    os.replace(partial, os.path.join(out, "model.safetensors"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    tokenizer_json(reader).save(os.path.join(out, "tokenizer.json"))
    params = sum(w.size for w in tensors.values())
    print(f"gguf_to_hf_llama: {src} -> {out}: {len(tensors)} tensors, {params} parameters "
          f"({config['num_hidden_layers']} layers, {heads} heads on {kv_heads} key/value heads, vocabulary {vocab}, "
          f"{'tied' if tied else 'untied'})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
