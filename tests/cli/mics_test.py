#!/usr/bin/env python3
"""MiCS through the binary at 8 ranks as two "nodes" of 4, from DeepSpeed's keys: mics_shard_size 8
trains the parameters of plain stage 3; mics_shard_size 4 (one node) sends between nodes only the
replica all-reduce (and the loss), one call a step, equal to the predictor, fewer bytes than flat
stage 3; the hierarchical gather over groups of 8 is bitwise the flat MiCS run with the same
inter-node bytes (the MPI communicator's flat gather over whole nodes is already two-level); MiCS 4 with offload_param cpu, and nvme, trains MiCS 4's parameters. Checkpoints (global batch 8 throughout: micro batch 1 at 8 ranks, 2 at 4): a MiCS run saved
at step 2 and loaded continues to the uninterrupted run's parameters; its manifest has 8 rank entries,
the replicas' empty; its export hashes to the run's param_checksum; it loads as plain stage 3 at 4
ranks, and a plain stage 3 checkpoint of 4 ranks loads as MiCS at 8, each continuing within 1e-6 of
the uninterrupted run. Refused once for the job, each naming its key: the hierarchical gather inside
one node and a shard size that does not divide the world.
Usage: mics_test.py ZEROTRAIN MPIRUN"""
import json
import os
import struct
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


def config(name, micro=2, **zero):
    path = os.path.join(ROOT, name + ".json")
    json.dump({"train_micro_batch_size_per_gpu": micro, "zero_optimization": dict(stage=3, **zero)}, open(path, "w"))
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


