#!/usr/bin/python3
# torch_gpt2.py: a minimal GPT-2 in PyTorch, written here as the peer zerotrain is measured against
# in the same run (bench/model/ on CPU, scripts/gpu_check.sh on CUDA). Same architecture as
# runtime/model/gpt2.cpp (pre-LN blocks, tanh GELU, tied LM head), same B, T, vocabulary and
# optimizer (AdamW over every parameter, global-norm clipping). It trains on random tokens: speed
# does not depend on the data.
#
#   /usr/bin/python3 scripts/peers/torch_gpt2.py --device cpu --threads 2 --batch 1 --seq-len 256
#   python3 scripts/peers/torch_gpt2.py --device cuda --batch 16 --seq-len 1024 --compile auto
#
# What it uses when the installed torch has it (each reported in the summary line):
#   attention  F.scaled_dot_product_attention(is_causal=True) (torch >= 2.0), else the explicit
#              masked softmax (torch 1.13, Debian 12's python3-torch)
#   autocast   bf16 on CUDA (fp32 master weights, as a DeepSpeed bf16 run); fp32 on CPU
#   optimizer  torch.optim.AdamW(fused=True) on CUDA when supported, else the default (foreach)
#   compile    torch.compile with --compile auto|on when it exists and compiles; eager otherwise
#
# Output: JSON lines, one {"event": "step", ...} per timed step and one {"event": "summary", ...}:
# median tokens/s and MFU = flops_per_token · tokens/s / peak, flops_per_token = 6·N + 12·L·C·T
# (N parameters, the attention matmuls counted without the causal half, as nanoGPT and llm.c do).
# The peak is 989 TFLOP/s (H200 bf16 dense) on CUDA, unless --peak-tflops; on CPU it is the fp32
# GEMM rate measured here at the same thread count on the model's MLP shape (printed as gemm_tflops).
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

H200_BF16_DENSE_TFLOPS = 989.0


class Block(nn.Module):
    def __init__(self, C, NH, sdpa):
        super().__init__()
        self.NH, self.sdpa = NH, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.attproj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.NH))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        return self.attproj(y.transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, L, NH, C, V, T, sdpa):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, NH, sdpa) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))


def measured_gemm_tflops(device, C, rows, reps=8):
    """fp32 GEMM rate on the MLP's first layer shape [rows, C] x [C, 4C] (the CPU peak)."""
    a = torch.randn(rows, C, device=device)
    b = torch.randn(C, 4 * C, device=device)
    for _ in range(2):
        a @ b
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * rows * C * 4 * C / best / 1e12


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--betas", type=float, nargs=2, default=[0.9, 0.999])
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--max-grad-norm", type=float, default=1.0, help="0: no clipping")
    ap.add_argument("--compile", default="auto", choices=["auto", "on", "off"])
    ap.add_argument("--peak-tflops", type=float, default=0.0, help="MFU denominator (default: see header)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.dim % a.heads:
        sys.exit(f"--dim {a.dim} does not divide by --heads {a.heads}")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: torch sees no GPU (torch.cuda.is_available() is False)")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    sdpa = hasattr(F, "scaled_dot_product_attention")
    model = GPT2(a.layers, a.heads, a.dim, a.vocab, a.seq_len, sdpa).to(dev)
    n_params = sum(p.numel() for p in model.parameters())

    fused = False
    opt_kw = dict(lr=a.lr, betas=tuple(a.betas), eps=a.eps, weight_decay=a.weight_decay)
    if a.device == "cuda":
        try:
            opt = torch.optim.AdamW(model.parameters(), fused=True, **opt_kw)
            fused = True
        except (TypeError, RuntimeError):
            opt = torch.optim.AdamW(model.parameters(), **opt_kw)
    else:
        opt = torch.optim.AdamW(model.parameters(), **opt_kw)

    compiled, compile_note = False, "off"
    step_model = model
    if a.compile != "off":
        if hasattr(torch, "compile"):
            try:
                step_model = torch.compile(model)
                compiled, compile_note = True, "torch.compile"
            except Exception as e:  # noqa: BLE001 - any failure means eager
                compile_note = f"torch.compile failed: {type(e).__name__}: {e}"
        else:
            compile_note = f"torch {torch.__version__} has no torch.compile"
        if a.compile == "on" and not compiled:
            sys.exit(compile_note)

    g = torch.Generator(device="cpu").manual_seed(a.seed)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq_len), generator=g).to(dev)
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq_len), generator=g).to(dev)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if a.device == "cuda" else torch.autocast(
        "cpu", enabled=False)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    def step():
        with autocast:
            loss = step_model(idx, tgt)
        loss.backward()
        if a.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    tokens = a.batch * a.seq_len
    try:
        for _ in range(a.warmup):
            step()
    except Exception as e:  # a compile error surfaces at the first call
        if not compiled or a.compile == "on":
            raise
        compiled, compile_note, step_model = False, f"torch.compile failed at run time: {type(e).__name__}", model
        for _ in range(a.warmup):
            step()
    sync()
    rates = []
    for s in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        sync()
        dt = time.perf_counter() - t0
        rates.append(tokens / dt)
        print(json.dumps({"event": "step", "peer": "torch", "step": s, "loss": float(loss), "seconds": dt,
                          "tokens_per_s": tokens / dt}), flush=True)

    flops_per_token = 6 * n_params + 12 * a.layers * a.dim * a.seq_len
    if a.peak_tflops > 0:
        peak, peak_source = a.peak_tflops, "given"
    elif a.device == "cuda":
        peak, peak_source = H200_BF16_DENSE_TFLOPS, "H200 bf16 dense"
    else:
        peak, peak_source = measured_gemm_tflops(dev, a.dim, tokens), "measured fp32 GEMM"
    median = statistics.median(rates)
    print(json.dumps({
        "event": "summary", "peer": "torch", "torch": torch.__version__, "device": a.device,
        "threads": torch.get_num_threads(), "B": a.batch, "T": a.seq_len, "vocab": a.vocab, "layers": a.layers,
        "dim": a.dim, "heads": a.heads, "params": n_params, "attention": "sdpa" if sdpa else "math",
        "autocast": "bf16" if a.device == "cuda" else "off", "fused_adamw": fused, "compiled": compiled,
        "compile_note": compile_note, "steps": a.steps, "tokens_per_s": median,
        "tokens_per_s_min": min(rates), "tokens_per_s_max": max(rates), "flops_per_token": flops_per_token,
        "peak_tflops": peak, "peak_source": peak_source, "gemm_tflops": peak if a.device == "cpu" else None,
        "mfu": median * flops_per_token / (peak * 1e12)}), flush=True)


if __name__ == "__main__":
    main()
