#!/usr/bin/env python3
"""Reads a run's csv_monitor and tensorboard outputs back — the CSVs with Python's csv module, the
event file with the tensorboard package's own EventAccumulator — and checks that every scalar of
every step is there with the value the metrics file (JSON lines) recorded. Exit 0 when all agree."""
import argparse
import csv
import glob
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zt_metrics  # noqa: E402 (found through the path above)


def expected_scalars(steps):
    """tag -> {x: value} from the metrics file, as the monitors should have them."""
    want = {}
    for s in steps:
        x = s["samples"]
        rows = {
            "Train/Samples/train_loss": s["loss"],
            "Train/Samples/lr": s["lr"],
            "Train/Samples/grad_norm": s["grad_norm"],
            "Train/Samples/tokens_per_s": s["tokens_per_s"],
            "Train/Samples/step_time_ms": s["step_ms"],
            "Train/Samples/peak_memory_MiB": s["mem_peak"] / 2**20,
            "Train/Samples/comm_bytes_all_reduce": s["comm_bytes"]["all_reduce"],
            "Train/Samples/comm_bytes_reduce_scatter": s["comm_bytes"]["reduce_scatter"],
            "Train/Samples/comm_bytes_all_gather": s["comm_bytes"]["all_gather"],
        }
        for tag, v in rows.items():
            want.setdefault(tag, {})[x] = v
    return want


def close(a, b, rel):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def check(name, got, want, rel, problems):
    for tag, by_x in want.items():
        if tag not in got:
            problems.append(f"{name}: tag {tag} missing (have {sorted(got)})")
            continue
        if sorted(got[tag]) != sorted(by_x):
            problems.append(f"{name}: {tag} has steps {sorted(got[tag])}, the run had {sorted(by_x)}")
            continue
        for x, v in by_x.items():
            if not close(got[tag][x], v, rel):
                problems.append(f"{name}: {tag} at {x} = {got[tag][x]}, metrics say {v}")


def read_csv_folder(folder):
    got = {}
    for path in glob.glob(os.path.join(folder, "*.csv")):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        tag = os.path.basename(path)[:-4]  # Train_Samples_train_loss
        assert rows[0][0] == "step", f"{path}: header {rows[0]}"
        got[tag] = {int(r[0]): float(r[1]) for r in rows[1:]}
        got.setdefault("_headers", {})[tag] = rows[0][1]
    return got


def read_tensorboard(folder):
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(folder, size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--metrics", required=True)
    p.add_argument("--csv", help="csv_monitor folder (output_path/job_name)")
    p.add_argument("--tensorboard", help="tensorboard folder (output_path/job_name)")
    p.add_argument("--world-size", type=int, default=1)
    a = p.parse_args()
    metrics = zt_metrics.read_metrics(a.metrics, missing_ok=False)  # the run under test must have written it
    steps, end, profiles = metrics.of("step"), metrics.end, metrics.of("flops_profile")
    problems = []
    if not steps:
        problems.append("the metrics file has no step records")
    want = expected_scalars(steps)
    if a.csv:
        raw = read_csv_folder(a.csv)
        headers = raw.pop("_headers", {})
        got = {t: raw[t.replace("/", "_")] for t in want if t.replace("/", "_") in raw}
        check("csv", got, want, 1e-15, problems)
        for t in want:
            h = headers.get(t.replace("/", "_"))
            if h is not None and h != t.split("/")[-1]:
                problems.append(f"csv: {t} header {h!r}, DeepSpeed's is {t.split('/')[-1]!r}")
    if a.tensorboard:
        got = read_tensorboard(a.tensorboard)
        check("tensorboard", got, want, 1e-6, problems)  # simple_value is a float32
    if end is not None and "comms" in end:
        logged, calls = {}, {}
        for r in end["comms"]:
            logged[r["op"]] = logged.get(r["op"], 0) + r["count"] * r["message_bytes"]
            calls[r["op"]] = calls.get(r["op"], 0) + r["count"]
        for op in ("all_reduce", "reduce_scatter"):
            in_steps = sum(s["comm_bytes"][op] for s in steps)
            if logged.get(op, 0) != in_steps:
                problems.append(f"comms_logger: {op} total {logged.get(op, 0)} bytes, the steps' accounting {in_steps}")
            # comm_calls: one per bucket (reduce_bucket_size); the logger counts the same calls.
            in_steps = sum(s["comm_calls"][op] for s in steps)
            if calls.get(op, 0) != in_steps:
                problems.append(f"comms_logger: {op} {calls.get(op, 0)} calls, the steps' comm_calls {in_steps}")
    for pr in profiles:
        if not pr["attributed"]:
            problems.append(f"flops profile of step {pr['step']} not attributed: {pr['note']}")
        elif not close(pr["gemm_attention_flops"], pr["analytic_flops"], 1e-12):
            problems.append(f"flops profile: GEMM+attention {pr['gemm_attention_flops']} != analytic {pr['analytic_flops']}")
    for msg in problems:
        print("read_monitors: FAIL:", msg)
    print(f"read_monitors: {len(steps)} steps, {len(want)} scalars per step checked"
          f"{' in csv' if a.csv else ''}{' and tensorboard' if a.tensorboard else ''}: "
          f"{'ok' if not problems else str(len(problems)) + ' problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
