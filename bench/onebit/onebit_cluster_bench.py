#!/usr/bin/env python3
"""1-bit Adam and 0/1 Adam against AdamW on a slow link: 2 emulated nodes (scripts/cluster.sh, root) of
RANKS_PER_NODE ranks, the link shaped to each RATE and its TCP rate measured in the same run with
both nodes sending (scripts/cluster_link.py). Per rate, the same model and data train under AdamW
(stage 0, its gradients all-reduced every step), under OneBitAdam (freeze_step 2: the dry run,
one warm-up update, then compressed) and, with --optimizers, under ZeroOneAdam (var_freeze_step 1:
frozen from step 3; local_step_scaler 4 and local_step_clipper 8: syncs every 1, 2, 4, then 8
steps, local steps between) and OneBitLamb (freeze_step 2, as 1-bit Adam; one compressed call a
step for the whole model). For each: the median step time over the steps after
--skip (the peer's steady state, the compressed phase's), the bytes the nodes' interfaces sent
per step (a long run less a short one, so start-up cancels) beside the records' comm_bytes_inter,
and the step the link alone needs for those bytes. The long runs repeat --repeats times,
AdamW and 1-bit Adam interleaved; the step time is the median of the runs' medians. Prints one JSON line per row and a table; the
ratio AdamW / 1-bit Adam is each rate's speed-up, measured in the same run.
  bench/onebit/onebit_cluster_bench.py [--rates 1gbit,100mbit] [--optimizers AdamW,OneBitAdam,ZeroOneAdam,OneBitLamb]
                                        [--model small] [--per-node 2]
                                        [--steps 30] [--short 10] [--skip 6] [--micro-batch 4] [--repeats 3]
ZT_BUILD_DIR picks the build (default build/); the cluster is this script's own and is removed after."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import cluster_link  # noqa: E402

CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")
ZT = os.path.join(os.environ.get("ZT_BUILD_DIR", os.path.join(ROOT, "build")), "runtime", "cli", "zerotrain")


def cluster(env, *args, timeout=120):
    p = subprocess.run([CLUSTER] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"cluster.sh {' '.join(args)}: {p.stdout.strip()}")
    return p.stdout


def config(path, kind, micro_batch):
    params = {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}
    if kind in ("OneBitAdam", "OneBitLamb"):
        params.update(freeze_step=2, cuda_aware=False, comm_backend_name="mpi")
    if kind == "ZeroOneAdam":
        params.update(var_freeze_step=1, local_step_scaler=4, local_step_clipper=8, cuda_aware=False,
                      comm_backend_name="mpi")
    json.dump({"train_micro_batch_size_per_gpu": micro_batch, "gradient_clipping": 1.0,
               "zero_optimization": {"stage": 0}, "optimizer": {"type": kind, "params": params}}, open(path, "w"))


def train(env, a, cfg, steps, metrics):
    """One run on the cluster; the bytes the nodes sent and its step records."""
    before = json.loads(cluster(env, "counters"))["bytes_sent"]
    p = subprocess.run([CLUSTER, "run", "-n", str(a.per_node), "--", ZT, "--config", cfg, "--model", a.model,
                        "--steps", str(steps), "--eval-every", "0", "--metrics", metrics],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=1200)
    if p.returncode != 0:
        raise RuntimeError(f"run failed (rc {p.returncode}):\n{p.stdout[-3000:]}")
    sent = json.loads(cluster(env, "counters"))["bytes_sent"] - before
    lines = [json.loads(l) for l in open(metrics)]
    return sent, [l for l in lines if l["event"] == "step"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="1gbit,100mbit")
    ap.add_argument("--optimizers", default="AdamW,OneBitAdam", help="AdamW first: the peer of every ratio")
    ap.add_argument("--model", default="small")
    ap.add_argument("--per-node", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--short", type=int, default=10)
    ap.add_argument("--skip", type=int, default=6)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    kinds = a.optimizers.split(",")
    if kinds[0] != "AdamW" or any(k not in ("AdamW", "OneBitAdam", "ZeroOneAdam", "OneBitLamb") for k in kinds):
        sys.exit("onebit_cluster_bench: --optimizers is AdamW followed by any of OneBitAdam, ZeroOneAdam, OneBitLamb")
    if not os.access(ZT, os.X_OK):
        sys.exit(f"onebit_cluster_bench: {ZT} is not built (run scripts/build.sh)")
    name = "ztob%d" % (os.getpid() % 10000)
    env = dict(os.environ, ZT_CLUSTER=name, ZT_CLUSTER_NET="10.%d.%d" % (150 + os.getpid() % 40, os.getpid() % 250),
               OMP_NUM_THREADS="1")
    check = subprocess.run([CLUSTER, "check"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if check.returncode != 0:
        print(check.stdout.strip())
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="zt_onebit_bench_")
    rows = []
    try:
        cluster(env, "up", "2")
        for rate in a.rates.split(","):
            cluster(env, "shape", rate)
            bps = cluster_link.measure_rate(CLUSTER, env, rate_hint_bps=cluster_link.rate_bits(rate), both_ways=True)
            medians = {k: [] for k in kinds}
            means = {k: [] for k in kinds}  # 0/1 Adam's steps differ by kind: its throughput is the mean's
            runs = {}
            for rep in range(a.repeats):  # interleaved, so that a drift of the machine hits both alike
                for kind in kinds:
                    cfg = os.path.join(work, kind + ".json")
                    config(cfg, kind, a.micro_batch)
                    sent, steps = train(env, a, cfg, a.steps, os.path.join(work, f"{kind}_{rate}_long{rep}.jsonl"))
                    medians[kind].append(statistics.median(s["step_ms"] for s in steps[a.skip:]))
                    means[kind].append(statistics.mean(s["step_ms"] for s in steps[a.skip:]))
                    runs[kind] = (sent, steps)
            for kind in kinds:
                cfg = os.path.join(work, kind + ".json")
                long_sent, steps = runs[kind]
                short_sent, _ = train(env, a, cfg, a.short, os.path.join(work, f"{kind}_{rate}_short.jsonl"))
                tail = steps[a.skip:]
                wire = (long_sent - short_sent) / (a.steps - a.short)
                # the records of the same steps the wire's difference covers (0/1 Adam's differ by kind)
                records = statistics.mean(s["comm_bytes_inter"] for s in steps[a.short:])
                row = {"bench": "onebit_cluster", "rate": rate, "link_MBps": round(bps / 1e6, 2),
                       "nodes": 2, "ranks_per_node": a.per_node, "model": a.model, "optimizer": kind,
                       "step_ms": round(statistics.median(medians[kind]), 1),
                       "step_ms_runs": [round(m, 1) for m in medians[kind]],
                       "mean_step_ms": round(statistics.median(means[kind]), 1),
                       "compressed": all(not s.get("gradients_all_reduced", True) for s in tail),
                       "step_kinds": {k: sum(s.get("optimizer_comm", "exact") == k for s in tail)
                                      for k in ("exact", "compressed", "local")},
                       "wire_bytes_per_step": int(wire), "records_inter_bytes_per_step": int(records),
                       "wire_over_records": round(wire / records, 3) if records else None,
                       # each node's link carries its half of the job's inter-node bytes, both at once
                       "link_ms": round(1e3 * records / 2 / bps, 1)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        subprocess.run([CLUSTER, "down"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    print()
    print("| link | optimizer | step ms (median of runs; each run's median) | mean step ms | link ms for its bytes | inter-node bytes/step (wire / records) | AdamW step / this step (medians; means) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        peer = [x for x in rows if x["rate"] == r["rate"] and x["optimizer"] == "AdamW"][0]
        kinds_seen = ", ".join(f"{v} {k}" for k, v in r["step_kinds"].items() if v) if r["optimizer"] == "ZeroOneAdam" else ""
        label = " (" + kinds_seen + ")" if kinds_seen else " (compressed)" if r["compressed"] else ""
        print(f"| {r['rate']} ({r['link_MBps']} MB/s) | {r['optimizer']}{label} | "
              f"{r['step_ms']} ({', '.join(str(x) for x in r['step_ms_runs'])}) | {r['mean_step_ms']} | {r['link_ms']} | "
              f"{r['wire_bytes_per_step']} / {r['records_inter_bytes_per_step']} ({r['wire_over_records']}) | "
              f"{peer['step_ms'] / r['step_ms']:.2f}; {peer['mean_step_ms'] / r['mean_step_ms']:.2f} |")


if __name__ == "__main__":
    main()
