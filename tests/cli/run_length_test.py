#!/usr/bin/env python3
"""The run's length through the binary, one case per row of configs/README.md's run-length table:
--steps below a concrete schedule trains its start and says so; a checkpoint saved there continues
to the schedule's end (no --steps) bitwise as the uninterrupted run; --steps past the schedule is
refused naming both; an "auto" total takes --steps; without either the default length.
Usage: run_length_test.py ZEROTRAIN MPIRUN"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zt_metrics  # noqa: E402 (found through the path above)

ZT, MPIRUN = sys.argv[1], sys.argv[2]
MPI = [MPIRUN, "-q", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1")
ROOT = tempfile.mkdtemp(prefix="zt_run_length_")
FAILURES = []
PER_STEP = ("loss", "lr", "grad_norm")


def config(name, scheduler):
    c = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
         "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "weight_decay": 0.1}},
         "scheduler": scheduler, "zero_optimization": {"stage": 2}}
    path = os.path.join(ROOT, name + ".json")
    json.dump(c, open(path, "w"))
    return path


DECAY8 = {"type": "WarmupDecayLR", "params": {"warmup_max_lr": 3e-3, "warmup_num_steps": 2, "total_num_steps": 8}}
COSINE_AUTO = {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 2, "total_num_steps": "auto"}}
WARMUP = {"type": "WarmupLR", "params": {"warmup_max_lr": 3e-3, "warmup_num_steps": 2}}


def run(name, cfg, extra, expect_rc=0):
    metrics = os.path.join(ROOT, name + ".jsonl")
    cmd = MPI + ["-np", "2", ZT, "--config", cfg, "--model", "tiny", "--eval-every", "0", "--eval-batches", "1",
                 "--metrics", metrics] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, stdin=subprocess.DEVNULL,
                       timeout=120)
    out = p.stdout.decode(errors="replace")
    m = zt_metrics.read_metrics(metrics)  # a refused run leaves no file: no steps, no end
    check(name, p.returncode == expect_rc, "exit %d, want %d:\n%s" % (p.returncode, expect_rc, out[-2000:]))
    return out, m.steps, m.end


def check(name, ok, what):
    if not ok:
        FAILURES.append(name)
        print("FAIL %s: %s" % (name, what), flush=True)
    return ok


def has(name, out, pattern):
    return check(name, re.search(pattern, out, re.M) is not None, "no match for %r in:\n%s" % (pattern, out[-2000:]))


def main():
    decay = config("decay8", DECAY8)
    save = os.path.join(ROOT, "ckpt")
    # Row: --steps N below a concrete schedule trains its first N steps and says so.
    out, first, _ = run("steps_below_schedule", decay, ["--steps", "4", "--save", save, "--save-every", "2"])
    has("steps_below_schedule", out, r"run: 4 steps \(flag --steps\) of a 8-step schedule \(scheduler\.params\.total_num_steps: file\)")
    has("steps_below_schedule", out, r"schedule: step 4 of 8; save with --save DIR and resume with --load DIR")
    check("steps_below_schedule", sorted(first) == [1, 2, 3, 4], "steps %s" % sorted(first))
    # Row: no --steps with a concrete schedule trains the whole schedule.
    out, straight, straight_end = run("whole_schedule", decay, [])
    has("whole_schedule", out, r"run: 8 steps \(derived: the whole schedule")
    check("whole_schedule", sorted(straight) == list(range(1, 9)), "steps %s" % sorted(straight))
    # The first run's steps are the schedule's first steps (the lr follows the 8-step decay).
    for s in first:
        check("steps_below_schedule", first[s]["lr"] == straight[s]["lr"] and first[s]["loss"] == straight[s]["loss"],
              "step %d: lr %r loss %r, the whole schedule has %r %r" % (s, first[s]["lr"], first[s]["loss"],
                                                                      straight[s]["lr"], straight[s]["loss"]))
    # Resume from step 4 to the schedule's end: bitwise the uninterrupted run.
    out, resumed, end = run("resume_to_schedule_end", decay, ["--load", save])
    has("resume_to_schedule_end", out, r"loaded checkpoint .*global_step4: step 4")
    check("resume_to_schedule_end", sorted(resumed) == [5, 6, 7, 8], "resumed steps %s" % sorted(resumed))
    for s in resumed:
        for k in PER_STEP:
            check("resume_to_schedule_end", resumed[s][k] == straight.get(s, {}).get(k),
                  "step %d %s: resumed %r, straight %r" % (s, k, resumed[s][k], straight.get(s, {}).get(k)))
    if end and straight_end:
        check("resume_to_schedule_end", end["param_checksum"] == straight_end["param_checksum"],
              "param_checksum %s, straight %s" % (end["param_checksum"], straight_end["param_checksum"]))
    else:
        check("resume_to_schedule_end", False, "no end record")
    # Row: --steps past a concrete schedule is an error naming both.
    out, _, _ = run("steps_past_schedule", decay, ["--steps", "9"], expect_rc=2)
    has("steps_past_schedule", out, r"^error: --steps = 9: past the end of the schedule: scheduler\.params\.total_num_steps "
                                    r"is 8 .*Fix: pass --steps 8 or less, or raise total_num_steps to 9")
    check("steps_past_schedule", out.count("past the end of the schedule") == 1, "printed more than once:\n" + out)
    # Row: an "auto" total takes --steps.
    out, steps, _ = run("auto_total", config("cosine_auto", COSINE_AUTO), ["--steps", "3"])
    has("auto_total", out, r"run: 3 steps \(flag --steps\), the whole 3-step schedule \(scheduler\.params\.total_num_steps: auto <- --steps\)")
    check("auto_total", sorted(steps) == [1, 2, 3], "steps %s" % sorted(steps))
    # Row: neither: the default length (checked, not trained).
    p = subprocess.run([ZT, "check", "--config", config("warmup", WARMUP), "--model", "tiny"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=ENV, timeout=60)
    has("default_length", p.stdout.decode(), r"run length = 200 steps \(the default: --steps not given\); WarmupLR has no end")
    print("run_length_test: %d passed, %d failed" % (7 - len(set(FAILURES)), len(set(FAILURES))))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    try:
        rc = main()
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
    sys.exit(rc)
