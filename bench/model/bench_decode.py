#!/usr/bin/env python3
"""Key/value-cached generation on the CPU: `zerotrain sample` against transformers' generate() on
PyTorch (the peer, same machine, same run, same threads), for a real Llama (SmolLM2-135M from
scripts/fetch_real_models.sh, 9 query heads on 3 key/value heads) or any Hugging Face Llama folder.

Both decode greedily from the same prompt ids for the same number of new tokens, timed from the
prompt's forward to the last token (weights already loaded: zerotrain's own timer excludes the upload,
generate() is timed around the call), alternating runs; the figure is the median tokens/s of each and
their ratio. The generated ids are compared too: how many leading tokens agree (fp32 on both sides,
so a difference can only come from a near-tie in the argmax).

Prints one JSON line per run and per summary, then a table.
Usage: .venv-peer/bin/python bench/model/bench_decode.py ZEROTRAIN MODEL_DIR [--prompt-tokens P]
       [--new N] [--repeats R] [--threads T]
(the peer virtualenv: bench/model/setup.sh makes it, with Debian's CPU torch and transformers)"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

TEXT = ("The Devil's Dictionary was begun in a weekly paper in 1881, and was continued in a desultory way at "
        "long intervals until 1906. In that year a large part of it was published in covers with the title "
        "The Cynic's Word Book, a name which the author had not the power to reject or happiness to approve.")


def zerotrain_run(zt, model, prompt, new, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([zt, "sample", "--init-from", model, "--prompt-ids", ",".join(map(str, prompt)),
                        "--tokens", str(new), "--temperature", "0", "--ignore-eos", "--print-ids", "--backend", "cpu"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
    err = p.stderr.decode()
    if p.returncode != 0:
        raise SystemExit("zerotrain sample failed:\n" + err)
    m = re.search(r"(\d+) tokens in ([0-9.]+) s", err)
    ids = [int(x) for x in p.stdout.decode().split()][len(prompt):]
    return int(m.group(1)) / float(m.group(2)), ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("zerotrain")
    ap.add_argument("model")
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()

    import torch
    from transformers import LlamaForCausalLM
    torch.set_num_threads(a.threads)
    # The prompt's ids from the model's own tokenizer.json, through zerotrain's reader (the peer
    # environment's older tokenizers package may not read a file the newer one wrote).
    p = subprocess.run([a.zerotrain, "sample", "--init-from", a.model, "--tokenizer", os.path.join(a.model, "tokenizer.json"),
                        "--prompt", TEXT, "--tokens", "1", "--print-ids", "--backend", "cpu"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    prompt = [int(x) for x in p.stdout.decode().split()][:a.prompt_tokens]
    peer = LlamaForCausalLM.from_pretrained(a.model, torch_dtype=torch.float32, attn_implementation="eager").eval()

    def torch_run():
        ids = torch.tensor([prompt])
        with torch.no_grad():
            t0 = time.perf_counter()
            out = peer.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=a.new, min_new_tokens=a.new,
                                do_sample=False, use_cache=True, pad_token_id=peer.config.eos_token_id)
            dt = time.perf_counter() - t0
        return a.new / dt, out[0, len(prompt):].tolist()

    rates = {"zerotrain": [], "pytorch": []}
    ids = {}
    for r in range(a.repeats):
        for name, fn in (("zerotrain", lambda: zerotrain_run(a.zerotrain, a.model, prompt, a.new, a.threads)),
                         ("pytorch", torch_run)):
            rate, got = fn()
            rates[name].append(rate)
            ids[name] = got
            print(json.dumps({"bench": "decode", "impl": name, "repeat": r, "tokens_per_s": round(rate, 2),
                              "prompt_tokens": len(prompt), "new_tokens": a.new, "threads": a.threads}), flush=True)
    agree = next((i for i, (x, y) in enumerate(zip(ids["zerotrain"], ids["pytorch"])) if x != y), a.new)
    zt, pt = statistics.median(rates["zerotrain"]), statistics.median(rates["pytorch"])
    summary = {"bench": "decode", "model": os.path.basename(os.path.normpath(a.model)), "prompt_tokens": len(prompt),
               "new_tokens": a.new, "threads": a.threads, "repeats": a.repeats,
               "zerotrain_tokens_per_s": round(zt, 2), "pytorch_tokens_per_s": round(pt, 2),
               "ratio_zerotrain_over_pytorch": round(zt / pt, 3), "leading_tokens_equal": agree,
               "torch": torch.__version__}
    print(json.dumps(summary), flush=True)
    print("\n| model | prompt | new | threads | zerotrain tok/s | PyTorch (transformers generate) tok/s | ratio | "
          "leading ids equal |")
    print("|---|---|---|---|---|---|---|---|")
    print("| %s | %d | %d | %d | %.1f | %.1f | %.2f | %d of %d |" % (summary["model"], len(prompt), a.new, a.threads, zt,
                                                                   pt, zt / pt, agree, a.new))


if __name__ == "__main__":
    sys.exit(main())
