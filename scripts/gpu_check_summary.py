#!/usr/bin/env python3
"""The table scripts/gpu_check.sh prints last: test verdicts, attention vs GEMM, zerotrain vs the
PyTorch peer (tokens/s, MFU), stage 0-3 tokens/s at world 1, 2 and 4 on one GPU, offload verdicts.

usage: gpu_check_summary.py TEST_LOG BENCH_LOG ENGINE_LOG METRICS_DIR

MFU counts 6*N + 12*L*C*T FLOPs per token (the PaLM / nanoGPT convention, attention unmasked) for
gpt2-124m (N = 124,439,808, L = 12, C = 768, T = 1024) against the H200's dense bf16 989 TFLOP/s,
the same formula for both sides, so the ratio is the ratio of tokens/s.
"""
import json
import os
import re
import statistics
import sys

import zt_metrics

PEAK = 989e12
N_PARAMS, LAYERS, DIM, SEQ = 124_439_808, 12, 768, 1024
FLOPS_PER_TOKEN = 6 * N_PARAMS + 12 * LAYERS * DIM * SEQ


def json_lines(path):
    """The JSON lines among a log's other lines (the bench log, the PyTorch peer's output)."""
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def step_rate(path):
    """Median tokens/s of a zerotrain --metrics file over the steps after the first (warm-up), or None."""
    # The runs go under `timeout`: one killed mid-write leaves a last line cut short, the rest is whole.
    steps = zt_metrics.read_metrics(path, truncated_tail_ok=True).of("step")
    if not steps:
        return None
    rest = steps[1:] or steps
    return statistics.median(r["tokens_per_s"] for r in rest)


def peer_rate(path):
    rows = [r for r in json_lines(path) if "tokens_per_s" in r]
    return rows[-1]["tokens_per_s"] if rows else None


def main():
    test_log, bench_log, engine_log, metrics = sys.argv[1:5]
    print("-- test verdicts (tests.log):")
    verdicts = {}
    for line in open(test_log, errors="replace") if os.path.exists(test_log) else []:
        m = re.search(r"Test\s+#\d+: (\S+) \.+\**\s*(Passed|Failed|\S.*?)\s+[\d.]+ sec", line)
        if m:
            verdicts[m.group(1)] = m.group(2).strip()
    gpu = {k: v for k, v in verdicts.items() if k.startswith("test_gpu_") or "gpu" in k or "nccl" in k}
    for k in sorted(gpu):
        print(f"  {k:<40} {gpu[k]}")
    others = [v for k, v in verdicts.items() if k not in gpu]
    if others:
        bad = [k for k, v in verdicts.items() if k not in gpu and v != "Passed"]
        print(f"  other tests: {others.count('Passed')} of {len(others)} passed" + (f"; not passed: {', '.join(sorted(bad)[:8])}" if bad else ""))
    if not verdicts:
        print("  (no test ran)")

    bench = json_lines(bench_log)
    att = [r for r in bench if r.get("bench") == "attention"]
    print("-- attention (bench_attention): flash fwd+bwd vs a cuBLASLt GEMM of the same FLOPs (goal >= 0.5)")
    for r in att:
        print(f"  {r['shape']:<24} fwd {r['fwd_tflops']:6.1f}  bwd {r['bwd_tflops']:6.1f}  fwd+bwd {r['fwd_bwd_tflops']:6.1f} "
              f"TFLOP/s; GEMM {r['gemm_tflops']:6.1f}; ratio {r['ratio_to_gemm']:.3f}; "
              f"{r['speedup_vs_reference']:.1f}x the reference kernels; out vs reference {r['out_rel_err_vs_reference']:.1e}")
        if "dkdv_local_bytes" in r:
            print(f"  {'':<24} hs={r['hs']} backward per thread: dK/dV {r['dkdv_registers']} registers + "
                  f"{r['dkdv_local_bytes']} B local (spill), dQ {r['dq_registers']} + {r['dq_local_bytes']} B")
    if not att:
        print("  (not measured)")
    for r in bench:
        if r.get("bench") == "model_fwd_bwd":
            print(f"  {r['model']} forward+backward alone, B={r['B']}: {r['tokens_per_s']:.0f} tokens/s, MFU {r['mfu_vs_989']:.3f}")

    print("-- gpt2-124m training step, B=16, T=1024: zerotrain (stage 0) vs the PyTorch peer (goal >= 1.0, MFU >= 0.40)")
    zt = step_rate(os.path.join(metrics, "zt_peer.jsonl"))
    rows = [("zerotrain", zt), ("torch eager", peer_rate(os.path.join(metrics, "peer_eager.jsonl"))),
            ("torch.compile", peer_rate(os.path.join(metrics, "peer_compiled.jsonl")))]
    for name, tps in rows:
        if tps is None:
            print(f"  {name:<14} not measured")
            continue
        ratio = f"  zerotrain / this = {zt / tps:.3f}" if zt and name != "zerotrain" else ""
        print(f"  {name:<14} {tps:9.0f} tokens/s  MFU {tps * FLOPS_PER_TOKEN / PEAK:.3f}{ratio}")

    print("-- engine, gpt2-124m, micro batch 8 x 1024 per rank, tokens/s of all ranks (W=2, 4: one GPU, --comm mpi)")
    print(f"  {'stage':<6} {'W=1':>9} {'W=2':>9} {'W=4':>9}")
    w1 = {}
    for s in range(4):
        cells = []
        for suffix in ("", "_w2", "_w4"):
            tps = step_rate(os.path.join(metrics, f"g124_{s}{suffix}.jsonl"))
            if suffix == "":
                w1[s] = tps
            cells.append(f"{tps:9.0f}" if tps else f"{'-':>9}")
        print(f"  {s:<6} " + " ".join(cells))
    if w1.get(2) and w1.get(3):
        print(f"  stage 3 step time / stage 2 at W=1: {w1[2] / w1[3]:.3f} (goal <= 1.10)")

    print("-- offload and multi-rank verdicts (engine.log):")
    keep = False
    n = 0
    for line in open(engine_log, errors="replace") if os.path.exists(engine_log) else []:
        if line.startswith(("OFFLOAD", "ENGINE tiny", "MULTIRANK tiny")):
            keep = True
            print("  " + line.rstrip())
            continue
        if line.startswith(("ENGINE gpt2", "MULTIRANK gpt2")):
            keep = False
        if keep and line.startswith("  "):
            print("  " + line.rstrip())
            n += 1
    if n == 0:
        print("  (no engine runs)")


if __name__ == "__main__":
    main()
