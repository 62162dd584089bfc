#!/usr/bin/env python3
"""1-bit Adam (optimizer "OneBitAdam", DeepSpeed's keys) through the binary at 8 ranks as two "nodes"
of 4: the step records show DeepSpeed's phases (updates up to freeze_step all-reduce the gradients;
afterwards no all-reduce, the compressed calls instead) and every step's link bytes equal the
predictor's for its phase; the switch is announced once; tiny trains 200 steps (freeze at 20%) to
within 3% of AdamW's loss with the same numbers; saves in warm-up and in the compressed phase load to
the uninterrupted run's parameters (each rank's error feedback is in its own file); at another
world size the load continues in the compressed phase with one warning (the errors restart from
zero); ZeRO stage 2 with it is refused once, naming the key.
Usage: onebit_test.py ZEROTRAIN MPIRUN"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eight_ranks import EightRanks, mean  # noqa: E402

H = EightRanks(sys.argv[1], sys.argv[2], "zt_onebit_")
check = H.check


def optimizer(kind="OneBitAdam", freeze=4, clip=1.0):
    params = {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}
    if kind == "OneBitAdam":
        params.update(freeze_step=freeze, cuda_aware=False, comm_backend_name="nccl")
    return {"optimizer": {"type": kind, "params": params}, "gradient_clipping": clip}


def run(name, steps, extra=(), kind="OneBitAdam", freeze=4, zero=None, model="tiny", clip=1.0):
    return H.run(name, model, zero or {"stage": 0}, steps, extra=extra, more=optimizer(kind, freeze, clip))


# Phases and bytes.
p, lines = run("phases", 10, model="small")
check(p.returncode == 0, f"the run finishes (rc {p.returncode})")
start = ([l for l in lines if l["event"] == "start"] or [{}])[0]
steps = [l for l in lines if l["event"] == "step"]
warm = (start.get("expected_comm_bytes_intra_per_step"), start.get("expected_comm_bytes_inter_per_step"))
comp = (start.get("expected_comm_bytes_intra_per_step_compressed"), start.get("expected_comm_bytes_inter_per_step_compressed"))
check(len(steps) == 10 and [s["gradients_all_reduced"] for s in steps] == [True] * 4 + [False] * 6,
      "updates 1-4 all-reduce the gradients (the first is the dry run), 5-10 do not")
check(all(s["comm_bytes"]["all_reduce"] > 0 and s["comm_bytes"]["all_to_all"] == 0 for s in steps[:4]) and
      all(s["comm_bytes"]["all_reduce"] == 0 and s["comm_bytes"]["all_to_all"] > 0 for s in steps[4:]),
      "warm-up steps all-reduce; compressed steps send all-to-alls and no all-reduce")
bad = [s["step"] for s in steps if (s["comm_bytes_intra"], s["comm_bytes_inter"]) != (warm if s["gradients_all_reduced"] else comp)]
check(steps and not bad, f"every step's link bytes equal the predictor's for its phase (differ at {bad[:5]})")
if len(steps) == 10:
    # Every link of the job: a compressed step carries about 1/32 of an fp32 warm-up step (1 bit per
    # element in each of two phases against a 32-bit all-reduce's two), padding and scales on top.
    w, c = (steps[i]["comm_bytes_intra"] + steps[i]["comm_bytes_inter"] for i in (0, -1))
    check(c < w / 30, f"link bytes of a compressed step: {c} = 1/{w / c:.1f} of a warm-up step's {w} (< 1/30)")
    print(f"     inter-node bytes per step: warm-up {steps[0]['comm_bytes_inter']}, compressed {steps[-1]['comm_bytes_inter']} "
          "(an all-to-all cannot be added up inside a node first as the all-reduce is)")
check(p.stdout.count("1-bit Adam: from step 5") == 1, "the switch to compression is announced once for the job")

# Convergence beside AdamW (T7): tiny, 200 steps, freeze at 20%, no clipping (after freeze_step
# DeepSpeed clips each rank's own gradient, whose norm is larger than the mean gradient's: a
# threshold of 1.0 clips the compressed phase harder than AdamW's, and the comparison would measure that).
losses = {}
for kind in ("AdamW", "OneBitAdam"):
    p, lines = run("conv_" + kind, 200, kind=kind, freeze=40, clip=0.0)
    ls = [l["loss"] for l in lines if l["event"] == "step"]
    check(p.returncode == 0 and len(ls) == 200 and all(x == x for x in ls), f"{kind}: 200 steps, no NaN")
    losses[kind] = mean(ls[-20:]) if ls else float("nan")
a, b = losses["AdamW"], losses["OneBitAdam"]
check(b <= a * 1.03, f"1-bit Adam's mean of the last 20 losses {b:.4f} within 3% of AdamW's {a:.4f} (or below)")

# Resume: in warm-up and in the compressed phase (each rank's error feedback in its own file) to the
# uninterrupted run's parameters; at another world size into the compressed phase with one warning.
ck = os.path.join(H.root, "ck")
sums = {}
for name, extra, np in (("straight", [], 8), ("saved", ["--save", ck, "--save-every", "2"], 8),
                        ("from_warmup", ["--load", ck, "--load-tag", "global_step2"], 8),
                        ("from_compressed", ["--load", ck, "--load-tag", "global_step6"], 8),
                        ("other_world", ["--load", ck, "--load-tag", "global_step6"], 4)):
    more = dict(optimizer(), train_micro_batch_size_per_gpu=8 // np)  # the saved run's global batch
    p, lines = H.run("resume_" + name, "tiny", {"stage": 0}, 8, extra=extra, more=more, np=np, rpn=4 if np == 8 else 2)
    end = [l for l in lines if l["event"] == "end"]
    check(p.returncode == 0 and bool(end), f"{name} run finishes (rc {p.returncode})")
    sums[name] = (end[0]["param_checksum"] if end else None, p, [l for l in lines if l["event"] == "step"])
check(sums["straight"][0] is not None and
      sums["straight"][0] == sums["saved"][0] == sums["from_warmup"][0] == sums["from_compressed"][0],
      "saved in warm-up (step 2) and in the compressed phase (step 6), loaded: the uninterrupted run's parameters")
p, resumed = sums["from_compressed"][1], sums["from_compressed"][2]
check(bool(resumed) and resumed[0]["step"] == 7 and not resumed[0]["gradients_all_reduced"],
      "loaded at step 6: step 7 is in the compressed phase at once (no second dry run, no warm-up)")
check("own arrays restart" not in p.stdout, "a load at the same world size restores the error feedback, no warning")
check(p.stdout.count("1-bit Adam: from step 7") == 1, "and announces compression once")
p, resumed = sums["other_world"][1], sums["other_world"][2]
check(p.stdout.count("own arrays restart (the error feedback from zero)") == 1 and "saved at world size 8" in p.stdout,
      "loaded at 4 ranks from 8: one warning, the error feedback restarts from zero")
check(bool(resumed) and not resumed[0]["gradients_all_reduced"], "and the run continues in the compressed phase")

# Refused with ZeRO, once for the job, naming the key.
p, _ = run("with_zero", 1, zero={"stage": 2})
check(p.returncode != 0 and p.stdout.count("error: zero_optimization.stage = 2") == 1 and "OneBitAdam keeps every" in p.stdout,
      "OneBitAdam with ZeRO stage 2: refused once, naming zero_optimization.stage")

H.finish("onebit_test")
