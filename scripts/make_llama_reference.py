#!/usr/bin/env python3
# make_llama_reference.py [OUT_DIR]: writes the fixtures of the "against transformers itself" test of
# the Llama family (issue 23): for each tiny case, a Hugging Face checkpoint directory made by
# transformers' own LlamaForCausalLM (config.json + model.safetensors, fp32, as save_pretrained
# writes them) and, beside it, what transformers computes for fixed tokens: the logits, the loss,
# the gradient of every parameter and the parameters after one torch.optim.AdamW step.
# OUT_DIR defaults to tests/data/llama/. The C++ test reads the files and needs no Python.
#
# Only needed to REGENERATE the committed fixtures. Run by a developer, never by CI; pinned versions
# (PyPI's torch is a multi-GB CUDA build, so torch comes from Debian 12, whose python3-torch is a CPU
# build of 1.13.1; transformers 4.44.2 is a release that still supports torch 1.13 and has
# LlamaForCausalLM with the `llama3` RoPE type, added in 4.43):
#   apt-get install -y --no-install-recommends python3-torch   # torch 1.13.1 + numpy 1.24, ~50 MB download
#   /usr/bin/python3 -m venv --system-site-packages /tmp/llama-ref   # a throwaway venv that sees them
#   /tmp/llama-ref/bin/pip install transformers==4.44.2 huggingface-hub==0.24.7 safetensors==0.4.5 \
#       tokenizers==0.19.1 regex==2024.7.24 tqdm==4.66.5 PyYAML==6.0.2 filelock==4.3.1 fsspec==2026.9.0
#   HF_HUB_OFFLINE=1 /tmp/llama-ref/bin/python scripts/make_llama_reference.py
# (numpy and requests come from Debian: its torch 1.13 is built against numpy 1.x, so no numpy 2.)
# Nothing is downloaded from the hub: the models are built from their configs.
#
# What each case directory holds:
#   config.json, model.safetensors   LlamaForCausalLM.save_pretrained (tied: no lm_head.weight)
#   reference.safetensors            fp32 tensors: "logits" [B, T, V]; "grad.<name>" and
#                                    "adamw.<name>" for every parameter <name> of model.safetensors
#                                    (a tied embedding's gradient includes the LM head's)
#   reference.json                   tokens [B, T] (the input ids), labels [B, T] as transformers
#                                    takes them (-100: ignored), targets [B, T] in zerotrain's
#                                    convention (targets[t] = labels[t + 1], -1 at the end and where
#                                    ignored), the loss, the AdamW hyper-parameters, the versions
#
# The model: fp32, eager attention, a fixed seed; Linear and Embedding weights ~ N(0, init_std)
# (transformers' _init_weights with initializer_range = init_std, larger than a checkpoint's 0.02 so
# that every layer moves the logits), every RMSNorm weight randomised to 1 + N(0, 0.2²) (an
# untrained model's are all 1 and would hide a weight applied in the wrong place).
import json
import os
import sys

PINNED = {"torch": "1.13", "transformers": "4.44.2"}

# The tiny cases. Shapes follow issue 23's presets: a vocabulary that is not a multiple of 128,
# fewer kv heads than heads, untied; a tied variant; and llama3 RoPE scaling that changes the angles
# at these lengths (hd 8, theta 10000: wavelengths 6.3, 63, 628, 6283 against L0/high = 16 and
# L0/low = 64 with L0 = 64 — one frequency kept, one interpolated, two divided by the factor).
CASES = [
    dict(name="llama_tiny", vocab_size=97, hidden_size=32, intermediate_size=80, num_hidden_layers=2,
         num_attention_heads=4, num_key_value_heads=2, head_dim=8, rope_theta=10000.0, rope_scaling=None,
         rms_norm_eps=1e-5, tie_word_embeddings=False, init_std=0.2, B=2, T=16, seed=2301, ignore=[5, 20]),
    dict(name="llama_tiny_tied", vocab_size=61, hidden_size=24, intermediate_size=64, num_hidden_layers=2,
         num_attention_heads=3, num_key_value_heads=1, head_dim=8, rope_theta=500000.0, rope_scaling=None,
         rms_norm_eps=1e-6, tie_word_embeddings=True, init_std=0.2, B=2, T=9, seed=2302, ignore=[]),
    dict(name="llama_tiny_rope_llama3", vocab_size=97, hidden_size=32, intermediate_size=80, num_hidden_layers=2,
         num_attention_heads=4, num_key_value_heads=2, head_dim=8, rope_theta=10000.0,
         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 64},
         rms_norm_eps=1e-5, tie_word_embeddings=False, init_std=0.2, B=1, T=40, seed=2303, ignore=[7]),
]

