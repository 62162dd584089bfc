#!/usr/bin/python3
# torch_gpt2.py: a minimal GPT-2 in PyTorch, written here as the peer zerotrain is measured against
# in the same run (bench/model/ on CPU, scripts/gpu_check.sh on CUDA). Same architecture as
# runtime/model/gpt2.cpp (pre-LN blocks, tanh GELU, tied LM head), same B, T, vocabulary and
# optimizer (AdamW over every parameter, global-norm clipping). It trains on random tokens: speed
# does not depend on the data. With --family llama it is a Llama instead, as runtime/model/llama.cpp
# (and transformers' LlamaForCausalLM) computes it: RMSNorm, rotate-half RoPE, grouped-query
# attention over --kv-heads, a SwiGLU MLP of --intermediate, no biases, --tied or not.
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


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(C))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, C, H, Hkv, hd, I, eps, sdpa):
        super().__init__()
        self.H, self.Hkv, self.hd, self.sdpa = H, Hkv, hd, sdpa
        self.ln1, self.ln2 = RMSNorm(C, eps), RMSNorm(C, eps)
        self.qkv = nn.Linear(C, (H + 2 * Hkv) * hd, bias=False)
        self.o = nn.Linear(H * hd, C, bias=False)
        self.gate_up = nn.Linear(C, 2 * I, bias=False)
        self.down = nn.Linear(I, C, bias=False)

    def attention(self, x, cos, sin):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split([self.H * self.hd, self.Hkv * self.hd, self.Hkv * self.hd], dim=2)
        q = q.view(B, T, self.H, self.hd).transpose(1, 2)
        k, v = (t.view(B, T, self.Hkv, self.hd).transpose(1, 2) for t in (k, v))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.H // self.Hkv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)  # query head h reads kv head h / rep
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(B, T, self.H * self.hd))

    def forward(self, x, cos, sin):
        x = x + self.attention(self.ln1(x), cos, sin)
        gate, up = self.gate_up(self.ln2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, L, H, Hkv, C, hd, I, V, T, theta, eps, tied, sdpa):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList(LlamaBlock(C, H, Hkv, hd, I, eps, sdpa) for _ in range(L))
        self.lnf = RMSNorm(C, eps)
        self.lm_head = None if tied else nn.Linear(C, V, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
        inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        ang = torch.outer(torch.arange(T, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx)
        cos, sin = self.cos[:T], self.sin[:T]
        for b in self.blocks:
            x = b(x, cos, sin)
        x = self.lnf(x)
        logits = x @ self.wte.weight.t() if self.lm_head is None else self.lm_head(x)
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
    ap.add_argument("--family", default="gpt2", choices=["gpt2", "llama"])
    ap.add_argument("--kv-heads", type=int, default=0, help="llama: key/value heads (0: --heads)")
    ap.add_argument("--head-dim", type=int, default=0, help="llama: head width (0: --dim / --heads)")
    ap.add_argument("--intermediate", type=int, default=0, help="llama: SwiGLU width (0: 4 x --dim)")
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--rms-eps", type=float, default=1e-5)
    ap.add_argument("--untied", action="store_true", help="llama: an LM head of its own")
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
    hd = a.head_dim or a.dim // a.heads
    Hkv = a.kv_heads or a.heads
    if a.family == "gpt2" and a.dim % a.heads:
        sys.exit(f"--dim {a.dim} does not divide by --heads {a.heads}")
    if a.heads % Hkv:
        sys.exit(f"--kv-heads {Hkv} does not divide --heads {a.heads}")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: torch sees no GPU (torch.cuda.is_available() is False)")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    sdpa = hasattr(F, "scaled_dot_product_attention")
    if a.family == "llama":
        model = Llama(a.layers, a.heads, Hkv, a.dim, hd, a.intermediate or 4 * a.dim, a.vocab, a.seq_len, a.rope_theta,
                      a.rms_eps, not a.untied, sdpa).to(dev)
    else:
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

    # Attention: 12·L·(H·hd)·T per token (GPT-2: H·hd = C); GQA shrinks only the K/V projections,
    # which 6·N already counts.
    flops_per_token = 6 * n_params + 12 * a.layers * a.heads * hd * a.seq_len
    if a.peak_tflops > 0:
        peak, peak_source = a.peak_tflops, "given"
    elif a.device == "cuda":
        peak, peak_source = H200_BF16_DENSE_TFLOPS, "H200 bf16 dense"
    else:
        peak, peak_source = measured_gemm_tflops(dev, a.dim, tokens), "measured fp32 GEMM"
    median = statistics.median(rates)
    print(json.dumps({
        "event": "summary", "peer": "torch", "torch": torch.__version__, "device": a.device,
        "family": a.family, "threads": torch.get_num_threads(), "B": a.batch, "T": a.seq_len, "vocab": a.vocab, "layers": a.layers,
        "dim": a.dim, "heads": a.heads, "params": n_params, "attention": "sdpa" if sdpa else "math",
        "autocast": "bf16" if a.device == "cuda" else "off", "fused_adamw": fused, "compiled": compiled,
        "compile_note": compile_note, "steps": a.steps, "tokens_per_s": median,
        "tokens_per_s_min": min(rates), "tokens_per_s_max": max(rates), "flops_per_token": flops_per_token,
        "peak_tflops": peak, "peak_source": peak_source, "gemm_tflops": peak if a.device == "cpu" else None,
        "mfu": median * flops_per_token / (peak * 1e12)}), flush=True)


if __name__ == "__main__":
    main()
