#!/usr/bin/env python3
"""Resume through the real binary on CPU ranks: N steps straight (saving at step K on the way) against
K steps, a new process, --load, N-K steps — the same per-step loss, lr, grad norm, loss scale and skip,
and the same param_checksum — over stages 0-3, fp32/bf16/fp16, accumulation, CPU and NVMe offload and
world sizes 1, 2, 3 and 4; a checkpoint of world 2 stage 1 loaded at other stages and world sizes; export
and `checkpoint info` of a run's checkpoint; and the bad command lines and checkpoints the run refuses.
Usage: resume_test.py ZEROTRAIN MPIRUN CONFIGS_DIR [case ...]"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zt_metrics  # noqa: E402 (found through the path above)

ZT, MPIRUN, CONFIGS = sys.argv[1], sys.argv[2], sys.argv[3]
ONLY = set(sys.argv[4:])
MPI = [MPIRUN, "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")
N, K = 6, 3
# The flags every "auto" value of the HF Trainer templates needs (as tests/cli/probe.py); the global batch
# is 8 samples at every world size (micro batch 8 / world size), so one checkpoint fits them all.
BASE = ["--model", "tiny", "--vocab", "256", "--lr", "3e-3", "--weight-decay", "0.1", "--adam-beta1", "0.9",
        "--adam-beta2", "0.95", "--adam-eps", "1e-8", "--max-grad-norm", "1.0", "--warmup-steps", "4",
        "--eval-every", "0", "--threads", "1"]
PER_STEP = ("loss", "lr", "grad_norm", "loss_scale", "skipped")
ROOT = tempfile.mkdtemp(prefix="zt_resume_")
FAILURES = []


def config(name, stage, precision="fp32", offload=None, fp16=None):
    with open(os.path.join(CONFIGS, "hf", "zero2.json")) as f:
        c = json.load(f)
    c["zero_optimization"]["stage"] = stage
    if precision == "bf16":
        c["bf16"] = {"enabled": True}
    if precision == "fp16":
        c["fp16"] = dict({"enabled": True}, **(fp16 or {}))
    if offload:
        swap = os.path.join(ROOT, name + "_swap")
        os.makedirs(swap, exist_ok=True)
        for key, dev in offload.items():
            c["zero_optimization"][key] = {"device": dev, "pin_memory": True}
            if dev == "nvme":
                c["zero_optimization"][key]["nvme_path"] = swap
    path = os.path.join(ROOT, name + ".json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def run(world, cfg, extra, steps=N, micro=None, accum=1, name="run", expect_rc=0):
    """Runs the binary; returns (rc, output, {step: record}, end record)."""
    micro = micro or 8 // world // accum
    metrics = os.path.join(ROOT, "%s.jsonl" % name)
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = ([ZT] if world == 1 else MPI + ["-np", str(world), ZT]) + ["--config", cfg] + BASE + [
        "--micro-batch", str(micro), "--grad-accum", str(accum), "--steps", str(steps), "--metrics", metrics] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, stdin=subprocess.DEVNULL,
                       timeout=120)
    out = p.stdout.decode(errors="replace")
    m = zt_metrics.read_metrics(metrics)  # a refused run leaves no file: no steps, no end
    if p.returncode != expect_rc:
        raise AssertionError("exit %d, expected %d: %s\n%s" % (p.returncode, expect_rc, " ".join(cmd), out[-3000:]))
    return out, m.steps, m.end


def check(name, ok, what):
    if not ok:
        FAILURES.append("%s: %s" % (name, what))
        print("FAIL %s: %s" % (name, what), flush=True)
    return ok


def same_steps(name, ref, got, steps):
    for s in steps:
        if s not in got or s not in ref:
            return check(name, False, "step %d missing (reference has %s, resumed has %s)" % (s, sorted(ref), sorted(got)))
        for k in PER_STEP:
            if ref[s][k] != got[s][k]:
                return check(name, False, "step %d %s: straight %r, resumed %r" % (s, k, ref[s][k], got[s][k]))
    return True


def resume_case(name, world, stage, precision="fp32", accum=1, offload=None, fp16=None, need_skip=False, pure=False,
                micro=None):
    """Straight N steps saving at K; a new job loads global_stepK and runs to N: bitwise equal. With
    `pure`, the straight run also equals one that never saves (a save only reads the state). `micro`
    for a world size that does not divide the 8-sample global batch (3 ranks)."""
    if ONLY and name not in ONLY:
        return
    cfg = config(name, stage, precision, offload, fp16)
    save = os.path.join(ROOT, name + "_ckpt")
    _, ref, ref_end = run(world, cfg, ["--save", save, "--save-every", str(K)], accum=accum, micro=micro, name=name + "_a")
    if pure:
        _, _, pure_end = run(world, cfg, [], accum=accum, micro=micro, name=name + "_pure")
        check(name, pure_end["param_checksum"] == ref_end["param_checksum"],
              "saving changed the run: param_checksum %s, %s without --save" % (ref_end["param_checksum"],
                                                                             pure_end["param_checksum"]))
    out, got, end = run(world, cfg, ["--load", save, "--load-tag", "global_step%d" % K], accum=accum, micro=micro,
                        name=name + "_b")
    ok = check(name, re.search(r"loaded checkpoint .*global_step%d: step %d" % (K, K), out) is not None,
               "no 'loaded checkpoint' line:\n" + out[-1500:])
    ok = check(name, sorted(got) == list(range(K + 1, N + 1)), "resumed steps %s" % sorted(got)) and ok
    ok = same_steps(name, ref, got, range(K + 1, N + 1)) and ok
    ok = check(name, end["param_checksum"] == ref_end["param_checksum"],
               "param_checksum %s, straight %s" % (end["param_checksum"], ref_end["param_checksum"])) and ok
    skips = sum(1 for s in range(1, K + 1) if ref[s]["skipped"])
    # The comparison means something only when updates are applied on both sides of the save.
    for lo, hi in ((1, K), (K + 1, N)):
        ok = check(name, any(not ref[s]["skipped"] for s in range(lo, hi + 1)),
                   "every step %d-%d was skipped (loss scales %s)" % (lo, hi, [ref[s]["loss_scale"] for s in ref])) and ok
    if need_skip:
        ok = check(name, skips >= 1, "no fp16 overflow skip before step %d (loss scales %s)" %
                   (K, [ref[s]["loss_scale"] for s in range(1, K + 1)])) and ok
    if ok:
        print("ok   %-22s world %d stage %d %s accum %d%s: steps %d-%d and %s equal%s" %
              (name, world, stage, precision, accum, " offload %s" % offload if offload else "", K + 1, N,
               end["param_checksum"], " (%d skip(s) before the save)" % skips if skips else ""), flush=True)
    return save


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


def reshard_cases():
    """World 2 stage 1's checkpoint loaded at world 2 stage 3 (bitwise), world 4 stage 3 and world 1
    stage 0 (against uninterrupted runs at those world sizes, within docs/stages.md's 1e-6 fp32)."""
    names = ["reshard_w2s3", "reshard_w4s3", "reshard_w1s0"]
    if ONLY and not ONLY.intersection(names):
        return
    src_cfg = config("reshard_src", 1)
    save = os.path.join(ROOT, "reshard_ckpt")
    _, ref2, ref2_end = run(2, src_cfg, ["--save", save, "--save-every", str(K)], name="reshard_src")
    for name, world, stage in (("reshard_w2s3", 2, 3), ("reshard_w4s3", 4, 3), ("reshard_w1s0", 1, 0)):
        if ONLY and name not in ONLY:
            continue
        cfg = config(name, stage)
        out, got, end = run(world, cfg, ["--load", save, "--load-tag", "global_step%d" % K], name=name + "_b")
        ok = check(name, re.search(r"saved at world size 2 stage 1, now %d / %d" % (world, stage), out) is not None,
                   "no reshard line:\n" + out[-1500:])
        if world == 2:
            ok = same_steps(name, ref2, got, range(K + 1, N + 1)) and ok
            ok = check(name, end["param_checksum"] == ref2_end["param_checksum"], "param_checksum differs") and ok
            how = "bitwise"
        else:
            _, ref, ref_end = run(world, cfg, [], name=name + "_ref")
            for s in range(K + 1, N + 1):
                ok = check(name, close(ref[s]["loss"], got[s]["loss"], 1e-6),
                           "step %d loss %r, world %d straight %r" % (s, got[s]["loss"], world, ref[s]["loss"])) and ok
            ok = check(name, close(ref_end["param_l2"], end["param_l2"], 1e-6),
                       "param_l2 %r, straight %r" % (end["param_l2"], ref_end["param_l2"])) and ok
            how = "within 1e-6 of an uninterrupted world %d run" % world
        if ok:
            print("ok   %-22s world 2 stage 1 -> world %d stage %d: steps %d-%d %s" % (name, world, stage, K + 1, N, how),
                  flush=True)


def safetensors_tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}


