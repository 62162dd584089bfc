#!/usr/bin/env python3
"""MiCS through the binary at 8 ranks as two "nodes" of 4, from DeepSpeed's keys: mics_shard_size 8
trains the parameters of plain stage 3; mics_shard_size 4 (one node) sends between nodes only the
replica all-reduce (and the loss), one call a step, equal to the predictor, fewer bytes than flat
stage 3; the hierarchical gather over groups of 8 is bitwise the flat MiCS run with fewer inter-node
bytes. Refused once for the job, each naming its key: the hierarchical gather inside one node, a
shard size that does not divide the world, and --save with replicas (MiCS checkpoints are not built).
Usage: mics_test.py ZEROTRAIN MPIRUN"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ZT, MPIRUN = sys.argv[1], sys.argv[2]
MPI = [MPIRUN, "-q", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1")
ROOT = tempfile.mkdtemp(prefix="zt_mics_")
FAILURES = []
FLAGS = ["--model", "tiny", "--steps", "2", "--eval-every", "0", "--micro-batch", "2", "--ranks-per-node", "4"]


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def config(name, **zero):
    path = os.path.join(ROOT, name + ".json")
    json.dump({"train_micro_batch_size_per_gpu": 2, "zero_optimization": dict(stage=3, **zero)}, open(path, "w"))
    return path


def run(name, extra, **zero):
    return subprocess.run(MPI + ["-np", "8", ZT] + FLAGS + ["--config", config(name, **zero)] + extra,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, text=True, timeout=240)


def measured(name, **zero):
    m = os.path.join(ROOT, name + ".jsonl")
    p = run(name, ["--metrics", m], **zero)
    check(p.returncode == 0, name + ": the run finishes (rc %d)" % p.returncode)
    if p.returncode != 0:
        print(p.stdout[-3000:])
        return None
    lines = [json.loads(l) for l in open(m)]
    start = [l for l in lines if l["event"] == "start"][0]
    steps = [l for l in lines if l["event"] == "step"]
    end = [l for l in lines if l["event"] == "end"]
    for s in steps:
        check(s["comm_bytes_intra"] == start["expected_comm_bytes_intra_per_step"] and
              s["comm_bytes_inter"] == start["expected_comm_bytes_inter_per_step"],
              name + ": step %d's link bytes (%d, %d) equal the predictor's (%d, %d)" % (
                  s["step"], s["comm_bytes_intra"], s["comm_bytes_inter"],
                  start["expected_comm_bytes_intra_per_step"], start["expected_comm_bytes_inter_per_step"]))
    return start, steps, end[0]["param_checksum"] if end else None


try:
    flat = measured("flat")
    whole = measured("mics8", mics_shard_size=8)
    node = measured("mics4", mics_shard_size=4)
    hier = measured("mics8h", mics_shard_size=8, mics_hierarchical_params_gather=True)
    if flat and whole:
        check(whole[0]["mics_shard_size"] == 8, "the start record names mics_shard_size 8")
        check(whole[2] == flat[2] and flat[2] is not None,
              "mics_shard_size 8 = the world: plain stage 3's parameters (%s, %s)" % (whole[2], flat[2]))
    if flat and node:
        for f, s in zip(flat[1], node[1]):
            replica = s.get("comm_groups", {}).get("replica", {})
            calls = replica.get("calls", {})
            check(calls.get("all_reduce") == 1 and sum(calls.values()) == 1,
                  "mics 4, step %d: one replica call, an all-reduce (%s)" % (s["step"], calls))
            check(s["comm_bytes_inter"] < f["comm_bytes_inter"],
                  "mics 4, step %d: %d inter-node bytes against flat stage 3's %d" % (
                      s["step"], s["comm_bytes_inter"], f["comm_bytes_inter"]))
    if whole and hier:
        check(hier[0]["mics_hierarchical_params_gather"] is True, "the start record names the hierarchical gather")
        check(hier[2] == whole[2] and hier[2] is not None,
              "the hierarchical gather trains the flat MiCS run's parameters (%s, %s)" % (hier[2], whole[2]))
        for w, h in zip(whole[1], hier[1]):
            check(h["comm_bytes_inter"] < w["comm_bytes_inter"],
                  "hierarchical, step %d: %d inter-node bytes against flat MiCS's %d" % (
                      h["step"], h["comm_bytes_inter"], w["comm_bytes_inter"]))
    for name, extra, zero, key, msg in [
        ("inside", [], dict(mics_shard_size=4, mics_hierarchical_params_gather=True),
         "zero_optimization.mics_hierarchical_params_gather", "sits inside one node of 4 ranks"),
        ("tile", [], dict(mics_shard_size=3), "zero_optimization.mics_shard_size", "must tile the world of 8 ranks"),
        ("save", ["--save", os.path.join(ROOT, "ck")], dict(mics_shard_size=4), "zero_optimization.mics_shard_size",
         "MiCS checkpoints are not built yet"),
    ]:
        p = run(name, extra, **zero)
        check(p.returncode == 2 and p.stdout.count(msg) == 1 and key in p.stdout,
              "%s: refused once, naming %s (rc %d, %d copies)" % (name, key, p.returncode, p.stdout.count(msg)))
        if p.returncode != 2:
            print(p.stdout[-2000:])
    check(not os.path.exists(os.path.join(ROOT, "ck")), "the refused save left no checkpoint folder")
finally:
    shutil.rmtree(ROOT, ignore_errors=True)

print("%d failure(s)" % len(FAILURES))
sys.exit(1 if FAILURES else 0)