def ckpt_run(name, np_, extra, **zero):
    """4 steps of global batch 8 from a ds_config; (rc, output, steps by number, end record)."""
    m = os.path.join(ROOT, name + ".jsonl")
    flags = ["--model", "tiny", "--steps", "4", "--eval-every", "0", "--micro-batch", str(8 // np_),
             "--ranks-per-node", "4" if np_ == 8 else "2", "--metrics", m]
    p = subprocess.run(MPI + ["-np", str(np_), ZT] + flags + ["--config", config(name, 8 // np_, **zero)] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, text=True, timeout=240)
    lines = [json.loads(l) for l in open(m)] if os.path.exists(m) else []
    steps = {l["step"]: l for l in lines if l["event"] == "step"}
    end = [l for l in lines if l["event"] == "end"]
    if p.returncode != 0:
        print(p.stdout[-3000:])
    return p.returncode, p.stdout, steps, end[0] if end else {}


def export_checksum(save, tag):
    """FNV-1a over the exported units' bytes in order: what param_checksum hashes."""
    out = os.path.join(ROOT, "export_%s.safetensors" % tag)
    p = subprocess.run([ZT, "export", "--checkpoint", save, "--tag", tag, "--out", out], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=ENV, text=True)
    if p.returncode != 0:
        print(p.stdout[-2000:])
        return None
    with open(out, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    manifest = json.load(open(os.path.join(save, tag, "manifest.json")))
    h = 1469598103934665603
    for u in manifest["units"]:
        for t in u["tensors"]:
            a, b = header["%s.%s" % (u["name"], t["name"])]["data_offsets"]
            for byte in data[a:b]:
                h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "0x%016x" % h


def close_steps(what, got, ref, steps=(3, 4), rel=1e-6):
    for s in steps:
        a, b = got.get(s, {}).get("loss"), ref.get(s, {}).get("loss")
        check(a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b)),
              "%s: step %d's loss %r within %g of the uninterrupted run's %r" % (what, s, a, rel, b))


def checkpoints():
    mics, plain = dict(mics_shard_size=4), {}
    ck = os.path.join(ROOT, "ck_mics")
    rc, _, straight, end = ckpt_run("ck_mics", 8, ["--save", ck, "--save-every", "2"], **mics)
    check(rc == 0 and end.get("param_checksum"), "MiCS 4 at 8 ranks: 4 steps saving every 2 (rc %d)" % rc)
    if rc != 0:
        return
    manifest = json.load(open(os.path.join(ck, "global_step2", "manifest.json")))
    ranks = manifest.get("ranks", [])
    check(manifest.get("world_size") == 8 and len(ranks) == 8 and all(r.get("owned") for r in ranks[:4]) and
          not any(r.get("owned") for r in ranks[4:]),
          "the MiCS manifest: world 8, 8 rank entries, the first group's owning, the replicas' empty")
    info = subprocess.run([ZT, "checkpoint", "info", ck], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV,
                          text=True)
    check(info.returncode == 0 and "MiCS: shard groups of 4" in info.stdout and "every rank file matches" in info.stdout,
          "checkpoint info names the MiCS groups and verifies the 8 files (rc %d)" % info.returncode)
    rc, _, _, resumed = ckpt_run("ck_mics_resume", 8, ["--load", ck, "--load-tag", "global_step2"], **mics)
    check(rc == 0 and resumed.get("param_checksum") == end["param_checksum"],
          "MiCS saved at step 2, loaded and continued: the uninterrupted run's parameters (%s, %s)" % (
              resumed.get("param_checksum"), end["param_checksum"]))
    got = export_checksum(ck, "global_step4")
    check(got == end["param_checksum"], "the MiCS checkpoint's export hashes to the run's param_checksum (%s, %s)" % (
        got, end["param_checksum"]))
    rc, out, as3, _ = ckpt_run("ck_mics_as_stage3", 4, ["--load", ck, "--load-tag", "global_step2"], **plain)
    check(rc == 0 and "saved at world size 8 stage 3, now 4 / 3" in out,
          "the MiCS checkpoint loads as plain stage 3 at 4 ranks (rc %d)" % rc)
    close_steps("MiCS at 8 -> stage 3 at 4", as3, straight)
    ck3 = os.path.join(ROOT, "ck_stage3")
    rc, _, straight3, _ = ckpt_run("ck_stage3", 4, ["--save", ck3, "--save-every", "2"], **plain)
    rc2, out, back, _ = ckpt_run("ck_stage3_as_mics", 8, ["--load", ck3, "--load-tag", "global_step2"], **mics)
    check(rc == 0 and rc2 == 0 and "saved at world size 4 stage 3, now 8 / 3" in out,
          "plain stage 3's checkpoint of 4 ranks loads as MiCS 4 at 8 ranks (rc %d %d)" % (rc, rc2))
    close_steps("stage 3 at 4 -> MiCS at 8", back, straight3)


try:
    flat = measured("flat")
    whole = measured("mics8", mics_shard_size=8)
    node = measured("mics4", mics_shard_size=4)
    hier = measured("mics8h", mics_shard_size=8, mics_hierarchical_params_gather=True)
    offload = measured("mics4_offload", mics_shard_size=4, offload_param={"device": "cpu"})
    swap = os.path.join(ROOT, "swap")
    os.makedirs(swap)
    nvme = measured("mics4_nvme", mics_shard_size=4, offload_param={"device": "nvme", "nvme_path": swap})
    if node and offload:
        check(offload[2] == node[2] and node[2] is not None,
              "MiCS 4 with offload_param cpu trains MiCS 4's parameters (%s, %s)" % (offload[2], node[2]))
    if node and nvme:
        check(nvme[2] == node[2] and node[2] is not None,
              "MiCS 4 with offload_param nvme trains MiCS 4's parameters (%s, %s)" % (nvme[2], node[2]))
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
            check(h["comm_bytes_inter"] == w["comm_bytes_inter"],
                  "hierarchical, step %d: %d inter-node bytes against flat MiCS's %d" % (
                      h["step"], h["comm_bytes_inter"], w["comm_bytes_inter"]))
    for name, extra, zero, key, msg in [
        ("inside", [], dict(mics_shard_size=4, mics_hierarchical_params_gather=True),
         "zero_optimization.mics_hierarchical_params_gather", "sits inside one node of 4 ranks"),
        ("tile", [], dict(mics_shard_size=3), "zero_optimization.mics_shard_size", "must tile the world of 8 ranks"),
    ]:
        p = run(name, extra, **zero)
        check(p.returncode == 2 and p.stdout.count(msg) == 1 and key in p.stdout,
              "%s: refused once, naming %s (rc %d, %d copies)" % (name, key, p.returncode, p.stdout.count(msg)))
        if p.returncode != 2:
            print(p.stdout[-2000:])
    checkpoints()
finally:
    shutil.rmtree(ROOT, ignore_errors=True)

print("%d failure(s)" % len(FAILURES))
sys.exit(1 if FAILURES else 0)
