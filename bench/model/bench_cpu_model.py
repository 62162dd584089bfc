#!/usr/bin/python3
# bench_cpu_model.py: zerotrain's CPU training step (forward + backward + AdamW, the real
# `zerotrain` command, one rank) against the PyTorch peer scripts/peers/torch_gpt2.py at the same
# shapes, vocabulary, batch and optimizer, in the same run, interleaved (zt, torch, zt, torch, ...)
# at each thread count. Prints JSON lines and a table with the ratio; the goal is >= 1.2x.
#
#   bash bench/model/setup.sh                       # python3-torch (Debian 12: 1.13) via apt
#   /usr/bin/python3 bench/model/bench_cpu_model.py --zerotrain build/runtime/cli/zerotrain
#
# Shapes: --model gpt2-124m (12 layers, 12 heads, C = 768, vocab 50257) or smollm2-135m (Llama: 30 layers,
# 9 heads over 3 kv heads, C = 576, SwiGLU 1536, vocab 49152, tied; the peer with --family llama); the context and
# the batch are reduced (--seq-len, --batch) so that a run takes a minute or two. PyTorch runs with
# OMP_WAIT_POLICY=PASSIVE (its default spin-wait gives 100-600 ms spikes on 2 shared vCPUs, see
# shared/PERF-NOTES.md); zerotrain with the environment as it is. Each figure is the median of the
# timed steps of a run; the summary takes the median over rounds and reports min..max. zerotrain's
# param_checksum must be equal at every thread count (results independent of the thread count).
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import zt_metrics  # noqa: E402 (found through the path above)

GOAL = 1.2
# The peer's shape flags for each --model (the presets' shapes, runtime/model/model_config.cpp).
PEER_SHAPES = {
    "gpt2-124m": [],
    "smollm2-135m": ["--family", "llama", "--layers", "30", "--heads", "9", "--kv-heads", "3", "--dim", "576",
                     "--head-dim", "64", "--intermediate", "1536", "--vocab", "49152", "--rope-theta", "100000"],
}


def run_zerotrain(a, threads):
    with tempfile.TemporaryDirectory(prefix="zt-bench-") as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        cmd = [a.zerotrain, "--model", a.model, "--seq-len", str(a.seq_len), "--micro-batch", str(a.batch),
               "--steps", str(a.warmup + a.steps), "--threads", str(threads), "--metrics", metrics,
               "--eval-every", "0", "--eval-batches", "1", "--lr", str(a.lr), "--weight-decay", str(a.weight_decay),
               "--max-grad-norm", str(a.max_grad_norm), "--seed", "1"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"zerotrain failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-4000:]}")
        m = zt_metrics.read_metrics(metrics, missing_ok=False)  # read before the folder goes
    steps = m.of("step")[a.warmup:]
    if len(steps) != a.steps or m.end is None:
        sys.exit(f"zerotrain metrics: expected {a.steps} timed step records and an end record, got {len(steps)}")
    rate = statistics.median(r["tokens_per_s"] for r in steps)
    return {"tokens_per_s": rate, "checksum": m.end["param_checksum"]}


def run_torch(a, threads):
    cmd = [a.python, os.path.join(ROOT, "scripts/peers/torch_gpt2.py"), "--device", "cpu", "--threads", str(threads),
           "--batch", str(a.batch), "--seq-len", str(a.seq_len), "--steps", str(a.steps), "--warmup", str(a.warmup),
           "--lr", str(a.lr), "--weight-decay", str(a.weight_decay), "--max-grad-norm", str(a.max_grad_norm),
           "--compile", "auto"] + PEER_SHAPES[a.model]
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"torch peer failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-4000:]}")
    summary = [json.loads(line) for line in p.stdout.splitlines() if '"summary"' in line]
    if not summary:
        sys.exit(f"torch peer printed no summary:\n{p.stdout[-2000:]}")
    return summary[-1]


def simd_level(zt):
    p = subprocess.run([zt, "env", "--json"], capture_output=True, text=True)
    try:
        j = json.loads(p.stdout)
    except json.JSONDecodeError:
        return "unknown"
    cpu = j.get("cpu", j)
    return cpu.get("simd_level", "unknown") if isinstance(cpu, dict) else "unknown"


