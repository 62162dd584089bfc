#!/usr/bin/env python3
"""Node topology through the binary: at 8 ranks as two "nodes" of 4 (and 4 as two of 2) every step's
--metrics record carries the bytes on intra- and inter-node links, equal to the predictor in the
start record, the inter-node share the node-aware model's ((nodes - 1) x the algorithm bytes); one node
sends nothing between nodes; a --ranks-per-node or ZT_RANKS_PER_NODE that does not divide the world
is refused once for the job, naming the value. hpZ at 8 ranks as 2 x 4, accumulation 1 and 4: the same
parameters, losses and grad norms as flat stage 3, at most 0.70 of its bytes between nodes (forward's gathers alone cross), equal to the
predictor; saved at step 2 and loaded, it continues to the uninterrupted run's parameters; a group
that straddles nodes is refused, one smaller than a node warned about, once each.
Usage: topology_test.py ZEROTRAIN MPIRUN"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ZT, MPIRUN = sys.argv[1], sys.argv[2]
MPI = [MPIRUN, "-q", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1")
ROOT = tempfile.mkdtemp(prefix="zt_topology_")
FAILURES = []
FLAGS = ["--model", "tiny", "--steps", "2", "--eval-every", "0", "--micro-batch", "2"]


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def config(stage, **zero):
    path = os.path.join(ROOT, "stage%d%s.json" % (stage, "".join("_%s%s" % kv for kv in sorted(zero.items()))))
    json.dump({"train_micro_batch_size_per_gpu": 2, "zero_optimization": dict(stage=stage, **zero)}, open(path, "w"))
    return path


def run(np_, extra, env=None, flags=FLAGS):
    return subprocess.run(MPI + ["-np", str(np_), ZT] + flags + extra, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env or ENV, text=True, timeout=240)


def records(path):
    lines = [json.loads(l) for l in open(path)]
    return [l for l in lines if l["event"] == "start"][0], [l for l in lines if l["event"] == "step"]


try:
    for np_, n, stage in [(8, 4, 3), (8, 4, 2), (4, 2, 0), (4, 2, 3), (8, 8, 3)]:
        name = "np%d n%d stage %d" % (np_, n, stage)
        m = os.path.join(ROOT, "m_%d_%d_%d.jsonl" % (np_, n, stage))
        p = run(np_, ["--config", config(stage), "--ranks-per-node", str(n), "--metrics", m])
        check(p.returncode == 0, name + ": the run finishes (rc %d)" % p.returncode)
        if p.returncode != 0:
            print(p.stdout[-2000:])
            continue
        start, steps = records(m)
        nodes = np_ // n
        check(start["ranks_per_node"] == n and start["nodes"] == nodes, name + ": the start record names the topology")
        for s in steps:
            total = s["comm_bytes_intra"] + s["comm_bytes_inter"]
            check(s["comm_bytes_intra"] == start["expected_comm_bytes_intra_per_step"] and
                  s["comm_bytes_inter"] == start["expected_comm_bytes_inter_per_step"],
                  name + ": step %d's link bytes (%d, %d) equal the predictor's (%d, %d)" % (
                      s["step"], s["comm_bytes_intra"], s["comm_bytes_inter"],
                      start["expected_comm_bytes_intra_per_step"], start["expected_comm_bytes_inter_per_step"]))
            # Algorithm bytes on every hop: (W-1)/W of each call, twice for an all-reduce.
            algo = sum(v * (2 if k == "all_reduce" else 1) for k, v in s["comm_bytes"].items())
            check(total == algo * (np_ - 1), name + ": the links carry (W-1) x the algorithm bytes")
            # Node-aware: each node sends each other node one copy of what it needs, (N-1) x A.
            check(s["comm_bytes_inter"] == algo * (nodes - 1),
                  name + ": (nodes - 1) x the algorithm bytes cross nodes")
    # hpZ beside flat stage 3, the paper's case (every backward gathers again).
    paper = {"stage3_max_reuse_distance": 0, "stage3_param_persistence_threshold": 0}
    for accum in (1, 4):  # at 4, later micro-steps' forwards gather from the secondary copy too
        got = {}
        for name, zero in (("flat", paper), ("hpz", dict(paper, zero_hpz_partition_size=4))):
            m = os.path.join(ROOT, "m_%s_a%d.jsonl" % (name, accum))
            p = run(8, ["--config", config(3, **zero), "--ranks-per-node", "4", "--metrics", m, "--grad-accum", str(accum)])
            check(p.returncode == 0, "stage 3 %s at 8 ranks as 2 x 4, accumulation %d, finishes (rc %d)" % (
                name, accum, p.returncode))
            if p.returncode == 0:
                got[name] = records(m)
                end = [json.loads(l) for l in open(m) if '"end"' in l]
                got[name] += (end[0]["param_checksum"] if end else None,)
        if len(got) != 2:
            continue
        (fs, fsteps, fsum), (hs, hsteps, hsum) = got["flat"], got["hpz"]
        what = "hpZ, accumulation %d" % accum
        check(fsum == hsum and fsum is not None, what + ": the same parameters as flat stage 3 (%s, %s)" % (fsum, hsum))
        check([(s["loss"], s["grad_norm"]) for s in fsteps] == [(s["loss"], s["grad_norm"]) for s in hsteps],
              what + ": the same losses and grad norms, bitwise, every step")
        for f, h in zip(fsteps, hsteps):
            check(h["comm_bytes_inter"] == hs["expected_comm_bytes_inter_per_step"] and
                  h["comm_bytes_intra"] == hs["expected_comm_bytes_intra_per_step"],
                  what + " step %d: link bytes equal the predictor's" % h["step"])
            ratio = h["comm_bytes_inter"] / f["comm_bytes_inter"]
            check(ratio <= 0.70, what + " step %d: %.3f of flat stage 3's inter-node bytes (goal <= 0.70)" % (h["step"], ratio))
            check(h["comm_bytes"]["all_gather"] == f["comm_bytes"]["all_gather"], what + " step %d: the same all-gather volume" % h["step"])
    # Save at step 2, load, continue to step 4: the uninterrupted run's parameters (the secondary copy
    # is rebuilt from the loaded shards, never carried over).
    hcfg = config(3, zero_hpz_partition_size=4, stage3_max_reuse_distance=0, stage3_param_persistence_threshold=0)
    common = ["--config", hcfg, "--ranks-per-node", "4"]
    four = [f if f != "2" or FLAGS[i - 1] != "--steps" else "4" for i, f in enumerate(FLAGS)]
    ck = os.path.join(ROOT, "ck")
    straight = run(8, common + ["--metrics", os.path.join(ROOT, "s.jsonl")], flags=four)
    first = run(8, common + ["--save", ck, "--save-every", "2"], flags=four)
    resumed = run(8, common + ["--load", ck, "--load-tag", "global_step2", "--metrics", os.path.join(ROOT, "r.jsonl")],
                  flags=four)
    def checksum(path):
        ends = [json.loads(l) for l in open(path) if '"end"' in l] if os.path.exists(path) else []
        return ends[0].get("param_checksum") if ends else None
    check(straight.returncode == 0 and first.returncode == 0 and resumed.returncode == 0,
          "hpZ save / load runs finish (rc %d %d %d)" % (straight.returncode, first.returncode, resumed.returncode))
    a, b = checksum(os.path.join(ROOT, "s.jsonl")), checksum(os.path.join(ROOT, "r.jsonl"))
    check(a is not None and a == b, "hpZ: loaded at step 2 and continued, the uninterrupted run's parameters (%s, %s)" % (a, b))
    straddle = run(8, ["--config", config(3, zero_hpz_partition_size=8), "--ranks-per-node", "4"])
    msg = "each secondary group of 8 consecutive ranks must sit inside one node"
    check(straddle.returncode == 2 and straddle.stdout.count(msg) == 1,
          "hpZ 8 over nodes of 4: refused once (rc %d, %d copies)" % (straddle.returncode, straddle.stdout.count(msg)))
    small = run(8, ["--config", config(3, zero_hpz_partition_size=2), "--ranks-per-node", "4"])
    msg = "smaller than the 4 ranks of a node"
    check(small.returncode == 0 and small.stdout.count(msg) == 1,
          "hpZ 2 in nodes of 4: runs, warned once (rc %d, %d copies)" % (small.returncode, small.stdout.count(msg)))
    bad = run(8, ["--ranks-per-node", "3"])
    msg = "--ranks-per-node = 3: ranks per node must be a whole number of at least 1 that divides the world size 8"
    check(bad.returncode == 2 and bad.stdout.count(msg) == 1,
          "--ranks-per-node 3 at 8 ranks: exit 2 and the message once (rc %d, %d copies)" % (bad.returncode, bad.stdout.count(msg)))
    bad = run(4, [], env=dict(ENV, ZT_RANKS_PER_NODE="0"))
    msg = "ZT_RANKS_PER_NODE = 0: ranks per node"
    check(bad.returncode == 2 and bad.stdout.count(msg) == 1,
          "ZT_RANKS_PER_NODE=0: exit 2 and the message once (rc %d, %d copies)" % (bad.returncode, bad.stdout.count(msg)))
finally:
    shutil.rmtree(ROOT, ignore_errors=True)

print("%d failure(s)" % len(FAILURES))
sys.exit(1 if FAILURES else 0)
