#!/usr/bin/env python3
"""What a run checks before the engine allocates, and the weights-only load, through the real binary:
a checkpoint of world 2 stage 1 with one byte flipped in a shard, or a shard cut short, or a token
file cut short, stops a 2-rank run with exit 2 on every rank, the file named, before the memory plan
is printed and with no output left behind; `--init-from DIR` takes that checkpoint's fp32 master into
a world 1 stage 3 run with another seed and global batch: its steps equal those of a run initialised
from the exported file of the same checkpoint (the same first loss, then the same updates: the Adam
moments and the step counter start fresh), and a damaged shard stops it before allocating too.
With the test virtualenv's Python (numpy, safetensors), the small HF GPT-2 of scripts/make_hf_gpt2.py
(vocabulary 64) initialises a model of vocabulary 128: the run says which rows it added, its
checkpoints record 64 through --load and --init-from DIR, and `export --format hf` writes 64 rows.
Usage: preload_test.py ZEROTRAIN MPIRUN CONFIGS_DIR [TEST_PYTHON]"""
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
TEST_PYTHON = sys.argv[4] if len(sys.argv) > 4 else ""
MAKE_HF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "make_hf_gpt2.py")
MPI = [MPIRUN, "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")
# Every "auto" of the HF Trainer template as a flag (as resume_test.py).
BASE = ["--model", "tiny", "--vocab", "256", "--lr", "3e-3", "--weight-decay", "0.1", "--adam-beta1", "0.9",
        "--adam-beta2", "0.95", "--adam-eps", "1e-8", "--max-grad-norm", "1.0", "--warmup-steps", "4",
        "--eval-every", "0", "--threads", "1"]
PLAN = "memory plan (per rank)"
ROOT = tempfile.mkdtemp(prefix="zt_preload_")
FAILURES = []


def config(name, stage):
    with open(os.path.join(CONFIGS, "hf", "zero2.json")) as f:
        c = json.load(f)
    c["zero_optimization"]["stage"] = stage
    path = os.path.join(ROOT, name + ".json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def run(world, stage, extra, steps, micro, name, expect_rc=0, base=BASE):
    """Runs the binary; returns (output, [step records], end record)."""
    metrics = os.path.join(ROOT, name + ".jsonl")
    cmd = ([ZT] if world == 1 else MPI + ["-np", str(world), ZT]) + ["--config", config(name, stage)] + base + [
        "--micro-batch", str(micro), "--steps", str(steps), "--metrics", metrics] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, stdin=subprocess.DEVNULL,
                       timeout=120)
    out = p.stdout.decode(errors="replace")
    if p.returncode != expect_rc:
        raise AssertionError("exit %d, expected %d: %s\n%s" % (p.returncode, expect_rc, " ".join(cmd), out[-3000:]))
    m = zt_metrics.read_metrics(metrics)  # a refused run leaves no file: no steps, no end
    return out, m.of("step"), m.end, metrics


def check(name, ok, what):
    if not ok:
        FAILURES.append("%s: %s" % (name, what))
        print("FAIL %s: %s" % (name, what), flush=True)
    return ok


def data_offset(path):
    with open(path, "rb") as f:
        return 8 + struct.unpack("<Q", f.read(8))[0]


def damaged_copy(src, name, how):
    """A copy of the checkpoint `src` (its one tag) with rank 1's shard damaged."""
    dst = os.path.join(ROOT, name)
    shutil.copytree(src, dst)
    tag = open(os.path.join(dst, "latest")).read().strip()
    shard = os.path.join(dst, tag, "rank00001.safetensors")
    if how == "flip":
        off = data_offset(shard) + 4 * 37  # a byte of the master, inside the first checksum block
        with open(shard, "r+b") as f:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0x10]))
    else:
        os.truncate(shard, os.path.getsize(shard) - 100)
    return dst, shard


