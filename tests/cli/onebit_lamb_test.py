#!/usr/bin/env python3
"""1-bit LAMB (optimizer "OneBitLamb", DeepSpeed's keys, its type name in any case) through the binary
at 8 ranks as two "nodes" of 4: warm-up steps all-reduce, compressed steps send ONE compressed call
for the whole model, every step's link bytes equal the predictor's; the switch is announced once;
saves in warm-up and in the compressed phase load to the uninterrupted run's parameters (the fresh
variance in the shared state, the coefficients in the manifest, each rank's errors in its own file);
at another world size the load continues in the compressed phase with one warning; fp16 with a
static loss scale and ZeRO stage 1 are refused once, naming the key.
Usage: onebit_lamb_test.py ZEROTRAIN MPIRUN"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eight_ranks import EightRanks  # noqa: E402

H = EightRanks(sys.argv[1], sys.argv[2], "zt_onebit_lamb_")
check = H.check


def optimizer(kind="OneBitLamb"):
    params = {"lr": 2e-2, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01, "freeze_step": 4,
              "max_coeff": 10.0, "min_coeff": 0.01, "coeff_beta": 0.9, "factor_max": 4.0, "factor_min": 0.5,
              "factor_threshold": 0.1, "cuda_aware": False, "comm_backend_name": "nccl"}
    return {"optimizer": {"type": kind, "params": params}, "gradient_clipping": 1.0}


p, lines = H.run("phases", "tiny", {"stage": 0}, 10, more=optimizer("onebitlamb"))
check(p.returncode == 0, f"the run finishes with the type written in lower case (rc {p.returncode})")
start = ([l for l in lines if l["event"] == "start"] or [{}])[0]
steps = [l for l in lines if l["event"] == "step"]
check([s.get("optimizer_comm") for s in steps] == ["exact"] * 4 + ["compressed"] * 6,
      "updates 1-4 all-reduce (the first is the dry run), 5-10 compress")
check(all(s["comm_calls"]["all_to_all"] == (1 if s["optimizer_comm"] == "compressed" else 0) for s in steps),
      "one compressed call (one all-to-all) a compressed step, for the whole model")
want = {"exact": (start.get("expected_comm_bytes_intra_per_step"), start.get("expected_comm_bytes_inter_per_step")),
        "compressed": (start.get("expected_comm_bytes_intra_per_step_compressed"),
                       start.get("expected_comm_bytes_inter_per_step_compressed"))}
bad = [s["step"] for s in steps if (s["comm_bytes_intra"], s["comm_bytes_inter"]) != want.get(s.get("optimizer_comm"))]
check(steps and not bad, f"every step's link bytes equal the predictor's for its phase (differ at {bad[:5]})")
if len(steps) == 10:
    e, c = (steps[i]["comm_bytes_intra"] + steps[i]["comm_bytes_inter"] for i in (1, -1))
    check(c < e / 25, f"link bytes of a compressed step: {c} = 1/{e / c:.1f} of a warm-up step's {e} (< 1/25: tiny's scales and flag on top)")
check(p.stdout.count("1-bit LAMB: from step 5") == 1, "the switch is announced once for the job")

ck = os.path.join(H.root, "ck")
sums = {}
for name, extra, np in (("straight", [], 8), ("saved", ["--save", ck, "--save-every", "3"], 8),
                        ("from_warmup", ["--load", ck, "--load-tag", "global_step3"], 8),
                        ("from_compressed", ["--load", ck, "--load-tag", "global_step6"], 8),
                        ("other_world", ["--load", ck, "--load-tag", "global_step6"], 4)):
    more = dict(optimizer(), train_micro_batch_size_per_gpu=8 // np)  # the saved run's global batch
    p, lines = H.run("resume_" + name, "tiny", {"stage": 0}, 9, extra=extra, more=more, np=np, rpn=4 if np == 8 else 2)
    end = [l for l in lines if l["event"] == "end"]
    check(p.returncode == 0 and bool(end), f"{name} run finishes (rc {p.returncode})")
    sums[name] = (end[0]["param_checksum"] if end else None, p, [l for l in lines if l["event"] == "step"])
differ = [n for n in ("saved", "from_warmup", "from_compressed") if sums[n][0] != sums["straight"][0]]
check(sums["straight"][0] is not None and not differ,
      f"saved in warm-up (3) and in the compressed phase (6), loaded: the uninterrupted run's parameters (differ: {differ})")
p, resumed = sums["from_compressed"][1], sums["from_compressed"][2]
check(bool(resumed) and resumed[0]["step"] == 7 and resumed[0]["optimizer_comm"] == "compressed" and "restart" not in p.stdout,
      "loaded at step 6: step 7 compresses at once, no warning")
p, resumed = sums["other_world"][1], sums["other_world"][2]
check(p.stdout.count("own arrays restart (the error feedback from zero)") == 1 and "saved at world size 8" in p.stdout,
      "loaded at 4 ranks from 8: one warning, the error feedback restarts from zero")
check(bool(resumed) and resumed[0]["optimizer_comm"] == "compressed" and all(s["loss"] == s["loss"] for s in resumed),
      "and the run continues in the compressed phase without NaN")

p, _ = H.run("static_scale", "tiny", {"stage": 0}, 1, more=dict(optimizer(), fp16={"enabled": True, "loss_scale": 128}))
check(p.returncode != 0 and p.stdout.count("error: fp16.loss_scale = 128") == 1 and "dynamic loss scaling" in p.stdout,
      "fp16 with a static loss scale: refused once, naming fp16.loss_scale")
p, _ = H.run("with_zero", "tiny", {"stage": 1}, 1, more=optimizer())
check(p.returncode != 0 and p.stdout.count("error: zero_optimization.stage = 1") == 1 and "OneBitLamb keeps every" in p.stdout,
      "OneBitLamb with ZeRO stage 1: refused once, naming zero_optimization.stage")

H.finish("onebit_lamb_test")
