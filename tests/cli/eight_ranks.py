"""The harness the 8-rank ZeRO++ tests share: the binary under mpirun at 8 ranks as two "nodes" of 4
(or as --ranks-per-node says), one config of DeepSpeed's keys per run, the metrics records read
back, and pass/fail lines collected until finish()."""
import json
import os
import shutil
import subprocess
import sys
import tempfile


class EightRanks:
    def __init__(self, zerotrain, mpirun, prefix):
        self.zt = zerotrain
        self.mpi = [mpirun, "-q", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        self.env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1")
        self.root = tempfile.mkdtemp(prefix=prefix)
        self.failures = []

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def run(self, name, model, zero, steps, extra=(), rpn=4, more=None, np=8):
        """One run of `model` with zero_optimization `zero` (and top-level keys `more`) at `np` ranks;
        returns the process and its metrics records."""
        cfg = os.path.join(self.root, name + ".json")
        json.dump(dict({"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero}, **(more or {})), open(cfg, "w"))
        m = os.path.join(self.root, name + ".jsonl")
        p = subprocess.run(self.mpi + ["-np", str(np), self.zt, "--config", cfg, "--model", model, "--steps", str(steps),
                                       "--eval-every", "0", "--ranks-per-node", str(rpn), "--metrics", m] + list(extra),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env, text=True, timeout=600)
        lines = [json.loads(l) for l in open(m)] if os.path.exists(m) else []
        return p, lines

    def finish(self, name):
        shutil.rmtree(self.root, ignore_errors=True)
        if self.failures:
            print(f"{name}: {len(self.failures)} failure(s)")
            sys.exit(1)
        print(f"{name}: ok")


def mean(xs):
    return sum(xs) / len(xs)