def refused_before_allocating(name, out, metrics, save_dir, regex):
    """Exit 2 was checked by run(); the message, the order and what is left behind here."""
    m = re.search(regex, out, re.S)
    ok = check(name, m is not None, "output does not match %r:\n%s" % (regex, out[-2000:]))
    ok = check(name, PLAN not in out, "the engine's memory plan was printed before the refusal:\n" + out[-2000:]) and ok
    ok = check(name, out.count("error:") == len(set(l for l in out.splitlines() if "error:" in l)),
               "an error line is printed more than once:\n" + out[-2000:]) and ok
    ok = check(name, not os.path.exists(metrics), "--metrics file left behind") and ok
    ok = check(name, not os.path.exists(save_dir), "--save folder %s created" % save_dir) and ok
    if ok:
        print("ok   %-16s exit 2 before the plan, nothing left: %s" % (name, m.group(0)[:150].replace("\n", " ")), flush=True)


def token_files(d, vocab, train=4000, val=1000, cut=0):
    os.makedirs(d)
    for split, n in (("train", train), ("val", val)):
        with open(os.path.join(d, split + ".bin"), "wb") as f:
            f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
            f.write(struct.pack("<%dH" % n, *[(i * 7) % vocab for i in range(n)]))
    if cut:
        os.truncate(os.path.join(d, "train.bin"), os.path.getsize(os.path.join(d, "train.bin")) - cut)
    return d


def st_header(path):
    with open(path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))