def fnv1a64(chunks):
    h = 1469598103934665603
    for c in chunks:
        for b in c:
            h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def export_and_info(save):
    """`checkpoint info` verifies a run's checkpoint; `export` gives its weights, whose FNV-1a over the
    units in order is the run's param_checksum; --init-from takes them."""
    name = "export_info"
    if ONLY and name not in ONLY:
        return
    p = subprocess.run([ZT, "checkpoint", "info", save], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV)
    info = p.stdout.decode(errors="replace")
    ok = check(name, p.returncode == 0 and "global_step%d" % N in info, "checkpoint info exit %d:\n%s" % (p.returncode, info))
    out_file = os.path.join(ROOT, "export.safetensors")
    p = subprocess.run([ZT, "export", "--checkpoint", save, "--out", out_file], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=ENV)
    ok = check(name, p.returncode == 0, "export exit %d: %s" % (p.returncode, p.stdout.decode(errors="replace"))) and ok
    if not ok:
        return
    manifest = json.load(open(os.path.join(save, "global_step%d" % N, "manifest.json")))
    tensors = safetensors_tensors(out_file)
    chunks = [tensors["%s.%s" % (u["name"], t["name"])] for u in manifest["units"] for t in u["tensors"]]
    ref_end = zt_metrics.read_metrics(os.path.join(ROOT, "w2_s1_fp32_a.jsonl"), missing_ok=False).end
    ok = check(name, "0x%016x" % fnv1a64(chunks) == ref_end["param_checksum"],
               "the export hashes to 0x%016x, the run's param_checksum is %s" % (fnv1a64(chunks), ref_end["param_checksum"]))
    out, _, _ = run(2, config("init_from", 2), ["--init-from", out_file], steps=2, name="init_from")
    ok = check(name, "initialised the weights from " + out_file in out, "no --init-from line:\n" + out[-1500:]) and ok
    if ok:
        print("ok   %-22s info verified the files; the export hashes to the run's %s; --init-from trained from it" %
              (name, ref_end["param_checksum"]), flush=True)


