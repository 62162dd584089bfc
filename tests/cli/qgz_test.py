#!/usr/bin/env python3
"""qgZ (zero_quantized_gradients) through the binary from DeepSpeed's keys, at 8 ranks as two "nodes"
of 4: tiny and small train 300 steps beside the exact stage-3 run with the same seed and data, qgZ
alone and with qwZ and hpZ (all three); the mean of the last 50 losses is within 5% of the exact
run's, no loss is NaN, the mean grad-norm ratio is in [0.8, 1.25] (a gradient n times the mean, as
DeepSpeed's rule gives, fails it); every step's link bytes equal the predictor's; the reduce-scatter
carries the 1-D tensors alone and the all-to-alls the rest, so fewer bytes cross nodes; step records
carry the sampled error within one rounding's bound. qgZ saved at step 2 and loaded continues to
the uninterrupted run's parameters. On one node it is off with one warning for the job; without
reduce_scatter it is refused once, naming the key.
Usage: qgz_test.py ZEROTRAIN MPIRUN"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eight_ranks import EightRanks, mean  # noqa: E402

H = EightRanks(sys.argv[1], sys.argv[2], "zt_qgz_")
check = H.check
STEPS = 300


def run(name, model, zero, steps=STEPS, **kw):
    return H.run(name, model, zero, steps, **kw)


PAPER = {"stage": 3, "stage3_param_persistence_threshold": 0, "stage3_max_reuse_distance": 0}
QGZ = dict(PAPER, zero_quantized_gradients=True)
ALL3 = dict(QGZ, zero_quantized_weights=True, zero_hpz_partition_size=4)
for model in ("tiny", "small"):
    runs = {}
    for name, zero in (("exact", PAPER), ("qgz", QGZ), ("all3", ALL3)):
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
        check(start["quantized_gradients"] == (name != "exact"), f"{model} {name}: the start record says whether qgZ is on")
        if name != "exact":
            q = [s["quant_grads"] for s in steps if "quant_grads" in s]
            check(len(q) == len(steps), f"{model} {name}: every step record carries quant_grads")
            worst = max(x["max_rel_err"] for x in q) if q else 1
            bound = q[0]["bound_rel_err"] if q else 0
            check(0 < worst <= bound < 1 / 14 * 1.0001,
                  f"{model} {name}: sampled error {worst:.6f} of the block absmax, within one int4 rounding's bound {bound:.6f}")
            check(sum(x["bad_blocks"] for x in q) == 0, f"{model} {name}: no block refused")
            check(all(x["exact_elements"] > 0 and x["reductions"] > 0 for x in q),
                  f"{model} {name}: the 1-D tensors were reduced exactly every step (exact_elements > 0)")
            rs = steps[-1]["comm_bytes"]["reduce_scatter"]
            check(rs == 4 * q[-1]["exact_elements"], f"{model} {name}: the reduce-scatter carries the 1-D tensors alone ({rs} B)")
            check(steps[-1]["comm_bytes"]["all_to_all"] > 0, f"{model} {name}: the rest went by all-to-all")
    if len(runs) != 3:
        continue
    exact = runs["exact"]
    em = mean([s["loss"] for s in exact[-50:]])
    for name in ("qgz", "all3"):
        steps = runs[name]
        losses = [s["loss"] for s in steps]
        check(all(l == l for l in losses), f"{model} {name}: no loss is NaN")
        qm = mean(losses[-50:])
        check(abs(qm - em) / em < 0.05, f"{model} {name}: mean of the last 50 losses {qm:.4f} within 5% of exact {em:.4f}")
        ratio = mean([s["grad_norm"] for s in steps]) / mean([s["grad_norm"] for s in exact])
        check(0.8 <= ratio <= 1.25, f"{model} {name}: mean grad-norm ratio {ratio:.3f} in [0.8, 1.25]")
        inter = steps[-1]["comm_bytes_inter"] / exact[-1]["comm_bytes_inter"]
        check(inter < 1, f"{model} {name}: inter-node bytes {inter:.3f} of the exact run's")
        print(f"     {model} {name}: inter-node {steps[-1]['comm_bytes_inter']} B vs {exact[-1]['comm_bytes_inter']} "
              f"({inter:.3f}), intra {steps[-1]['comm_bytes_intra']} vs {exact[-1]['comm_bytes_intra']}")

# Save at step 2, load, continue to step 4: the uninterrupted run's parameters (the quantization is
# deterministic).
ck = os.path.join(H.root, "ck")
sums = []
for name, extra in (("straight", []), ("saved", ["--save", ck, "--save-every", "2"]),
                    ("resumed", ["--load", ck, "--load-tag", "global_step2"])):
    p, lines = run("resume_" + name, "tiny", QGZ, steps=4, extra=extra)
    end = [l for l in lines if l["event"] == "end"]
    check(p.returncode == 0 and bool(end), f"qgZ {name} run finishes (rc {p.returncode})")
    sums.append(end[0]["param_checksum"] if end else None)
check(sums[0] is not None and sums[0] == sums[1] == sums[2],
      f"qgZ saved at step 2 and loaded continues to the uninterrupted run's parameters ({sums})")

# The comms logger names each quantized collective's levels and scales apart (one call carries both),
# the step records' sums.
p, lines = run("comms_logger", "tiny", ALL3, steps=3, more={"comms_logger": {"enabled": True}})
end = [l for l in lines if l["event"] == "end"]
steps = [l for l in lines if l["event"] == "step"]
cq = end[0].get("comms_quantized", {}) if end else {}
for name, key in (("qwZ", "quant_weights"), ("qgZ", "quant_grads")):
    got = cq.get(name, {})
    want = (sum(s[key]["level_bytes"] for s in steps), sum(s[key]["scale_bytes"] for s in steps))
    check(p.returncode == 0 and (got.get("level_bytes"), got.get("scale_bytes")) == want and want[0] > want[1] > 0 and
          p.stdout.count(f"  {name} ") == 1,
          f"comms logger: {name}'s levels and scales apart, once, equal to the step records' ({got} vs {want})")

# One node: off, one warning for the job, and the run is the exact one.
p, lines = run("one_node", "tiny", QGZ, steps=3, rpn=8)
p0, lines0 = run("one_node_exact", "tiny", PAPER, steps=3, rpn=8)
end = [l for l in lines if l["event"] == "end"]
end0 = [l for l in lines0 if l["event"] == "end"]
check(p.returncode == 0 and p.stdout.count("zero_optimization.zero_quantized_gradients") == 1 and "off" in p.stdout,
      "qgZ on one node: one warning for the job saying it is off")
check(bool(end) and bool(end0) and end[0]["param_checksum"] == end0[0]["param_checksum"],
      "qgZ on one node: the exact run's parameters")

# Refused once for the job, naming the key, before anything runs.
p, _ = run("no_reduce_scatter", "tiny", dict(QGZ, reduce_scatter=False), steps=1)
check(p.returncode != 0 and p.stdout.count("zero_optimization.zero_quantized_gradients") == 1 and
      "reduce_scatter is false" in p.stdout, "qgZ without reduce_scatter: refused once for the job, naming the key")

H.finish("qgz_test")