def hf_vocab_case():
    """HF GPT-2 with vocabulary 64 into a model of 128: rows added, recorded, never exported."""
    name = "hf_smaller_vocab"
    if not TEST_PYTHON or not os.path.exists(TEST_PYTHON):
        print("skip %-16s no test Python with numpy and safetensors (scripts/setup.sh)" % name, flush=True)
        return
    hf = os.path.join(ROOT, "hf")
    subprocess.run([TEST_PYTHON, MAKE_HF, hf], check=True, stdout=subprocess.DEVNULL)
    base = [a for a in BASE]
    base[base.index("--vocab") + 1] = "128"
    base += ["--layers", "2", "--heads", "4", "--dim", "32", "--seq-len", "16", "--data", token_files(os.path.join(ROOT, "tok64"), 64)]
    save, save2, save3 = (os.path.join(ROOT, n) for n in ("hf_a", "hf_b", "hf_c"))
    out, _, _, _ = run(2, 3, ["--init-from", os.path.join(hf, "model.safetensors"), "--save", save], steps=1, micro=2,
                       name="hf_a", base=base)
    ok = check(name, re.search(r"the file's vocabulary has 64 rows, the model's 128: rows 64\.\.127 of wte start at zero", out)
               is not None, "no padding note:\n" + out[-2000:])
    run(1, 1, ["--load", save, "--save", save2], steps=2, micro=4, name="hf_b", base=base)
    run(1, 0, ["--init-from", save2, "--save", save3], steps=1, micro=4, name="hf_c", base=base)
    for d in (save, save2, save3):
        tag = open(os.path.join(d, "latest")).read().strip()
        got = json.load(open(os.path.join(d, tag, "manifest.json")))["run"].get("hf_vocab")
        ok = check(name, got == 64, "%s/%s records run.hf_vocab %r, expected 64" % (d, tag, got)) and ok
    out_dir = os.path.join(ROOT, "hf_export")
    p = subprocess.run([ZT, "export", "--checkpoint", save3, "--format", "hf", "--out", out_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=ENV)
    ok = check(name, p.returncode == 0, p.stdout.decode(errors="replace")) and ok
    if p.returncode == 0:
        shape = st_header(os.path.join(out_dir, "model.safetensors"))["transformer.wte.weight"]["shape"]
        vocab = json.load(open(os.path.join(out_dir, "config.json")))["vocab_size"]
        ok = check(name, shape == [64, 32] and vocab == 64, "exported wte %s, vocab_size %s" % (shape, vocab)) and ok
    if ok:
        print("ok   %-16s 64 rows into 128, recorded through --load and --init-from DIR, exported as [64, 32]" % name,
              flush=True)


def main():
    try:
        src = os.path.join(ROOT, "src_ckpt")
        run(2, 1, ["--save", src], steps=2, micro=4, name="src")
        tag = open(os.path.join(src, "latest")).read().strip()

        # 1. Damaged checkpoints and data, found before the engine allocates.
        flipped, shard = damaged_copy(src, "flipped", "flip")
        new_save = os.path.join(ROOT, "not_created")
        out, _, _, metrics = run(2, 1, ["--load", flipped, "--save", new_save], steps=4, micro=4, name="flipped",
                                 expect_rc=2)
        refused_before_allocating("load_flipped", out, metrics, new_save,
                                  re.escape(shard) + r": block 0 of tensor \"master/[^\"]+\" \(file bytes \d+\.\.\d+\) has "
                                  r"checksum xxh3:[0-9a-f]+, the header recorded xxh3:[0-9a-f]+.*--load-tag")
        short, shard = damaged_copy(src, "short", "truncate")
        out, _, _, metrics = run(2, 1, ["--load", short, "--save", new_save], steps=4, micro=4, name="short",
                                 expect_rc=2)
        refused_before_allocating("load_truncated", out, metrics, new_save,
                                  re.escape(shard) + r" \(byte \d+\) = \d+ bytes: the file is truncated.*" + re.escape(tag))
        data = token_files(os.path.join(ROOT, "data"), 256, cut=10)
        out, _, _, metrics = run(2, 1, ["--data", data, "--save", new_save], steps=2, micro=4, name="data", expect_rc=2)
        refused_before_allocating("data_truncated", out, metrics, new_save,
                                  re.escape(os.path.join(data, "train.bin")) + r":byte 9014 = 4000 tokens: header promises "
                                  r"4000 tokens \(9024 bytes in all\) but the file has 9014 bytes.*truncated")

        # 3. Weights only: world 2 stage 1's checkpoint into world 1 stage 3, another seed and batch.
        exported = os.path.join(ROOT, "weights.safetensors")
        p = subprocess.run([ZT, "export", "--checkpoint", src, "--out", exported], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=ENV)
        check("export", p.returncode == 0, p.stdout.decode(errors="replace"))
        new = ["--seed", "5"]
        _, ref, ref_end, _ = run(1, 3, new + ["--init-from", exported], steps=3, micro=2, name="from_file")
        out, got, end, _ = run(1, 3, new + ["--init-from", src], steps=3, micro=2, name="from_dir")
        name = "init_from_dir"
        ok = check(name, re.search(r"initialised the weights from checkpoint .*%s: the fp32 master of step 2, saved at "
                                   r"world size 2 stage 1, now 1 / 3 \(optimizer state fresh, step 0\)" % tag, out)
                   is not None, "no init line:\n" + out[-2000:])
        ok = check(name, [r["step"] for r in got] == [1, 2, 3], "steps %s (the counter must start at 0)" %
                   [r["step"] for r in got]) and ok
        ok = check(name, got[0]["loss"] == ref[0]["loss"], "first loss %r, from the export %r" % (got[0]["loss"], ref[0]["loss"])) and ok
        # Fresh moments and counter: every later step (lr, norm, loss after the updates) is the fresh run's.
        for a, b in zip(ref, got):
            for k in ("loss", "lr", "grad_norm"):
                ok = check(name, a[k] == b[k], "step %d %s: from the export %r, from the directory %r" % (a["step"], k, a[k], b[k])) and ok
        ok = check(name, end["param_checksum"] == ref_end["param_checksum"], "param_checksum %s, from the export %s" %
                   (end["param_checksum"], ref_end["param_checksum"])) and ok
        if ok:
            print("ok   %-16s world 2 stage 1 -> world 1 stage 3, seed 5, global batch 2: steps 1-3 and %s equal the "
                  "exported file's run" % (name, end["param_checksum"]), flush=True)
        out, _, _, metrics = run(1, 3, new + ["--init-from", flipped, "--save", new_save], steps=2, micro=2,
                                 name="init_flipped", expect_rc=2)
        refused_before_allocating("init_from_flipped", out, metrics, new_save,
                                  re.escape(os.path.join(flipped, tag, "rank00001.safetensors")) + r": block 0 .*--init-from DIR/TAG")

        # 2. An HF file with a smaller vocabulary than the model's.
        hf_vocab_case()
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
    if FAILURES:
        print("\n%d failure(s):\n%s" % (len(FAILURES), "\n".join(FAILURES)))
        return 1
    print("\nall pre-start and weights-only cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
