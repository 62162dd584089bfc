#!/usr/bin/python3
# make_reference.py: writes tests/data/gpt2_tiny_reference.json, the PyTorch reference the C++ test
# tests/model/test_reference.cpp compares zerotrain's GPT-2 against (weights, inputs, logits, loss and
# every parameter gradient of a tiny model).
#
# Only needed to REGENERATE the committed golden file; the test itself needs no Python.
#   apt-get install -y python3-torch        # Debian 12 ships a CPU build
#   /usr/bin/python3 scripts/make_reference.py   # Debian's python3 (where python3-torch installs)
#
# The model is written from scratch with torch.nn.functional in float64 (so the reference itself has
# no meaningful rounding error); the weights are drawn as float32 values so C++ loads them exactly.
# Architecture, matching runtime/model/gpt2.cpp: token + position embedding; per block
# x += proj(attn(ln1(x))); x += fcproj(gelu_tanh(fc(ln2(x)))); final LayerNorm; logits = lnf(x) · Wᵀ
# with W = wte (tied) or lm_head_w; mean cross-entropy over targets != -1.
import json
import math
import os
import sys

import torch
import torch.nn.functional as F


def make_params(gen, V, C, T, L, tied):
    def normal(*shape, std):
        return (torch.randn(*shape, generator=gen, dtype=torch.float32) * std).double()

    p = {"embedding.wte": normal(V, C, std=0.3), "embedding.wpe": normal(T, C, std=0.3)}
    for l in range(L):
        b = f"block{l}."
        p[b + "ln1_w"] = 1.0 + normal(C, std=0.2)
        p[b + "ln1_b"] = normal(C, std=0.2)
        p[b + "qkv_w"] = normal(3 * C, C, std=0.3)
        p[b + "qkv_b"] = normal(3 * C, std=0.2)
        p[b + "attproj_w"] = normal(C, C, std=0.3)
        p[b + "attproj_b"] = normal(C, std=0.2)
        p[b + "ln2_w"] = 1.0 + normal(C, std=0.2)
        p[b + "ln2_b"] = normal(C, std=0.2)
        p[b + "fc_w"] = normal(4 * C, C, std=0.3)
        p[b + "fc_b"] = normal(4 * C, std=0.2)
        p[b + "fcproj_w"] = normal(C, 4 * C, std=0.2)
        p[b + "fcproj_b"] = normal(C, std=0.2)
    p["head.lnf_w"] = 1.0 + normal(C, std=0.2)
    p["head.lnf_b"] = normal(C, std=0.2)
    if not tied:
        p["head.lm_head_w"] = normal(V, C, std=0.3)
    return p


def forward(p, tokens, targets, L, NH, tied):
    B, T = tokens.shape
    C = p["embedding.wte"].shape[1]
    hs = C // NH
    x = p["embedding.wte"][tokens] + p["embedding.wpe"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        b = f"block{l}."
        h = F.layer_norm(x, (C,), p[b + "ln1_w"], p[b + "ln1_b"], eps=1e-5)
        qkv = h @ p[b + "qkv_w"].T + p[b + "qkv_b"]
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p[b + "attproj_w"].T + p[b + "attproj_b"]
        h = F.layer_norm(x, (C,), p[b + "ln2_w"], p[b + "ln2_b"], eps=1e-5)
        h = F.gelu(h @ p[b + "fc_w"].T + p[b + "fc_b"], approximate="tanh")
        x = x + h @ p[b + "fcproj_w"].T + p[b + "fcproj_b"]
    x = F.layer_norm(x, (C,), p["head.lnf_w"], p["head.lnf_b"], eps=1e-5)
    w = p["embedding.wte"] if tied else p["head.lm_head_w"]
    logits = x @ w.T
    loss = F.cross_entropy(logits.view(B * T, -1), targets.view(-1), ignore_index=-1)
    return logits, loss


def make_case(gen, name, V, C, T, L, NH, B, tied, ignore_positions):
    p = make_params(gen, V, C, T, L, tied)
    for t in p.values():
        t.requires_grad_(True)
    tokens = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)
    for i in ignore_positions:
        targets.view(-1)[i] = -1
    logits, loss = forward(p, tokens, targets, L, NH, tied)
    loss.backward()
    # 9 significant digits: exact for the float32 weights, far below the test's tolerance for the rest.
    flat = lambda t: [float(f"{v:.9g}") for v in t.detach().reshape(-1).tolist()]
    return {
        "name": name,
        "config": {"vocab": V, "dim": C, "seq_len": T, "layers": L, "heads": NH, "tied": tied},
        "batch": B,
        "tokens": tokens.reshape(-1).tolist(),
        "targets": targets.reshape(-1).tolist(),
        "params": {k: flat(v) for k, v in p.items()},
        "grads": {k: flat(v.grad) for k, v in p.items()},
        "logits": flat(logits),
        "loss": float(loss),
    }


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(root, "tests", "data", "gpt2_tiny_reference.json")
    gen = torch.Generator().manual_seed(20240520)
    cases = [
        # The `tiny` preset's shape (odd vocab 61), tied head, two ignored targets.
        make_case(gen, "tiny_tied", V=61, C=16, T=8, L=2, NH=2, B=2, tied=True, ignore_positions=[3, 12]),
        # Untied head, odd sequence length, one batch row.
        make_case(gen, "untied_odd_T", V=37, C=12, T=5, L=1, NH=3, B=1, tied=False, ignore_positions=[]),
    ]
    with open(out, "w") as f:
        json.dump({"generator": "scripts/make_reference.py", "torch": torch.__version__, "cases": cases}, f,
                  separators=(",", ":"))
    print(f"wrote {out} ({os.path.getsize(out)} bytes) with torch {torch.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
