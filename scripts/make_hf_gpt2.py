#!/usr/bin/env python3
# make_hf_gpt2.py OUT_DIR: writes a small random GPT-2 in the Hugging Face layout (model.safetensors
# with GPT2LMHeadModel's tensor names, Conv1D weights as [in, out], the hub's unprefixed names and
# its causal-mask buffers; config.json beside it) and reference.json: fixed tokens and targets with
# the logits and loss of a numpy float64 implementation of HF's GPT-2 forward (gelu_new, LayerNorm
# eps 1e-5, tied LM head). tests/checkpoint/test_hf_import.cpp loads the weights into zerotrain's
# GPT-2 and compares. Needs numpy and safetensors (scripts/setup.sh installs pinned versions into
# .venv-test for the tests only).
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

V, C, H, L, T, B = 64, 32, 4, 2, 16, 2


def make_weights(rng):
    def normal(*shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w = {"wte.weight": normal(V, C, std=0.3), "wpe.weight": normal(T, C, std=0.3)}
    for l in range(L):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = (1.0 + normal(C, std=0.2)).astype(np.float32)
        w[p + "ln_1.bias"] = normal(C, std=0.2)
        w[p + "attn.c_attn.weight"] = normal(C, 3 * C, std=0.3)  # Conv1D: [in, out]
        w[p + "attn.c_attn.bias"] = normal(3 * C, std=0.2)
        w[p + "attn.c_proj.weight"] = normal(C, C, std=0.3)
        w[p + "attn.c_proj.bias"] = normal(C, std=0.2)
        w[p + "ln_2.weight"] = (1.0 + normal(C, std=0.2)).astype(np.float32)
        w[p + "ln_2.bias"] = normal(C, std=0.2)
        w[p + "mlp.c_fc.weight"] = normal(C, 4 * C, std=0.3)
        w[p + "mlp.c_fc.bias"] = normal(4 * C, std=0.2)
        w[p + "mlp.c_proj.weight"] = normal(4 * C, C, std=0.15)
        w[p + "mlp.c_proj.bias"] = normal(C, std=0.2)
    w["ln_f.weight"] = (1.0 + normal(C, std=0.2)).astype(np.float32)
    w["ln_f.bias"] = normal(C, std=0.2)
    return w


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def forward(w, tokens, targets):
    p = {k: v.astype(np.float64) for k, v in w.items()}
    hs = C // H
    x = p["wte.weight"][tokens] + p["wpe.weight"][:T]
    mask = np.tril(np.ones((T, T), dtype=bool))
    for l in range(L):
        q_ = f"h.{l}."
        h = layer_norm(x, p[q_ + "ln_1.weight"], p[q_ + "ln_1.bias"])
        qkv = h @ p[q_ + "attn.c_attn.weight"] + p[q_ + "attn.c_attn.bias"]
        q, k, v = np.split(qkv, 3, axis=-1)
        q, k, v = (t.reshape(B, T, H, hs).transpose(0, 2, 1, 3) for t in (q, k, v))
        att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs)
        att = np.where(mask, att, -np.inf)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ p[q_ + "attn.c_proj.weight"] + p[q_ + "attn.c_proj.bias"]
        h = layer_norm(x, p[q_ + "ln_2.weight"], p[q_ + "ln_2.bias"])
        h = gelu_new(h @ p[q_ + "mlp.c_fc.weight"] + p[q_ + "mlp.c_fc.bias"])
        x = x + h @ p[q_ + "mlp.c_proj.weight"] + p[q_ + "mlp.c_proj.bias"]
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    logits = x @ p["wte.weight"].T
    flat, tgt = logits.reshape(B * T, V), targets.reshape(-1)
    m = flat.max(-1, keepdims=True)
    logp = flat - m - np.log(np.exp(flat - m).sum(-1, keepdims=True))
    valid = tgt >= 0
    loss = -logp[np.arange(B * T)[valid], tgt[valid]].mean()
    return logits, float(loss)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(2024)
    w = make_weights(rng)
    tokens = rng.integers(0, V, size=(B, T))
    targets = rng.integers(0, V, size=(B, T))
    targets[0, 3] = -1  # ignored, as HF's -100 would be
    logits, loss = forward(w, tokens, targets)
    file_w = dict(w)
    for l in range(L):  # the hub's GPT-2 files carry the causal mask as a buffer; importers skip it
        file_w[f"h.{l}.attn.bias"] = np.tril(np.ones((T, T), dtype=np.float32)).reshape(1, 1, T, T)
    save_file(file_w, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    config = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
              "layer_norm_epsilon": 1e-5, "n_ctx": T, "n_embd": C, "n_head": H, "n_layer": L, "n_positions": T,
              "vocab_size": V, "tie_word_embeddings": True}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    ref = {"vocab": V, "dim": C, "heads": H, "layers": L, "seq_len": T, "batch": B,
           "tokens": tokens.reshape(-1).tolist(), "targets": targets.reshape(-1).tolist(),
           "logits": logits.reshape(-1).tolist(), "loss": loss}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f)
    print(f"make_hf_gpt2: {out}: {len(w)} tensors, loss {loss:.6f}")


if __name__ == "__main__":
    main()
