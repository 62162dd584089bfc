#!/usr/bin/env python3
"""0/1 Adam (optimizer "ZeroOneAdam", DeepSpeed's keys, its type name in any case) through the binary
at 8 ranks as two "nodes" of 4: the step records follow DeepSpeed's counters (variance steps
all-reduce the gradients, the steps between them and the syncs send the compressed call, local
steps neither) and every step's link bytes equal the predictor's for its kind; each switch is
announced once; saves in the variance phase (errors in use), at a sync and between a local step and
the next sync load to the uninterrupted run's parameters (each rank's own arrays in its own file);
at another world size a load between syncs continues with one warning; ZeRO stage 1 and a zero
local_step_clipper are refused once, naming the key.
Usage: zero_one_test.py ZEROTRAIN MPIRUN"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eight_ranks import EightRanks  # noqa: E402

H = EightRanks(sys.argv[1], sys.argv[2], "zt_zero_one_")
check = H.check


def optimizer(kind="ZeroOneAdam", clipper=4):
    params = {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01, "var_freeze_step": 8,
              "var_update_scaler": 2, "local_step_scaler": 2, "local_step_clipper": clipper, "cuda_aware": False,
              "comm_backend_name": "mpi"}
    return {"optimizer": {"type": kind, "params": params}, "gradient_clipping": 1.0}


# DeepSpeed's counters with these keys: variance steps 2, 3, 4, 6, 8 (the interval doubling after every
# 2 variance updates); frozen from step 10 (var_freeze_step 8); syncs at 10, 11 (interval 1), 12
# (interval 2), 16 (interval 4, the clipper).
KINDS = ["exact"] * 4 + ["compressed", "exact", "compressed", "exact", "compressed", "compressed", "compressed",
                         "compressed", "local", "local", "local", "compressed"]

p, lines = H.run("phases", "tiny", {"stage": 0}, 16, more=optimizer("zerooneadam"))
check(p.returncode == 0, f"the run finishes with the type written in lower case (rc {p.returncode})")
start = ([l for l in lines if l["event"] == "start"] or [{}])[0]
steps = [l for l in lines if l["event"] == "step"]
check([s.get("optimizer_comm") for s in steps] == KINDS, "the records' kinds of step follow DeepSpeed's counters")
want = {k: (start.get(f"expected_comm_bytes_intra_per_step{sfx}"), start.get(f"expected_comm_bytes_inter_per_step{sfx}"))
        for k, sfx in (("exact", ""), ("compressed", "_compressed"), ("local", "_local"))}
bad = [s["step"] for s in steps if (s["comm_bytes_intra"], s["comm_bytes_inter"]) != want.get(s.get("optimizer_comm"))]
check(steps and not bad, f"every step's link bytes equal the predictor's for its kind (differ at {bad[:5]})")
check(all((s["comm_bytes"]["all_reduce"] > 0) == (s["optimizer_comm"] == "exact") and
          (s["comm_bytes"]["all_to_all"] > 0) == (s["optimizer_comm"] == "compressed") for s in steps),
      "exact steps all-reduce, compressed ones send all-to-alls, local ones neither")
if len(steps) == 16:
    # tiny's tensors are small and each pads to a multiple of 64 elements at 8 ranks: about 1/16 of an
    # fp32 step here (onebit_test.py measures `small`'s 1/32).
    e, c, l = (steps[i]["comm_bytes_intra"] + steps[i]["comm_bytes_inter"] for i in (1, 4, 12))
    check(c < e / 16 and l < c / 10, f"link bytes: compressed step {c} = 1/{e / c:.1f} of an exact step's {e}; local step {l}")
check(p.stdout.count("0/1 Adam: from step 5 the gradients") == 1 and p.stdout.count("0/1 Adam: from step 10 the variance is frozen") == 1,
      "the first compressed step and the frozen phase are each announced once for the job")

# Resume in each phase to the uninterrupted run's parameters.
ck = os.path.join(H.root, "ck")
sums = {}
runs = (("straight", [], 8), ("saved", ["--save", ck, "--save-every", "2"], 8),
        ("from_variance", ["--load", ck, "--load-tag", "global_step8"], 8),
        ("from_sync", ["--load", ck, "--load-tag", "global_step12"], 8),
        ("from_local", ["--load", ck, "--load-tag", "global_step14"], 8),
        ("other_world", ["--load", ck, "--load-tag", "global_step14"], 4))
for name, extra, np in runs:
    more = dict(optimizer(), train_micro_batch_size_per_gpu=8 // np)  # the saved run's global batch
    p, lines = H.run("resume_" + name, "tiny", {"stage": 0}, 18, extra=extra, more=more, np=np, rpn=4 if np == 8 else 2)
    end = [l for l in lines if l["event"] == "end"]
    check(p.returncode == 0 and bool(end), f"{name} run finishes (rc {p.returncode})")
    sums[name] = (end[0]["param_checksum"] if end else None, p, [l for l in lines if l["event"] == "step"])
same = [n for n in ("saved", "from_variance", "from_sync", "from_local") if sums[n][0] != sums["straight"][0]]
check(sums["straight"][0] is not None and not same,
      f"saved in the variance phase (8), at a sync (12) and between syncs (14), loaded: the uninterrupted run's "
      f"parameters (differ: {same})")
p, resumed = sums["from_local"][1], sums["from_local"][2]
check(bool(resumed) and resumed[0]["step"] == 15 and resumed[0]["optimizer_comm"] == "local",
      "loaded at step 14: step 15 is local at once (no second dry run)")
check("restart" not in p.stdout, "a load at the same world size restores each rank's own arrays, no warning")
p, resumed = sums["other_world"][1], sums["other_world"][2]
check(p.stdout.count("own arrays restart") == 1 and "local steps from the loaded parameters" in p.stdout and
      "saved at world size 8" in p.stdout, "loaded at 4 ranks from 8 between syncs: one warning saying what restarts")
check(bool(resumed) and resumed[0]["optimizer_comm"] == "local" and all(s["loss"] == s["loss"] for s in resumed),
      "and the run continues in the frozen phase without NaN")

# Refusals, once for the job, naming the key.
p, _ = H.run("with_zero", "tiny", {"stage": 1}, 1, more=optimizer())
check(p.returncode != 0 and p.stdout.count("error: zero_optimization.stage = 1") == 1 and "ZeroOneAdam keeps every" in p.stdout,
      "ZeroOneAdam with ZeRO stage 1: refused once, naming zero_optimization.stage")
p, _ = H.run("clipper", "tiny", {"stage": 0}, 1, more=optimizer(clipper=0))
check(p.returncode != 0 and p.stdout.count("error: optimizer.params.local_step_clipper = 0") == 1,
      "local_step_clipper 0: refused once, naming the key")

H.finish("zero_one_test")
