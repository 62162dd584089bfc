#!/usr/bin/env python3
"""End-to-end probe of the zerotrain binary: bad files, bad command lines and faults (a killed
rank, a stopped rank with a short watchdog, ranks started with different settings, SIGTERM without
and with --save, the load of the checkpoint SIGTERM saved and its training against a run never
stopped, SIGINT's exit 130 and message).
Each case asserts the exit code, a message, a time bound and that no file is left behind, and
prints its measured seconds. Usage: probe.py ZEROTRAIN MPIRUN CONFIGS_DIR [case ...]"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zt_metrics  # noqa: E402 (found through the path above)

ZT, MPIRUN, CONFIGS = sys.argv[1], sys.argv[2], sys.argv[3]
ONLY = set(sys.argv[4:])
MPI = [MPIRUN, "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1")
# The flags every "auto" value of the HF Trainer templates (configs/hf/) needs; without --config the
# built-in config takes them too.
FLAGS = ["--model", "tiny", "--vocab", "256", "--micro-batch", "4", "--grad-accum", "1", "--lr", "3e-3",
         "--weight-decay", "0.1", "--adam-beta1", "0.9", "--adam-beta2", "0.95", "--adam-eps", "1e-8",
         "--max-grad-norm", "1.0", "--warmup-steps", "2"]
LONG = ["--steps", "100000", "--eval-every", "0"]  # runs until the fault ends it


def with_flag(flags, name, value):
    out = list(flags)
    out[out.index(name) + 1] = value
    return out


def shard(path, tokens):
    header = [0] * 256
    header[0], header[1], header[2] = 20240520, 1, len(tokens)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header) + struct.pack("<%dH" % len(tokens), *tokens))


def data_dir(root, name, train, val):
    d = os.path.join(root, name)
    os.makedirs(d)
    shard(os.path.join(d, "train.bin"), train)
    shard(os.path.join(d, "val.bin"), val)
    return d


def nvme_config(root, stage=3):
    with open(os.path.join(CONFIGS, "hf", "zero3_offload.json")) as f:
        c = json.load(f)
    swap = os.path.join(root, "swap")
    os.makedirs(swap, exist_ok=True)
    c["zero_optimization"]["stage"] = stage
    c["steps_per_print"] = 10  # the faults wait for "step 10/"
    for k in ("offload_optimizer", "offload_param"):
        c["zero_optimization"][k]["device"] = "nvme"
        c["zero_optimization"][k]["nvme_path"] = swap
    path = os.path.join(root, "nvme.json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path, swap


def stage_config(root, stage):
    with open(os.path.join(CONFIGS, "hf", "zero2.json")) as f:
        c = json.load(f)
    c["zero_optimization"]["stage"] = stage
    path = os.path.join(root, "stage%d.json" % stage)
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def ranks_of(launcher_pid):
    """{rank: pid} of the processes mpirun started (its children that carry a world rank)."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != launcher_pid:
                continue
            with open("/proc/%s/environ" % p, "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            if b"OMPI_COMM_WORLD_RANK" in env:
                out[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(p)
        except (OSError, ValueError, IndexError):
            continue
    return out


def run(cmd, bound, env=None, fault=None, wait_for=None):
    """Runs cmd (own process group); once `wait_for` appears in its output calls fault(proc).
    Returns (rc, output, seconds from start, or from the fault when there is one)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env or ENV,
                            start_new_session=True, stdin=subprocess.DEVNULL)
    os.set_blocking(proc.stdout.fileno(), False)
    out, t_fault, limit = b"", None, start + bound + 60
    while True:
        chunk = proc.stdout.read() or b""
        out += chunk
        if fault and t_fault is None and wait_for and re.search(wait_for, out.decode(errors="replace")):
            fault(proc)
            t_fault = time.monotonic()
        if proc.poll() is not None:
            out += proc.stdout.read() or b""
            break
        if time.monotonic() > limit:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None, out.decode(errors="replace"), time.monotonic() - start
        time.sleep(0.05)
    end = time.monotonic()
    return proc.returncode, out.decode(errors="replace"), end - (t_fault if t_fault else start)


RESULTS = []


def case(name, cmd, rc, regex, bound, leftovers=(), **kw):
    if ONLY and name not in ONLY:
        return
    got_rc, out, secs = run(cmd, bound, **kw)
    problems = []
    if got_rc is None:
        problems.append("hung: killed after %d s" % (bound + 60))
    elif (got_rc != rc) if isinstance(rc, int) else not rc(got_rc):
        problems.append("exit code %s, expected %s" % (got_rc, rc if isinstance(rc, int) else "non-zero"))
    if not re.search(regex, out, re.S):
        problems.append("output does not match: " + regex)
    if secs > bound:
        problems.append("took %.1f s, bound %d s" % (secs, bound))
    for d in leftovers:
        left = [f for f in os.listdir(d)] if os.path.isdir(d) else []
        if left:
            problems.append("left behind in %s: %s" % (d, ", ".join(left)))
    RESULTS.append((name, got_rc, secs, bound, problems))
    status = "ok  " if not problems else "FAIL"
    print("%s %-18s exit %-4s %6.1f s (bound %3d s)" % (status, name, got_rc, secs, bound), flush=True)
    if problems:
        print("\n".join("     " + p for p in problems))
        print("     output (last 25 lines):\n" + "\n".join("       " + l for l in out.splitlines()[-25:]))


def signal_ranks(sig, which):
    def fault(proc):
        deadline = time.monotonic() + 10
        pids = {}
        while time.monotonic() < deadline and len(pids) < 2:
            pids = ranks_of(proc.pid)
            time.sleep(0.05)
        for r in which:
            if r in pids:
                os.kill(pids[r], sig)
    return fault


def sigterm_resume(root, cfg, swap):
    """SIGTERM with --save at a step boundary, then a new job that loads that checkpoint and trains
    to the end: its step records and param_checksum equal a run that was never stopped."""
    name = "sigterm_resume"
    if ONLY and name not in ONLY:
        return
    # The small model (about 0.1 s a step here, 20x tiny's): the signal, sent once step 10 is
    # printed, must land before the run's last step (tiny ran its 30 steps before it did).
    total = 40
    job = MPI + ["-np", "2", ZT, "--config", cfg] + with_flag(FLAGS, "--model", "small") + [
        "--steps", str(total), "--eval-every", "0"]
    save = os.path.join(root, "resume_ckpt")
    got_rc, out, _ = run(job + ["--save", save], 30, fault=signal_ranks(signal.SIGTERM, [0, 1]), wait_for=r"step +10/")
    problems, at = [], 0
    m = re.search(r"every rank stopped after step (\d+) of %d; checkpoint .*global_step\1 saved" % total, out)
    if got_rc != 0 or not m:
        problems.append("the stopped run: exit %s, no 'checkpoint ... saved' line" % got_rc)
    else:
        at = int(m.group(1))
        a, b = os.path.join(root, "straight.jsonl"), os.path.join(root, "resumed.jsonl")
        straight = subprocess.run(job + ["--metrics", a], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV,
                                  stdin=subprocess.DEVNULL, timeout=120)
        resumed = subprocess.run(job + ["--load", save, "--metrics", b], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, env=ENV, stdin=subprocess.DEVNULL, timeout=120)
        if straight.returncode != 0 or resumed.returncode != 0:
            problems.append("straight run exit %d, resumed run exit %d: %s" % (
                straight.returncode, resumed.returncode, resumed.stdout.decode(errors="replace")[-1500:]))
        else:
            ref, got = zt_metrics.read_metrics(a, missing_ok=False), zt_metrics.read_metrics(b, missing_ok=False)
            if sorted(got.steps) != list(range(at + 1, total + 1)):
                problems.append("resumed steps %s, expected %d-%d" % (sorted(got.steps), at + 1, total))
            for st in range(at + 1, total + 1):
                for k in ("loss", "lr", "grad_norm", "loss_scale", "skipped"):
                    if st in got.steps and got.steps[st][k] != ref.steps[st][k]:
                        problems.append("step %d %s: straight %r, resumed %r" % (st, k, ref.steps[st][k], got.steps[st][k]))
            if got.end["param_checksum"] != ref.end["param_checksum"]:
                problems.append("param_checksum: straight %s, resumed %s" % (ref.end["param_checksum"],
                                                                             got.end["param_checksum"]))
    left = os.listdir(swap) if os.path.isdir(swap) else []
    if left:
        problems.append("left behind in %s: %s" % (swap, ", ".join(left)))
    RESULTS.append((name, got_rc, 0.0, 0, problems))
    print("%s %-18s exit %-4s %s" % ("ok  " if not problems else "FAIL", name, got_rc,
                                     "stopped after step %d; steps %d-%d and param_checksum equal a straight run" %
                                     (at, at + 1, total) if not problems else ""), flush=True)
    for p in problems[:10]:
        print("     " + p)


def main():
    root = tempfile.mkdtemp(prefix="zt_probe_")
    try:
        steps = ["--steps", "5", "--eval-every", "0"]
        # Data and command line.
        good = [(i * 7) % 256 for i in range(20000)]
        short = data_dir(root, "short", good, good[:5])
        case("short_shard", [ZT, "--data", short] + FLAGS + steps, 2,
             re.escape(short) + r"/val\.bin = 5 tokens: shorter than one training window", 20)
        big = list(good)
        big[17] = 300
        over = data_dir(root, "over", big, good[:3000])
        case("token_over_vocab", [ZT, "--data", over] + FLAGS + steps, 2,
             re.escape(over) + r"/train\.bin:byte 1058 = token id 300: is >= the model's vocabulary of 256.*--vocab 301", 20)
        case("vocab_301_fits", [ZT, "--data", over] + with_flag(FLAGS, "--vocab", "301") + steps, 0, r"done: 5 steps", 60)
        case("prepare_text_dir", [ZT, "prepare", "--text", root, "--out", os.path.join(root, "p")], 2,
             re.escape(root) + r" = a directory: the --text input must be a regular file", 10, leftovers=[])
        out = os.path.join(root, "out")
        os.makedirs(out)
        case("metrics_dev_full", [ZT, "--metrics", "/dev/full"] + FLAGS + steps, 2,
             r"--metrics = /dev/full: .*No space left on device \(errno 28\)", 30)
        case("trace_unwritable", [ZT, "--trace", os.path.join(root, "missing", "t.json"),
                                  "--metrics", os.path.join(out, "m.jsonl")] + FLAGS + steps, 2,
             r"--trace = .*missing/t\.json: cannot open the file for writing: No such file or directory", 20,
             leftovers=[out])
        # A disk that fills up during the run: every rank stops at that step's boundary (exit 1).
        small = os.path.join(root, "small_fs")
        os.makedirs(small)
        if subprocess.call(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", small],
                           stderr=subprocess.DEVNULL) == 0:
            try:
                case("metrics_fill_up", MPI + ["-np", "2", ZT, "--metrics", os.path.join(small, "m.jsonl")] + FLAGS +
                     LONG, 1, r"(?=.*--metrics .*m\.jsonl: write failed after \d+ bytes: No space left on device \(errno 28\))"
                     r"(?=.*stopped after step \d+ because rank 0 could not write its output)", 60)
            finally:
                subprocess.call(["umount", small])
        elif os.environ.get("CI") == "true":  # a skip here would hide the case from every CI run
            RESULTS.append(("metrics_fill_up", None, 0.0, 0, ["cannot mount a small tmpfs here; CI=true: it must run"]))
            print("FAIL metrics_fill_up       (cannot mount a small tmpfs here; CI=true: the case must run)")
        else:
            print("skip metrics_fill_up       (cannot mount a small tmpfs here)")
        # A ZT_SIMD the CPU kernels cannot honour: refused before training with the fix, once for the
        # job (it used to abort every rank from inside the first parallel loop).
        case("bad_zt_simd", MPI + ["-np", "2", ZT] + FLAGS + steps, 2,
             r"^(?!.*rank 1).*ZT_SIMD = sse9.*unset ZT_SIMD.*zerotrain: 1 error", 30,
             env=dict(ENV, ZT_SIMD="sse9"))
        # Ranks that disagree: different flags (MPMD), a different stage.
        case("ranks_disagree", MPI + ["-np", "1", ZT] + FLAGS + steps +
             [":", "-np", "1", ZT] + with_flag(FLAGS, "--micro-batch", "8") + steps, 2,
             r"train_micro_batch_size_per_gpu: the ranks disagree: 4 on rank 0; 8 on rank 1", 30)
        # Stage 0 against stage 3 used to wait in different collectives until the watchdog.
        case("stage_mismatch", MPI + ["-np", "1", ZT, "--config", stage_config(root, 0)] + FLAGS + steps +
             [":", "-np", "1", ZT, "--config", stage_config(root, 3)] + FLAGS + steps, 2,
             r"zero_optimization\.stage: the ranks disagree: 0 on rank 0; 3 on rank 1", 30,
             env=dict(ENV, ZT_COMM_TIMEOUT_S="60"))
        # Faults during training, with NVMe swap files in use: none may be left.
        cfg, swap = nvme_config(root)
        nvme = MPI + ["-np", "2", ZT, "--config", cfg] + FLAGS + LONG
        dead = subprocess.Popen(["true"])
        dead.wait()
        stale = os.path.join(swap, "zt_swap_rank0_pid%d_0.bin" % dead.pid)
        with open(stale, "wb") as f:
            f.write(b"\0" * 4096)
        case("stale_swap_file", MPI + ["-np", "2", ZT, "--config", cfg] + FLAGS + steps, 0,
             r"removed 1 stale swap file\(s\) of exited processes from " + re.escape(swap), 120, leftovers=[swap])
        case("killed_rank", nvme, lambda rc: rc != 0, r"(exited on signal 9|Killed)", 15, leftovers=[swap],
             fault=signal_ranks(signal.SIGKILL, [1]), wait_for=r"step +10/")
        case("stopped_rank", nvme, lambda rc: rc != 0,
             r"did not complete within 4 s; rank 1 did not answer within 2 s \(stopped.*ZT_COMM_TIMEOUT_S", 15,
             leftovers=[swap], env=dict(ENV, ZT_COMM_TIMEOUT_S="4"),
             fault=signal_ranks(signal.SIGSTOP, [1]), wait_for=r"step +10/")
        case("sigterm_ranks", nvme, 143,
             r"stopped: SIGTERM reached ranks? [0-9, ]+; every rank stopped after step \d+ of 100000; no checkpoint", 10,
             leftovers=[swap], fault=signal_ranks(signal.SIGTERM, [0, 1]), wait_for=r"step +10/")
        # With --save the same signal writes a checkpoint of that step first (exit 0), and a new job
        # loads it (and, signalled again, saves again).
        saved = os.path.join(root, "saved")
        case("sigterm_save", nvme + ["--save", saved], 0,
             r"stopped: SIGTERM reached ranks? [0-9, ]+; every rank stopped after step \d+ of 100000; checkpoint "
             + re.escape(saved) + r"/global_step\d+ saved", 20,
             leftovers=[swap], fault=signal_ranks(signal.SIGTERM, [0, 1]), wait_for=r"step +10/")
        case("sigterm_load", nvme + ["--save", saved, "--load", saved], 0,
             r"loaded checkpoint " + re.escape(saved) + r"/global_step(\d+): step \1, saved at world size 2 stage 3.*"
             r"every rank stopped after step \d+ of 100000; checkpoint .*saved", 20,
             leftovers=[swap], fault=signal_ranks(signal.SIGTERM, [0]), wait_for=r"step +\d+/100000")
        sigterm_resume(root, cfg, swap)
        # SIGINT reaching the ranks (what Ctrl-C does to a job whose launcher forwards it): exit 130.
        case("sigint_ranks", nvme, 130,
             r"stopped: SIGINT reached ranks? [0-9, ]+; every rank stopped after step \d+ of 100000; no checkpoint", 10,
             leftovers=[swap], fault=signal_ranks(signal.SIGINT, [0, 1]), wait_for=r"step +10/")
        # What an operator sends: SIGTERM to mpirun (it forwards it, then kills after a second), and
        # Ctrl-C (SIGINT to the whole foreground process group).
        case("sigterm_mpirun", nvme, lambda rc: rc != 0, r"step +10/", 10, leftovers=[swap],
             fault=lambda proc: proc.send_signal(signal.SIGTERM), wait_for=r"step +10/")
        case("ctrl_c", nvme, lambda rc: rc != 0, r"step +10/", 10, leftovers=[swap],
             fault=lambda proc: os.killpg(proc.pid, signal.SIGINT), wait_for=r"step +10/")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    failed = sum(1 for r in RESULTS if r[4])
    print("\nprobe: %d cases; seconds to exit: %s" % (len(RESULTS), ", ".join("%s %.1f" % (r[0], r[2]) for r in RESULTS)))
    print("%d passed, %d failed" % (len(RESULTS) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