ADAMW = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def check_versions(torch, transformers):
    bad = [f"{k} {mod.__version__} (pinned {PINNED[k]})" for k, mod in (("torch", torch), ("transformers", transformers))
           if not mod.__version__.startswith(PINNED[k])]
    if bad:
        sys.exit("make_llama_reference.py: unpinned versions: " + ", ".join(bad) + " (see the header for the setup)")


def make_case(case, out_root, torch, transformers, save_file):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(case["seed"])
    cfg = LlamaConfig(
        vocab_size=case["vocab_size"], hidden_size=case["hidden_size"], intermediate_size=case["intermediate_size"],
        num_hidden_layers=case["num_hidden_layers"], num_attention_heads=case["num_attention_heads"],
        num_key_value_heads=case["num_key_value_heads"], head_dim=case["head_dim"], hidden_act="silu",
        max_position_embeddings=256, rms_norm_eps=case["rms_norm_eps"], rope_theta=case["rope_theta"],
        rope_scaling=case["rope_scaling"], tie_word_embeddings=case["tie_word_embeddings"],
        initializer_range=case["init_std"], attention_bias=False, mlp_bias=False, attention_dropout=0.0,
        attn_implementation="eager", torch_dtype="float32")
    model = LlamaForCausalLM(cfg).float()
    if getattr(model.config, "head_dim", None) != case["head_dim"]:
        sys.exit(f"{case['name']}: this transformers ignores head_dim")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
    model.train()  # no dropout anywhere (attention_dropout 0); train() only for the autograd path

    B, T, V = case["B"], case["T"], case["vocab_size"]
    gen = torch.Generator().manual_seed(case["seed"] + 1)
    tokens = torch.randint(0, V, (B, T), generator=gen)
    labels = tokens.clone()
    for i in case["ignore"]:
        labels.view(-1)[i] = -100

    out_dir = os.path.join(out_root, case["name"])
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)  # config.json + model.safetensors (fp32; tied: embed_tokens only)

    out = model(input_ids=tokens, labels=labels)
    out.loss.backward()
    tensors = {"logits": out.logits.detach().float().contiguous()}
    names = [n for n, _ in model.named_parameters()]  # a tied lm_head is not listed separately
    for n, p in model.named_parameters():
        tensors["grad." + n] = p.grad.detach().float().contiguous().clone()
    opt = torch.optim.AdamW(model.parameters(), lr=ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"],
                            weight_decay=ADAMW["weight_decay"])
    opt.step()
    for n, p in model.named_parameters():
        tensors["adamw." + n] = p.detach().float().contiguous().clone()
    save_file(tensors, os.path.join(out_dir, "reference.safetensors"))

    targets = torch.full((B, T), -1, dtype=torch.long)
    targets[:, :-1] = labels[:, 1:]
    targets[targets == -100] = -1
    ref = {
        "generator": "scripts/make_llama_reference.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "case": {k: v for k, v in case.items() if k not in ("name",)},
        "parameters": names,
        "tokens": tokens.tolist(),
        "labels": labels.tolist(),
        "targets": targets.tolist(),
        "loss": float(out.loss),
        "adamw": {"lr": ADAMW["lr"], "beta1": ADAMW["betas"][0], "beta2": ADAMW["betas"][1], "eps": ADAMW["eps"],
                  "weight_decay": ADAMW["weight_decay"], "step": 1, "decoupled": True, "bias_correction": True},
    }
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
    size = sum(os.path.getsize(os.path.join(out_dir, x)) for x in os.listdir(out_dir))
    print(f"{out_dir}: loss {float(out.loss):.6f}, {len(names)} parameters, {size} bytes", file=sys.stderr)


def main():
    import torch
    import transformers
    from safetensors.torch import save_file

    check_versions(torch, transformers)
    torch.set_num_threads(1)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "data", "llama")
    for case in CASES:
        make_case(case, out_root, torch, transformers, save_file)


if __name__ == "__main__":
    main()
