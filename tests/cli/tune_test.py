#!/usr/bin/env python3
"""`zerotrain tune` through the binary, as a user runs it: tiny at 2 ranks over stages 0-3 and
optimizer offload none/cpu with real trials; the pick's ds_config passes `check`; no trial for a
cell the plan drops; every ok trial's planned peak within 10% of the measured one; --keep-global-batch
keeps train_batch_size in every trial; a second tune with overwrite false reuses every trial;
8 ranks; --params plans only; bad input (mp_size, --steps before the profile window, an unknown
stage) exits 2 naming the key, leaving no results folder; a missing launcher, an unwritable results
folder and trial flags that change the model are refused before any trial; SIGINT ends the running
trial's job and the tune (exit 130) with nothing left running.
Usage: tune_test.py ZEROTRAIN MPIRUN"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ZT, MPIRUN = sys.argv[1], sys.argv[2]
LAUNCHER = " ".join([MPIRUN, "-q", "--oversubscribe", "--bind-to", "none"] +
                    (["--allow-run-as-root"] if os.geteuid() == 0 else []))
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1")
ROOT = tempfile.mkdtemp(prefix="zt_tune_")
FAILURES = []


def check(name, ok, what):
    if not ok:
        FAILURES.append(name)
        print("FAIL %s: %s" % (name, what), flush=True)
    return ok


def base(path, stage="all", extra=None, **autotuning):
    c = dict(extra or {}, **{"train_batch_size": 16, "gradient_clipping": 1.0,
         "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "weight_decay": 0.1}},
         "zero_optimization": {"stage": stage},
         "autotuning": dict({"enabled": True, "max_train_micro_batch_size_per_gpu": 8,
                             "num_tuning_micro_batch_sizes": 2, "tuner_early_stopping": 100}, **autotuning)})
    p = os.path.join(ROOT, path)
    json.dump(c, open(p, "w"), indent=1)
    return p


def tune(name, args, expect_rc=0):
    cmd = [ZT, "tune", "--launcher", LAUNCHER, "--steps", "5", "--repeats", "1"] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, stdin=subprocess.DEVNULL,
                       timeout=600)
    out = p.stdout.decode(errors="replace")
    check(name, p.returncode == expect_rc, "exit %d, want %d:\n%s" % (p.returncode, expect_rc, out[-3000:]))
    return out


def rows(out_dir):
    with open(os.path.join(out_dir, "tune.csv")) as f:
        return list(csv.DictReader(f))


# 1. The grid: stages 0-3 × offload none/cpu at 2 ranks.
out1 = os.path.join(ROOT, "grid")
cfg = base("grid.json")
text = tune("grid", ["--config", cfg, "--model", "tiny", "--world-size", "2", "--offload", "none,cpu", "--out", out1])
trials = rows(out1) if os.path.exists(os.path.join(out1, "tune.csv")) else []
check("grid: trials ran", len(trials) >= 7, "%d rows:\n%s" % (len(trials), text[-2000:]))
check("grid: z0_cpu dropped, never run", all(r["cell"] != "z0_cpu" for r in trials) and
      re.search(r"z0_cpu dropped before any trial: optimizer offload needs ZeRO stage 1", text), text[-2000:])
check("grid: every trial ok", all(r["status"] == "ok" for r in trials), [r["status"] for r in trials])
check("grid: fast mode's trial bound", len(trials) <= 7 * (2 + 1), len(trials))
for r in trials:
    if r["status"] == "ok":
        check("grid: plan within 10%% (%s)" % r["trial"], abs(float(r["plan_error_pct"])) <= 10.0 and not r["plan_flag"],
              r)
picked = [r for r in trials if r["picked"] == "yes"]
check("grid: one pick", len(picked) == 1, picked)
optimal = os.path.join(out1, "ds_config_optimal.json")
check("grid: optimal config and command", os.path.exists(optimal) and
      open(os.path.join(out1, "cmd_optimal.txt")).read().count("ds_config_optimal.json") == 1, os.listdir(out1))
if os.path.exists(optimal):
    c = json.load(open(optimal))
    check("grid: no autotuning block in the pick", "autotuning" not in c, c)
    p = subprocess.run([ZT, "check", "--config", optimal, "--world-size", "2", "--model", "tiny", "--backend", "cpu"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check("grid: check passes the pick", p.returncode == 0, p.stdout.decode()[-2000:])
for svg in ("tokens_per_s.svg", "plan_vs_measured.svg"):
    path = os.path.join(out1, svg)
    body = open(path).read() if os.path.exists(path) else ""
    check("grid: %s drawn" % svg, body.startswith("<svg") and body.rstrip().endswith("</svg>"), path)
    if svg == "tokens_per_s.svg":  # one bar per ok trial, the pick outlined
        check("grid: a bar per trial", body.count("<rect") == sum(r["status"] == "ok" for r in trials) and
              body.count('stroke="black"') == 1, body[:500])
    else:
        check("grid: a point per ok trial", body.count("<circle") == sum(r["status"] == "ok" for r in trials), body[:500])
summary = open(os.path.join(out1, "summary.txt")).read() if os.path.exists(os.path.join(out1, "summary.txt")) else ""
check("grid: summary in DeepSpeed's columns", "| tuning_space | num_experiments | best_metric_val | best_exp_name |" in summary,
      summary)
check("grid: one progress line per trial", len(re.findall(r"^tune: trial \d+ of at most \d+: ", text, re.M)) == len(trials),
      text[-2000:])

# 2. Reuse: the same tune with overwrite false runs nothing again.
cfg_keep = base("grid_reuse.json", overwrite=False)
text = tune("reuse", ["--config", cfg_keep, "--model", "tiny", "--world-size", "2", "--offload", "none,cpu", "--out", out1])
n_trials = len(re.findall(r"^tune: trial \d+", text, re.M))
check("reuse: every trial read back", n_trials > 0 and n_trials == len(re.findall(r"^tune: trial .*\[reused\]", text, re.M)),
      text[-2000:])

# 3. --keep-global-batch: train_batch_size 16 in every trial, micro batches dividing 8 per rank.
out3 = os.path.join(ROOT, "keep")
text = tune("keep", ["--config", base("keep.json", stage=2), "--model", "tiny", "--world-size", "2",
                     "--keep-global-batch", "--out", out3])
kept = rows(out3) if os.path.exists(os.path.join(out3, "tune.csv")) else []
check("keep: trials", len(kept) >= 2, text[-2000:])
check("keep: the global batch is kept", all(r["train_batch_size"] == "16" for r in kept), [r["train_batch_size"] for r in kept])
for r in kept:
    cfgr = json.load(open(os.path.join(out3, "exps", r["trial"], "ds_config.json")))
    check("keep: trial config %s" % r["trial"], cfgr["train_batch_size"] == 16 and
          cfgr["train_micro_batch_size_per_gpu"] * cfgr["gradient_accumulation_steps"] * 2 == 16, cfgr)

# 4. Eight ranks, as a user would.
out4 = os.path.join(ROOT, "eight")
text = tune("eight", ["--config", base("eight.json", stage=2, max_train_micro_batch_size_per_gpu=2), "--model", "tiny",
                      "--world-size", "8", "--out", out4])
eight = rows(out4) if os.path.exists(os.path.join(out4, "tune.csv")) else []
check("eight: trials ok", eight and all(r["status"] == "ok" for r in eight), text[-2000:])

# 5. --params: plan only, for a size with no model to run.
text = tune("params", ["--config", base("params.json", extra={"bf16": {"enabled": True}}), "--params", "7B", "--hidden-size", "4096", "--world-size", "8",
                       "--backend", "cuda", "--gpu-memory", "80G", "--host-ram", "1T", "--offload", "none,cpu"])
check("params: planning only", "planning only (--params" in text and re.search(r"z3: largest micro batch", text), text)
check("params: a cell that cannot fit says why", re.search(r"z0: dropped: .*(GPU|memory)", text), text)

# 6. Bad input: exit 2, the key named, nothing written.
for name, args, pattern in [
    ("mp_size", ["--config", base("mp.json", mp_size=2), "--model", "tiny", "--world-size", "2"], r"autotuning\.mp_size = 2"),
    ("steps", ["--config", base("steps.json", start_profile_step=9), "--model", "tiny", "--world-size", "2"], r"--steps = 5"),
    ("stage", ["--config", base("stage.json"), "--model", "tiny", "--world-size", "2", "--stages", "0,7"], r"--stages = 7"),
    ("metric", ["--config", base("metric.json", metric="speed"), "--model", "tiny", "--world-size", "2"],
     r"autotuning\.metric = \"speed\""),
]:
    out_bad = os.path.join(ROOT, "bad_" + name)
    text = tune("bad " + name, args + ["--out", out_bad], expect_rc=2)
    check("bad %s: names the key" % name, re.search(pattern, text), text)
    check("bad %s: nothing written" % name, not os.path.exists(out_bad), out_bad)

# 7. Refused before any trial: a launcher that is not there, a results folder under a file, a trial
#    flag that changes the model behind the plan's back.
afile = os.path.join(ROOT, "afile")
open(afile, "w").write("x")
for name, args, pattern in [
    ("launcher", ["--launcher", "no-such-launcher"], r"--launcher = no-such-launcher: not found on PATH"),
    ("out", ["--out", os.path.join(afile, "out")], r"results_dir = .*afile/out: cannot be created or written"),
    ("shape flag", ["--", "--seq-len", "512"], r"-- \(trial flags\) = --seq-len: changes the model"),
    ("model flag", ["--", "--model", "small"], r"-- \(trial flags\) = --model: the plan must know it"),
]:
    cmd = [ZT, "tune", "--steps", "5", "--config", base("refused.json", stage=2), "--model", "tiny", "--world-size", "2"]
    if "--launcher" not in args:
        cmd += ["--launcher", LAUNCHER]
    if "--out" not in args:
        cmd += ["--out", os.path.join(ROOT, "refused")]
    p = subprocess.run(cmd + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, timeout=120)
    text = p.stdout.decode(errors="replace")
    check("refused %s: exit 2" % name, p.returncode == 2, "exit %d:\n%s" % (p.returncode, text[-2000:]))
    check("refused %s: says why" % name, re.search(pattern, text), text)
    check("refused %s: no trial ran" % name, "tune: trial" not in text, text)

# 7b. Under mpirun itself (8 ranks): refused once, exit 2 (tune launches its own jobs).
p = subprocess.run(LAUNCHER.split() + ["-np", "8", ZT, "tune", "--config", base("nested.json", stage=2), "--model", "tiny",
                                       "--world-size", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV,
                   timeout=120)
text = p.stdout.decode(errors="replace")
check("nested: exit 2", p.returncode == 2, "exit %d:\n%s" % (p.returncode, text[-2000:]))
check("nested: said once", text.count("tune launches every trial as a job of its own") == 1, text)

# 8. SIGINT during a trial: the trial's job is ended, the tune exits 130, no rank is left running.
out8 = os.path.join(ROOT, "sigint")
proc = subprocess.Popen([ZT, "tune", "--launcher", LAUNCHER, "--steps", "100000", "--trial-timeout", "300",
                         "--config", base("sigint.json", stage=2), "--model", "small", "--world-size", "2", "--out", out8],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV)
deadline = time.time() + 60
log = None
while time.time() < deadline and log is None:  # wait until the first trial's job is training
    for dirpath, _, files in os.walk(os.path.join(out8, "exps")):
        for f in files:
            if f.startswith("metrics_") and os.path.getsize(os.path.join(dirpath, f)) > 0:
                log = os.path.join(dirpath, f)
    time.sleep(0.2)
check("sigint: a trial started", log is not None, "no metrics file under %s" % out8)
proc.send_signal(signal.SIGINT)
try:
    out, _ = proc.communicate(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    out, _ = proc.communicate()
text = out.decode(errors="replace")
check("sigint: exit 130", proc.returncode == 130, "exit %s:\n%s" % (proc.returncode, text[-2000:]))
check("sigint: says what happened", "stopped by signal 2" in text, text[-2000:])
time.sleep(1)
left = subprocess.run(["pgrep", "-f", out8], stdout=subprocess.PIPE).stdout.decode().split()
check("sigint: no process left", not left, left)
for pid in left:
    os.kill(int(pid), signal.SIGKILL)

shutil.rmtree(ROOT, ignore_errors=True)
if FAILURES:
    print("tune_test: %d failure(s): %s" % (len(FAILURES), ", ".join(FAILURES)))
    sys.exit(1)
print("tune_test: ok")
