#!/usr/bin/env python3
"""qwZ (zero_quantized_weights) through the binary from DeepSpeed's keys, at 8 ranks as two "nodes"
of 4: tiny and small train 300 steps beside the exact stage-3 run with the same seed and data, qwZ
alone and with hpZ over a node; the mean of the last 50 losses is within 2% of the exact run's, no
loss is NaN, the mean grad-norm ratio is in [0.8, 1.25]; every step's link bytes equal the
predictor's; the all-gathers carry about a quarter of the exact run's bytes and cross nodes less;
step records carry the sampled error within the bound and the quantize time; qwZ + hpZ saved at step 2
and loaded continues to the uninterrupted run's parameters. Refused once for the job, naming the key:
qwZ below stage 3.
Usage: qwz_test.py ZEROTRAIN MPIRUN"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eight_ranks import EightRanks, mean  # noqa: E402

H = EightRanks(sys.argv[1], sys.argv[2], "zt_qwz_")
check = H.check
STEPS = 300


def run(name, model, zero, steps=STEPS, **kw):
    return H.run(name, model, zero, steps, **kw)


PAPER = {"stage": 3, "stage3_param_persistence_threshold": 0, "stage3_max_reuse_distance": 0}
for model in ("tiny", "small"):
    runs = {}
    for name, zero in (("exact", PAPER), ("qwz", dict(PAPER, zero_quantized_weights=True)),
                       ("qwz_hpz", dict(PAPER, zero_quantized_weights=True, zero_hpz_partition_size=4))):
        p, lines = run(f"{model}_{name}", model, zero)
        check(p.returncode == 0, f"{model} {name}: the run finishes (rc {p.returncode})")
        if p.returncode != 0:
            print(p.stdout[-3000:])
            continue
        start = [l for l in lines if l["event"] == "start"][0]
        steps = [l for l in lines if l["event"] == "step"]
        runs[name] = steps
        bad = [s["step"] for s in steps if (s["comm_bytes_intra"], s["comm_bytes_inter"]) !=
               (start["expected_comm_bytes_intra_per_step"], start["expected_comm_bytes_inter_per_step"])]
        check(not bad, f"{model} {name}: every step's link bytes equal the predictor's (differ at {bad[:5]})")
        if name != "exact":
            q = [s["quant_weights"] for s in steps if "quant_weights" in s]
            check(len(q) == len(steps), f"{model} {name}: every step record carries quant_weights")
            worst = max(x["max_rel_err"] for x in q) if q else 1
            check(0 < worst <= q[0]["bound_rel_err"] and q[0]["bound_rel_err"] < 1 / 254 * 1.0001,
                  f"{model} {name}: sampled error {worst:.8f} of the block absmax, within the bound "
                  f"{q[0]['bound_rel_err'] if q else 0:.8f} (1/254 and the fp32 roundings)")
            check(sum(x["bad_blocks"] for x in q) == 0, f"{model} {name}: no block refused")
            check(all(x["quantize_ms"] > 0 and x["dequantize_ms"] > 0 for x in q),
                  f"{model} {name}: every step names its quantize and dequantize time")
    if len(runs) != 3:
        continue
    exact = runs["exact"]
    em = mean([s["loss"] for s in exact[-50:]])
    for name in ("qwz", "qwz_hpz"):
        steps = runs[name]
        losses = [s["loss"] for s in steps]
        check(all(l == l for l in losses), f"{model} {name}: no loss is NaN")
        qm = mean(losses[-50:])
        check(abs(qm - em) / em < 0.02, f"{model} {name}: mean of the last 50 losses {qm:.4f} within 2% of exact {em:.4f}")
        ratio = mean([s["grad_norm"] for s in steps]) / mean([s["grad_norm"] for s in exact])
        check(0.8 <= ratio <= 1.25, f"{model} {name}: mean grad-norm ratio {ratio:.3f} in [0.8, 1.25]")
        ag = steps[-1]["comm_bytes"]["all_gather"] / exact[-1]["comm_bytes"]["all_gather"]
        check(0.25 < ag < 0.27, f"{model} {name}: all-gather bytes {ag:.4f} of the exact run's (int8 and scales)")
        check(steps[-1]["comm_bytes_inter"] < exact[-1]["comm_bytes_inter"],
              f"{model} {name}: fewer inter-node bytes ({steps[-1]['comm_bytes_inter']} vs {exact[-1]['comm_bytes_inter']})")
    check(runs["qwz_hpz"][-1]["comm_bytes_inter"] < runs["qwz"][-1]["comm_bytes_inter"],
          f"{model}: hpZ keeps backward's quantized gathers inside the node")

# Save at step 2, load, continue to step 4: the uninterrupted run's parameters (the quantization is
# deterministic, the secondary copy rebuilt from the loaded shards).
zero = dict(PAPER, zero_quantized_weights=True, zero_hpz_partition_size=4)
ck = os.path.join(H.root, "ck")
sums = []
for name, extra in (("straight", []), ("saved", ["--save", ck, "--save-every", "2"]),
                    ("resumed", ["--load", ck, "--load-tag", "global_step2"])):
    p, lines = run("resume_" + name, "tiny", zero, steps=4, extra=extra)
    end = [l for l in lines if l["event"] == "end"]
    check(p.returncode == 0 and bool(end), f"qwZ + hpZ {name} run finishes (rc {p.returncode})")
    sums.append(end[0]["param_checksum"] if end else None)
check(sums[0] is not None and sums[0] == sums[1] == sums[2],
      f"qwZ + hpZ saved at step 2 and loaded continues to the uninterrupted run's parameters ({sums})")

# Refused once for the job, naming the key, before anything runs.
p, _ = run("below_stage3", "tiny", {"stage": 2, "zero_quantized_weights": True}, steps=1)
out = p.stdout
check(p.returncode != 0 and out.count("zero_optimization.zero_quantized_weights") == 1 and
      "below stage 3" in out, "qwZ at stage 2: refused once for the job, naming the key and the reason")

H.finish("qwz_test")