def main():
    ap = argparse.ArgumentParser(description="zerotrain CPU step vs the PyTorch CPU peer, same run")
    ap.add_argument("--zerotrain", default=os.path.join(ROOT, "build/runtime/cli/zerotrain"))
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python that has torch")
    ap.add_argument("--model", default="gpt2-124m", choices=sorted(PEER_SHAPES))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds per thread count")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--max-grad-norm", type=float, default=1.0)
    a = ap.parse_args()
    if not os.access(a.zerotrain, os.X_OK):
        sys.exit(f"{a.zerotrain}: no zerotrain binary there; build first (scripts/build.sh) or pass --zerotrain")

    level = os.environ.get("ZT_SIMD") or simd_level(a.zerotrain)
    runs = {t: {"zt": [], "torch": [], "checksums": set()} for t in a.threads}
    last_torch = {}
    for r in range(a.rounds):
        for t in a.threads:
            z = run_zerotrain(a, t)
            runs[t]["zt"].append(z["tokens_per_s"])
            runs[t]["checksums"].add(z["checksum"])
            print(json.dumps({"event": "run", "peer": "zerotrain", "round": r, "threads": t, **z}), flush=True)
            p = run_torch(a, t)
            runs[t]["torch"].append(p["tokens_per_s"])
            last_torch[t] = p
            print(json.dumps({"event": "run", "peer": "torch", "round": r, "threads": t,
                              "tokens_per_s": p["tokens_per_s"], "gemm_tflops": p["gemm_tflops"]}), flush=True)

    all_checksums = set().union(*(runs[t]["checksums"] for t in a.threads))
    rows = []
    for t in a.threads:
        zt, pt, peer = statistics.median(runs[t]["zt"]), statistics.median(runs[t]["torch"]), last_torch[t]
        ratios = [z / p for z, p in zip(runs[t]["zt"], runs[t]["torch"])]
        s = {"event": "summary", "threads": t, "B": a.batch, "T": a.seq_len, "model": a.model + " shapes",
             "zerotrain_tokens_per_s": zt, "torch_tokens_per_s": pt, "ratio": zt / pt,
             "ratio_min": min(ratios), "ratio_max": max(ratios), "goal": GOAL, "meets_goal": zt / pt >= GOAL,
             "zerotrain_mfu": zt * peer["flops_per_token"] / (peer["gemm_tflops"] * 1e12),
             "torch_mfu": peer["mfu"], "gemm_tflops": peer["gemm_tflops"], "torch": peer["torch"],
             "torch_attention": peer["attention"], "torch_compiled": peer["compiled"], "simd": level,
             "checksum_same_across_threads": len(all_checksums) == 1}
        rows.append(s)
        print(json.dumps(s), flush=True)

    print(f"\nzerotrain vs PyTorch {rows[0]['torch']} CPU, {a.model} shapes, B={a.batch} T={a.seq_len}, "
          f"{a.rounds} interleaved rounds x {a.steps} steps, zerotrain SIMD: {level}")
    print(f"{'threads':>7} | {'zerotrain tok/s':>15} | {'torch tok/s':>11} | {'ratio (min..max)':>18} | "
          f"{'zt MFU':>6} | {'torch MFU':>9} | goal {GOAL}x")
    for s in rows:
        print(f"{s['threads']:>7} | {s['zerotrain_tokens_per_s']:>15.1f} | {s['torch_tokens_per_s']:>11.1f} | "
              f"{s['ratio']:>5.2f} ({s['ratio_min']:.2f}..{s['ratio_max']:.2f}) | {s['zerotrain_mfu']:>6.3f} | "
              f"{s['torch_mfu']:>9.3f} | {'met' if s['meets_goal'] else 'NOT met'}")
    print(f"zerotrain param_checksum equal at every thread count: {'yes' if len(all_checksums) == 1 else 'NO'} "
          f"({', '.join(sorted(all_checksums))})")
    return 0 if len(all_checksums) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
