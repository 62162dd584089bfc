#!/usr/bin/env python3
"""zerotrain tune against an exhaustive search on the same grid, in the same session: every
(stage, offload, micro batch) trial of the grid run once (tuner_early_stopping and the cap out of the
way, every power-of-two micro batch), then the tuner with DeepSpeed's defaults (early stopping 5,
num_tuning_micro_batch_sizes 3, the best three re-run). The two picks are then measured again,
alternately, --remeasure times each with the same step count, and the tuner's pick is compared with
the exhaustive best by the medians (goal >= 0.95): a single run of each of 28 trials makes the
exhaustive maximum partly the luckiest run, so its own first-pass numbers are printed beside. Also
the tuner's runs and wall time over the exhaustive run's (goal <= 0.40). Prints JSON lines, then a
table.
Usage: tune_vs_exhaustive.py ZEROTRAIN [--model small] [--world-size 2] [--max-micro 8] [--steps 20]
       [--remeasure 3] [--out DIR]"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("zerotrain")
p.add_argument("--model", default="small")
p.add_argument("--world-size", type=int, default=2)
p.add_argument("--max-micro", type=int, default=8)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--remeasure", type=int, default=3)
p.add_argument("--stages", default="0,1,2,3")
p.add_argument("--offload", default="none,cpu")
p.add_argument("--out", default=None)
a = p.parse_args()
root = a.out or tempfile.mkdtemp(prefix="zt_tune_bench_")
os.makedirs(root, exist_ok=True)
launcher = " ".join(["mpirun", "-q", "--oversubscribe", "--bind-to", "none"] +
                    (["--allow-run-as-root"] if os.geteuid() == 0 else []))
env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
powers = 0
m = 1
while m <= a.max_micro:
    powers, m = powers + 1, m * 2


def config(name, **autotuning):
    c = {"train_batch_size": 8 * a.world_size, "gradient_clipping": 1.0,
         "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "weight_decay": 0.1}},
         "bf16": {"enabled": True}, "zero_optimization": {"stage": 0},
         "autotuning": dict({"enabled": True, "max_train_micro_batch_size_per_gpu": a.max_micro}, **autotuning)}
    path = os.path.join(root, name + ".json")
    json.dump(c, open(path, "w"), indent=1)
    return path


def tune(name, cfg, repeats):
    out = os.path.join(root, name)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [a.zerotrain, "tune", "--config", cfg, "--model", a.model, "--world-size", str(a.world_size),
           "--stages", a.stages, "--offload", a.offload, "--steps", str(a.steps), "--repeats", str(repeats),
           "--launcher", launcher, "--out", out]
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    wall = time.monotonic() - t0
    text = r.stdout.decode(errors="replace")
    if r.returncode != 0:
        sys.exit("%s failed (exit %d):\n%s" % (name, r.returncode, text[-3000:]))
    rows = list(csv.DictReader(open(os.path.join(out, "tune.csv"))))
    runs = sum(int(x["runs"]) for x in rows)
    return rows, runs, wall


exh_rows, exh_runs, exh_wall = tune("exhaustive", config("exhaustive", tuner_early_stopping=10000, tuner_num_trials=10000,
                                                         num_tuning_micro_batch_sizes=powers), 1)
tun_rows, tun_runs, tun_wall = tune("tuned", config("tuned"), 2)
measured = {x["trial"]: float(x["tokens_per_s"]) for x in exh_rows if x["status"] == "ok"}
best_name = max(measured, key=measured.get)
pick = [x for x in tun_rows if x["picked"] == "yes"][0]["trial"]
first_share = measured.get(pick, 0.0) / measured[best_name]


def remeasure(name, cfg_path, k):
    metrics = os.path.join(root, "remeasure_%s_%d.jsonl" % (name, k))
    cmd = launcher.split() + ["-np", str(a.world_size), a.zerotrain, "--config", cfg_path, "--model", a.model, "--steps",
                              str(a.steps), "--eval-every", "0", "--eval-batches", "1", "--metrics", metrics]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    if r.returncode != 0:
        sys.exit("remeasure %s failed:\n%s" % (name, r.stdout.decode(errors="replace")[-3000:]))
    steps = [json.loads(x) for x in open(metrics) if '"event": "step"' in x or '"event":"step"' in x]
    window = [x for x in steps if x["step"] >= 3] or steps[-1:]
    secs = sum(x["step_ms"] for x in window) / 1e3
    return sum(x["tokens_per_s"] * x["step_ms"] / 1e3 for x in window) / secs


picks = {"exhaustive": os.path.join(root, "exhaustive", "exps", best_name, "ds_config.json"),
         "tuned": os.path.join(root, "tuned", "ds_config_optimal.json")}
again = {"exhaustive": [], "tuned": []}
for k in range(a.remeasure):
    for name in ("exhaustive", "tuned") if k % 2 == 0 else ("tuned", "exhaustive"):
        again[name].append(remeasure(name, picks[name], k))
med = {n: sorted(v)[len(v) // 2] for n, v in again.items()}
share = med["tuned"] / med["exhaustive"] if pick != best_name else 1.0
result = {"bench": "tune_vs_exhaustive", "model": a.model, "world_size": a.world_size, "max_micro": a.max_micro,
          "steps": a.steps, "exhaustive_trials": len(exh_rows), "exhaustive_runs": exh_runs,
          "exhaustive_wall_s": round(exh_wall, 1), "exhaustive_best": best_name,
          "exhaustive_best_tokens_per_s": measured[best_name], "tuned_trials": len(tun_rows), "tuned_runs": tun_runs,
          "tuned_wall_s": round(tun_wall, 1), "tuned_pick": pick, "pick_tokens_per_s_in_exhaustive": measured.get(pick),
          "first_pass_share": round(first_share, 3), "remeasured_tokens_per_s": again,
          "pick_share_of_best": round(share, 3), "runs_ratio": round(tun_runs / exh_runs, 3),
          "wall_ratio": round(tun_wall / exh_wall, 3)}
print(json.dumps(result))
print("\n| search | trials | runs | wall (s) | pick | its tokens/s in the exhaustive pass | re-measured median | share |")
print("|---|---|---|---|---|---|---|---|")
print("| exhaustive | %d | %d | %.0f | %s | %.0f | %.0f | 1.000 |" % (len(exh_rows), exh_runs, exh_wall, best_name,
                                                                   measured[best_name], med["exhaustive"]))
print("| zerotrain tune | %d | %d | %.0f | %s | %.0f | %.0f | %.3f |" % (len(tun_rows), tun_runs, tun_wall, pick,
                                                                       measured.get(pick, 0), med["tuned"], share))
print("\nruns ratio %.2f (goal <= 0.40), wall ratio %.2f (goal <= 0.40), pick share %.3f (goal >= 0.95)" %
      (tun_runs / exh_runs, tun_wall / exh_wall, share))