def refused(name, cmd_extra, regex, world=1, cfg=None, steps=N, micro=8):
    if ONLY and name not in ONLY:
        return
    out, _, _ = run(world, cfg or config("refused", 1), cmd_extra, steps=steps, micro=micro, name=name, expect_rc=2)
    if check(name, re.search(regex, out, re.S) is not None, "output does not match %r:\n%s" % (regex, out[-1500:])):
        print("ok   %-22s exit 2: %s" % (name, re.search(regex, out, re.S).group(0)[:110]), flush=True)


def main():
    try:
        # fp16 from 2^18 with no hysteresis and a window of 2: step 1 overflows (skip, halved), 2-4 apply,
        # the scale doubles after step 4 and step 5 overflows again: the scaler's whole state matters.
        fp16 = {"initial_scale_power": 18, "hysteresis": 1, "loss_scale_window": 2}
        resume_case("w1_s0_fp32", 1, 0)
        src = resume_case("w2_s1_fp32", 2, 1, pure=True)
        resume_case("w4_s2_fp32", 4, 2)
        # 3 ranks: uneven shard tails (each unit padded to a multiple of 3), 2 micro-steps of 1 sample
        # each (a global batch of 6), stage 3 with bf16 so the tails reach every saved array.
        resume_case("w3_s3_bf16_accum2", 3, 3, "bf16", accum=2, micro=1)
        resume_case("w2_s3_fp32", 2, 3)
        resume_case("w2_s0_bf16", 2, 0, "bf16")
        resume_case("w1_s1_bf16", 1, 1, "bf16")
        resume_case("w2_s2_bf16_accum2", 2, 2, "bf16", accum=2)
        resume_case("w4_s3_bf16", 4, 3, "bf16")
        resume_case("w2_s0_fp16", 2, 0, "fp16", fp16=fp16, need_skip=True, pure=True)
        resume_case("w1_s1_fp16", 1, 1, "fp16", fp16=fp16, need_skip=True)
        resume_case("w2_s2_fp16", 2, 2, "fp16", fp16=fp16, need_skip=True)
        resume_case("w2_s3_fp16_accum2", 2, 3, "fp16", accum=2, fp16=fp16, need_skip=True)
        resume_case("w2_s1_accum2", 2, 1, accum=2)
        resume_case("w2_s2_cpu_offload", 2, 2, offload={"offload_optimizer": "cpu"})
        resume_case("w2_s3_cpu_offload", 2, 3, "bf16", offload={"offload_optimizer": "cpu", "offload_param": "cpu"})
        resume_case("w2_s3_nvme_offload", 2, 3, offload={"offload_optimizer": "nvme", "offload_param": "nvme"}, pure=True)
        resume_case("w1_s2_nvme_fp16", 1, 2, "fp16", offload={"offload_optimizer": "nvme"}, fp16=fp16, need_skip=True)
        reshard_cases()
        if src:
            export_and_info(src)
        # Bad input: exit 2 with the flag or file, the value and the fix, before anything is allocated.
        missing = os.path.join(ROOT, "no_such_dir")
        refused("load_missing_dir", ["--load", missing], re.escape(missing) + r": the checkpoint directory does not exist")
        refused("save_every_alone", ["--save-every", "2"], r"--save-every = 2: needs --save DIR")
        refused("load_tag_alone", ["--load-tag", "global_step3"], r"--load-tag = global_step3: needs --load DIR")
        refused("writer_nice_out_of_range", ["--save-writer-nice", "20"], r"--save-writer-nice = 20: must be 0\.\.19.*give 19")
        refused("writer_cpu_percent_zero", ["--save-writer-cpu-percent", "0"],
                r"--save-writer-cpu-percent = 0: must be above 0 and at most 100.*give e\.g\. 25")
        a_file = os.path.join(ROOT, "a_file")
        open(a_file, "w").close()
        refused("save_under_a_file", ["--save", a_file + "/ckpt"],
                "--save = " + re.escape(a_file) + "/ckpt: " + re.escape(a_file) + " is not a directory")
        refused("save_is_a_file", ["--save", a_file], "--save = " + re.escape(a_file) + ": exists and is not a directory")
        if src:
            refused("load_other_model", ["--load", src, "--layers", "3"], r"manifest\.json.*units.*(model|saved from)")
            refused("load_other_seed", ["--load", src, "--seed", "7"],
                    r"run\.seed = 1: the checkpoint was saved by a run with seed 1, this run's seed is 7.*--seed 1")
            refused("load_other_batch", ["--load", src], r"run\.global_batch = 8: .*this run's global batch is 4", micro=4)
            refused("load_past_steps", ["--load", src], r"--steps = 2: the checkpoint .* is at step %d already" % N, steps=2)
            refused("load_missing_tag", ["--load", src, "--load-tag", "global_step99"],
                    r"global_step99 = global_step99: no such tag.*global_step%d global_step%d" % (K, N))
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
    if FAILURES:
        print("\n%d failure(s):\n%s" % (len(FAILURES), "\n".join(FAILURES)))
        return 1
    print("\nall resume cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
