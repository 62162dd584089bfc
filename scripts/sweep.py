#!/usr/bin/python3
"""The stage sweep: trains the same model on the same data once per ZeRO stage (and per offload
device and per value of any swept key) under mpirun, then writes DIR/sweep.csv, DIR/sweep.md and
PNG plots that put what each run measured beside what the ZeRO paper predicts at that N:

  resident bytes per rank, by category (params, grads, fp32 master, optimizer moments, activations,
  buffers), beside the paper's (w+w+K)Psi, (w+w+K/N)Psi, (w+(w+K)/N)Psi, (w+w+K)Psi/N — with the
  run's byte widths: w = 2 and K = 12 for mixed-precision Adam as in the paper; fp32 has w = 4, K = 8;
  bytes per step by collective beside the paper's 2Psi / 2Psi / 2Psi / 3Psi (stage 0's all-reduce
  moves 2Psi on the wire: a reduce-scatter and an all-gather);
  step time, tokens/s, peak memory, and the share of communication hidden behind compute (from the
  trace: 1 - time compute waited for collectives / time the communicator was busy);
  with --ranks-per-node n (N/n "nodes" on one machine): bytes per step on intra- and inter-node links
  beside the binary's predictor, and a modelled step time: the measured compute plus an alpha-beta
  model per link class (each node's bytes of the class leave on its own link in parallel: bytes /
  nodes / beta, plus alpha per call on the class; inter-node calls are those of groups that span
  nodes), since one machine cannot show a slow link's cost in wall time (beside it, the same with
  one compute term shared by every run: the median of their measured compute, or --compute-ms, so
  the ratio is the links' effect alone). MiCS runs take the paper's formulas over the shard group
  (states / s, volume 3Psi + the replica all-reduce's 2Psi/s).
  With --cluster (root): every row runs on the emulated cluster (scripts/cluster.sh, world /
  ranks-per-node nodes), once on the unshaped link and once per --link-rates (with --link-delay
  added each way; --repeats N times in turns), the link's TCP rate and round trip measured at each;
  sweep.md puts each measured step beside the model (scripts/cluster_link.py: the compute, then the
  inter-node bytes per node at the measured rate and one one-way trip per crossing call, or the
  collectives' CPU time if longer, beside compute and after it) and flags a row more than 20%
  outside it (--check fails on a flag).

Usage: python3 scripts/sweep.py --config configs/stage2.json --model small --world-size 4 --out out/sweep
       [--stages 0,1,2,3] [--offload none,cpu] [--vary zero_optimization.stage3_prefetch_bucket_size=0,1e6]
       [--set zero_optimization.overlap_comm=false] [--steps 20] [--check] [--ranks-per-node 2]
       [--inter-gbps 100] [--inter-latency-us 10] [--intra-speedup 20] [--compute-ms 40]
       [--cluster --link-rates 1gbit,100mbit [--link-delay 2ms] [--repeats 3]] [-- zerotrain flags...]
Flags after "--" go to every run; the shipped configs need none (an HF template from configs/hf/ needs
the Trainer's flags there: -- --micro-batch 4 --lr 3e-3 ...).
"""
import argparse
import copy
import csv
import itertools
import json
import math
import os
import shutil
import statistics
import subprocess
import sys

import cluster_link
import zt_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = ["params", "grads", "master", "optimizer", "activations", "buffers"]
LEDGER_KEYS = {"params": "params", "grads": "grads", "master": "master_weights", "optimizer": "optimizer_states",
               "activations": "activations", "buffers": "comm_buffers"}
# Stage 3 as the paper counts it (every unit gathered for its forward and again for its backward),
# unless the config or --set/--vary say otherwise; sweep these to see what reuse and persistence save.
PAPER_STAGE3 = {"zero_optimization.stage3_max_reuse_distance": 0, "zero_optimization.stage3_param_persistence_threshold": 0}
COLLECTIVES = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all"]
# Swept keys that exist at stage 3 alone, with the test for "on": a sweep runs the lower stages with
# them off only, so --vary zero_optimization.zero_hpz_partition_size=1,8 keeps stages 0-2 as baselines.
STAGE3_ONLY = {"zero_optimization.zero_hpz_partition_size": lambda v: int(v) > 1,
               "zero_optimization.mics_shard_size": lambda v: int(v) > 0,
               "zero_optimization.zero_quantized_weights": lambda v: str(v).lower() == "true",
               "zero_optimization.zero_quantized_gradients": lambda v: str(v).lower() == "true"}
LINK_TEXT = ""  # the modelled links in words (main sets it from the flags)
GiB = float(1 << 30)
MiB = float(1 << 20)


def parse_value(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def set_key(cfg, dotted, value):
    node = cfg
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


def find_binary(name, given):
    if given:
        return given
    for cand in (os.path.join(ROOT, "build", "runtime", "cli", name), shutil.which(name)):
        if cand and os.path.exists(cand):
            return cand
    sys.exit(f"sweep: cannot find {name}; build first (bash scripts/build.sh) or pass --zerotrain")


def machine_name(zerotrain):
    try:
        env = json.loads(subprocess.run([zerotrain, "env", "--json"], capture_output=True, text=True, check=True).stdout)
        gpus = env.get("gpus") or []
        if gpus:
            return gpus[0].get("name", "GPU")
        cpu = env.get("cpu", {})
        return f"{cpu.get('model', 'CPU')}, {cpu.get('logical_cpus', '?')} CPUs"
    except Exception:  # the title only
        return "this machine"


def paper_formula(plan, psi):
    """The ZeRO paper's model-state bytes per rank (params, grads, optimizer): w bytes per parameter
    for params and grads, K for the optimizer, each divided by what the binary's plan says the stage
    divides it by (its stage_divisors, from base/stage_traits.h)."""
    w, k, div = plan["working_bytes"], plan["optimizer_k"], plan["stage_divisors"]
    return w * psi / div["params"], w * psi / div["grads"], k * psi / div["optimizer"]


def group_spans(start, n):
    """Each split group as (ranks, spans nodes), from the run's shape: hpZ's secondary group and the
    hierarchical gather's node level sit inside a node; MiCS's shard group spans nodes when it is
    larger than one, its replica group (one rank of every shard group) whenever there are several
    nodes; the hierarchical gather's cross level is one rank per node of the shard group."""
    rpn, nodes = start["ranks_per_node"], start["nodes"]
    s = start.get("mics_shard_size", -1)
    s = s if 0 < s < n else n
    return {"secondary": (start.get("hpz_partition_size", 1), False), "shard": (s, s > rpn),
            "replica": (n // s, nodes > 1), "cross": (max(1, s // rpn), True), "node": (min(rpn, s), False)}


def call_counts(step, n, start):
    """(calls, crossing): the step's collective calls, and those of them that cross nodes (every call
    of a group that spans nodes, and every world call when there are several nodes)."""
    nodes = max(1, start["nodes"])
    groups = step.get("comm_groups")
    if groups is None:  # a record without comm_groups: hpZ's secondary group alone
        groups = {"secondary": {"bytes": step.get("comm_bytes_secondary", {}), "calls": step.get("comm_calls_secondary", {})}}
    spans = group_spans(start, n)
    calls = sum(step["comm_calls"].get(c, 0) for c in COLLECTIVES)
    world_calls, crossing = calls, 0
    for role, g in groups.items():
        c = sum(g.get("calls", {}).get(x, 0) for x in COLLECTIVES)
        world_calls -= c
        crossing += c if spans.get(role, (n, nodes > 1))[1] else 0
    crossing += world_calls if nodes > 1 else 0
    return calls, crossing


def modelled_comm_s(step, n, start, link):
    """Seconds one step's collectives take on the modelled links, per link class as the binary's MPI
    collectives send them (the records' comm_bytes_inter / comm_bytes_intra, the whole job's): each
    node's bytes leave on its own link in parallel, so a class takes its bytes / nodes / beta, plus
    alpha per call on it (inter-node: the calls of every group that spans nodes)."""
    nodes = max(1, start["nodes"])
    calls, crossing = call_counts(step, n, start)
    inter, intra = step.get("comm_bytes_inter", 0), step.get("comm_bytes_intra", 0)
    return (inter / nodes / link["inter_beta"] + link["inter_alpha"] * crossing +
            intra / nodes / link["intra_beta"] + link["intra_alpha"] * calls)


def summarize(run, start, steps, end, n, link):
    plan = start["plan"]
    psi = start["params"]
    w = plan["working_bytes"]
    k = plan["optimizer_k"]
    stage = start["stage"]
    resident = end["resident"]  # the ledger when training ended (buffers are made during steps)
    alloc = {c: resident.get(LEDGER_KEYS[c], 0) for c in CATEGORIES}
    later = steps[1:] if len(steps) > 1 else steps
    zero_one = "zero_one_var_freeze_step" in start
    lamb = "onebit_lamb_freeze_step" in start
    # 1-bit Adam, 0/1 Adam and 1-bit LAMB: their compressed steps, once there are any
    compressing = "onebit_freeze_step" in start or zero_one or lamb
    if compressing:
        later = [s for s in steps if s.get("optimizer_comm", "compressed" if not s.get("gradients_all_reduced", True)
                                           else "exact") == "compressed"] or later
    row = dict(run)
    row.update({"stage": stage, "world_size": n, "params": psi, "precision": start["precision"],
                "w_bytes": w, "K_bytes": k})
    for c in CATEGORIES:
        row[f"{c}_bytes"] = alloc.get(c, 0)
    fp, fg, fo = paper_formula(plan, psi)
    hpz = start.get("hpz_partition_size", 1)
    if stage == 3 and n > 1 and hpz > 1:
        fp += w * psi / hpz  # hpZ's secondary copy: a 1/hpz slice of every unit (ZeRO++'s Psi/hpz)
    row["onebit_padding_bytes"] = 0
    if zero_one or lamb:  # 0/1 Adam's synced point, 1-bit LAMB's flat momentum: Psi fp32 at any world size
        fo += 4 * psi
    if compressing and n > 1:  # the error feedback: worker Psi and server Psi/N, fp32
        fo += 4 * psi * (1 + 1 / n)
        tensors = sum(u.get("tensors", 0) for u in start["units"])
        row["onebit_padding_bytes"] = 4 * tensors * n * math.lcm(n, 8) * (1 + 1 / n)
    row["formula_params_bytes"], row["formula_grads_bytes"], row["formula_optimizer_bytes"] = fp, fg, fo
    row["model_states_bytes"] = sum(alloc.get(c, 0) for c in ("params", "grads", "master", "optimizer"))
    row["formula_model_states_bytes"] = fp + fg + fo
    row["plan_buffers_bytes"] = plan["device_per_rank"]["buffers"]
    row["plan_activations_bytes"] = plan["device_per_rank"]["activations"]
    units = start["units"]
    row["embedding_unit_bytes"] = units[0]["padded"] * w
    row["padding_elements"] = sum(u["padded"] - u["numel"] for u in units)
    # Bytes per step (this rank's algorithm bytes, a step after the first): the median step.
    for c in COLLECTIVES:
        row[f"{c}_bytes_per_step"] = statistics.median(s["comm_bytes"][c] for s in later)
    wire = (2 * row["all_reduce_bytes_per_step"] + row["reduce_scatter_bytes_per_step"] + row["all_gather_bytes_per_step"] +
            row["all_to_all_bytes_per_step"])
    row["paper_volume_measured_bytes"] = wire
    comm_w = w  # gradients and parameters travel in the working type unless communication_data_type says otherwise
    # MiCS (s < N): stage 3 inside the shard group, plus the replica all-reduce of a 1/s shard (2Psi/s
    # on the wire); the states shard over s (the plan's stage divisors say so).
    mics = start.get("mics_shard_size", -1)
    row["mics_shard_size"] = mics if stage == 3 and 0 < mics < n else 0
    replica = 2.0 / row["mics_shard_size"] if row["mics_shard_size"] else 0.0
    row["formula_volume_bytes"] = ((3 if stage == 3 else 2) + replica) * psi * comm_w
    # qwZ: stage 3's two gathers of every unit carry one byte an element, plus a 4-byte scale a block
    # (blocks of at least 4,000 elements or a whole shard) and each rank's levels padded to 8 bytes.
    row["quantized_weights"] = bool(stage == 3 and n > 1 and start.get("quantized_weights"))
    row["qwz_scale_slack_bytes"] = 0
    if row["quantized_weights"]:
        row["formula_volume_bytes"] = (comm_w * (1 + replica) + 2) * psi
        row["qwz_scale_slack_bytes"] = 2 * sum(4 * (u["padded"] / 4000 + n) + 8 * n for u in units)
    # qgZ: the reduce-scatter's Psi becomes two int4 all-to-alls, Psi/2 inside the node and Psi/(2n) to
    # the other nodes, plus a 4-byte scale per block of the model's width and each owner's record
    # padded (to the bucket's largest owner, to whole words); the 1-D tensors go exactly.
    row["quantized_gradients"] = bool(stage == 3 and start.get("quantized_gradients"))
    row["qgz_slack_bytes"] = 0
    if row["quantized_gradients"]:
        rpn = start["ranks_per_node"]
        qg = [s["quant_grads"] for s in later if "quant_grads" in s]
        exact = statistics.median(x["exact_elements"] for x in qg) if qg else 0
        row["formula_volume_bytes"] += (0.5 * (1 + 1 / rpn) - comm_w) * psi
        block = start.get("quantized_gradient_block", 8)
        row["qgz_slack_bytes"] = (4 * psi / block + 16 * n) * (1 + 1 / rpn) + exact * comm_w + row["padding_elements"]
    # 1-bit Adam (stage 0) in its compressed phase: no gradient all-reduce; the momentum crosses as 1 bit
    # an element in an all-to-all and an all-gather (Psi/8 bytes each), plus each of the T tensors'
    # padding (under W·lcm(W, 8) elements, so under W·lcm/8 bytes in each) and its two 4-byte scales
    # per rank, and the overflow flag and norm (16 bytes a rank).
    row["onebit_compressed"] = bool(compressing and later and
                                    all(s.get("optimizer_comm", "compressed" if not s.get("gradients_all_reduced", True)
                                                               else "exact") == "compressed" for s in later))
    if row["onebit_compressed"]:
        row["formula_volume_bytes"] = psi / 4
        tensors = sum(u.get("tensors", 0) for u in units)
        row["onebit_slack_bytes"] = tensors * (n * math.lcm(n, 8) / 4 + 8 * n) + 16 * n
    row["padding_bytes"] = row["padding_elements"] * comm_w
    row["step_ms"] = statistics.median(s["step_ms"] for s in later)
    row["tokens_per_s"] = statistics.median(s["tokens_per_s"] for s in later)
    row["peak_bytes"] = max(s["mem_peak"] for s in steps)
    # The kernel's count for rank 0: peak resident set less what the process held at start-up.
    proc = (end or {}).get("process")
    row["rss_peak_bytes"] = proc["hwm"][0] - proc["baseline"][0] if proc else None
    row["comm_busy_ms_per_step"] = 1e3 * statistics.median(s["comm_busy_s"] for s in later)
    row["comm_hidden_share"] = end.get("comm_hidden_share") if end else None
    # Link classes (the binary's link model over its measured bytes, the whole job's per step) and the
    # modelled step: compute (the step less the time it waited for collectives) plus modelled links.
    row["ranks_per_node"], row["nodes"] = start["ranks_per_node"], start["nodes"]
    row["intra_bytes_per_step"] = statistics.median(s["comm_bytes_intra"] for s in later)
    row["inter_bytes_per_step"] = statistics.median(s["comm_bytes_inter"] for s in later)
    phase = "_compressed" if row["onebit_compressed"] else ""  # 1-bit Adam's compressed steps: their own prediction
    row["predicted_intra_bytes_per_step"] = start["expected_comm_bytes_intra_per_step" + phase]
    row["predicted_inter_bytes_per_step"] = start["expected_comm_bytes_inter_per_step" + phase]
    hidden = end.get("comm_hidden_share") if end else None
    waited_ms = (1 - (hidden or 0.0)) * row["comm_busy_ms_per_step"]
    row["compute_ms"] = max(0.0, row["step_ms"] - waited_ms)
    row["modelled_comm_ms"] = 1e3 * statistics.median(modelled_comm_s(s, n, start, link) for s in later)
    row["modelled_step_ms"] = row["compute_ms"] + row["modelled_comm_ms"]
    # qwZ: rank 0's quantize and dequantize time and its sampled error (medians over the later steps).
    q = [s["quant_weights"] for s in later if "quant_weights" in s]
    row["quantize_ms_per_step"] = statistics.median(x["quantize_ms"] for x in q) if q else None
    row["dequantize_ms_per_step"] = statistics.median(x["dequantize_ms"] for x in q) if q else None
    row["quant_max_rel_err"] = max(x["max_rel_err"] for x in q) if q else None
    g = [s["quant_grads"] for s in later if "quant_grads" in s]  # qgZ's, both hops
    row["qgz_quantize_ms_per_step"] = statistics.median(x["quantize_ms"] for x in g) if g else None
    row["qgz_dequantize_ms_per_step"] = statistics.median(x["dequantize_ms"] for x in g) if g else None
    row["qgz_max_rel_err"] = max(x["max_rel_err"] for x in g) if g else None
    row["qgz_rms_rel_err"] = statistics.median(x["rms_rel_err"] for x in g) if g else None
    row["qgz_bound_rel_err"] = g[0]["bound_rel_err"] if g else None
    row["final_loss"] = steps[-1]["loss"]
    row["_losses"] = [s["loss"] for s in steps]  # the curve (loss.png), not a CSV column
    row["param_checksum"] = end.get("param_checksum") if end else None
    return row


def share_compute(rows, given_ms=None):
    """One compute term for every row: the runs do the same forward, backward and update, so on one
    machine their measured compute differs by noise alone; the given value (--compute-ms, e.g. a
    faster device's) or the median of the runs' measured compute, plus each run's modelled links."""
    c = given_ms if given_ms is not None else statistics.median(r["compute_ms"] for r in rows)
    text = (f"{c:.1f} ms given by --compute-ms" if given_ms is not None else
            f"{c:.1f} ms, the median of the {len(rows)} runs' measured compute")
    for r in rows:
        r["shared_compute_ms"], r["shared_compute_text"] = c, text
        r["modelled_step_shared_ms"] = c + r["modelled_comm_ms"]


def check_rows(rows, n):
    """Measured beside formula. Model states: each category within the padding the layout adds
    (units are padded to a multiple of N x 16 elements). Buffers: at most what the plan names.
    Bytes per step: within the padding and the engine's small control exchanges (the loss and the
    norm partials, 8 bytes per rank each) and, at stage 3 with a tied head, the embedding unit
    gathered again for the head's forward and backward, which the paper's 3Psi does not count."""
    problems = []
    for r in rows:
        pad = r["padding_elements"]
        w, k = r["w_bytes"], r["K_bytes"]
        for cat, formula, width in (("params", r["formula_params_bytes"], w), ("grads", r["formula_grads_bytes"], w),
                                    ("optimizer", r["formula_optimizer_bytes"], k)):
            got = r[f"{cat}_bytes"] + (r["master_bytes"] if cat == "optimizer" else 0)
            extra_pad = r.get("onebit_padding_bytes", 0) if cat == "optimizer" else 0
            if not (formula - 1 <= got <= formula + pad * width + extra_pad + 1):
                problems.append(f"{r['name']}: {cat} {got:.0f} B vs formula {formula:.0f} B "
                                f"(allowed padding {pad * width:.0f} B)")
        if r["buffers_bytes"] > r["plan_buffers_bytes"] + 1:
            problems.append(f"{r['name']}: buffers {r['buffers_bytes']:.0f} B, more than the plan names "
                            f"({r['plan_buffers_bytes']:.0f} B)")
        control = 16 * n
        extra = r["paper_volume_measured_bytes"] - r["formula_volume_bytes"]
        slack = (3 if r["stage"] == 3 else 2) * r["padding_bytes"] + control
        if r.get("mics_shard_size"):
            slack += 2 * r["padding_bytes"] / r["mics_shard_size"]
        slack += r.get("qwz_scale_slack_bytes", 0) + r.get("qgz_slack_bytes", 0) + r.get("onebit_slack_bytes", 0)
        if r["stage"] == 3:
            slack += 2 * r["embedding_unit_bytes"]
        if extra < -1 or extra > slack + 1:
            problems.append(f"{r['name']}: {r['paper_volume_measured_bytes']:.0f} B per step vs formula "
                            f"{r['formula_volume_bytes']:.0f} B (allowed {slack:.0f} B)")
        for c in ("intra", "inter"):
            if r[f"{c}_bytes_per_step"] != r[f"predicted_{c}_bytes_per_step"]:
                problems.append(f"{r['name']}: {c}-node bytes per step {r[f'{c}_bytes_per_step']:.0f} vs the predictor's "
                                f"{r[f'predicted_{c}_bytes_per_step']:.0f} (they must be equal)")
    return problems


def fmt_mib(b):
    return f"{b / MiB:.3f}"


def write_markdown(path, rows, title, n):
    out = [f"# ZeRO stage sweep: {title}", "",
           f"Per rank at N = {n}. Formula: the ZeRO paper's model states with this run's widths "
           f"(w bytes per working element, K optimizer bytes per parameter); volumes: algorithm bytes of "
           f"one step (stage 0's all-reduce counted twice: a reduce-scatter and an all-gather on the wire).", "",
           "## Resident bytes per rank (MiB)", "",
           "| run | params | grads | master | moments | activations | buffers | buffers (plan) | model states | paper formula | formula |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    names = {0: "(w+w+K)Ψ", 1: "(w+w+K/N)Ψ", 2: "(w+(w+K)/N)Ψ", 3: "(w+w+K)Ψ/N"}
    for r in rows:
        out.append(f"| {r['name']} | " + " | ".join(fmt_mib(r[f"{c}_bytes"]) for c in CATEGORIES) +
                   f" | {fmt_mib(r['plan_buffers_bytes'])} | {fmt_mib(r['model_states_bytes'])} | "
                   f"{'(w+w+K)Ψ/s' if r.get('mics_shard_size') else names[r['stage']]}, w={r['w_bytes']}, K={r['K_bytes']}"
                   f"{', s=%d' % r['mics_shard_size'] if r.get('mics_shard_size') else ''}"
                   f" | {fmt_mib(r['formula_model_states_bytes'])} |")
    out += ["", "## Bytes per step (MiB, this rank's algorithm bytes)", "",
            "| run | all_reduce | reduce_scatter | all_gather | all_to_all | on the wire (2·AR + RS + AG + A2A) | paper | formula | padding |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        paper = "3Ψ" if r["stage"] == 3 else "2Ψ"
        if r.get("mics_shard_size"):
            paper = f"3Ψ + 2Ψ/{r['mics_shard_size']}"  # stage 3 in the shard group, the replica all-reduce
        if r.get("quantized_weights"):
            paper = "Ψ + 2Ψ int8 (+ scales)"  # qwZ: the reduce-scatter exact, both gathers in int8
        if r.get("quantized_gradients"):  # qgZ: the reduce-scatter's Ψ as int4, inside the node and across
            paper = ("2Ψ int8" if r.get("quantized_weights") else "2Ψ") + " + (Ψ/2 + Ψ/2n) int4 (+ scales, 1-D exact)"
        out.append(f"| {r['name']} | " + " | ".join(fmt_mib(r[f"{c}_bytes_per_step"]) for c in COLLECTIVES) +
                   f" | {fmt_mib(r['paper_volume_measured_bytes'])} | {paper} | {fmt_mib(r['formula_volume_bytes'])}"
                   f" | {fmt_mib(r['padding_bytes'])} |")
    flat3 = next((r for r in rows if r["stage"] == 3), None)
    out += ["", f"## Bytes per step by link class (MiB, the whole job; {rows[0]['nodes']} node(s) of "
            f"{rows[0]['ranks_per_node']} ranks) and the modelled step", "",
            "| run | intra-node | predicted | inter-node | predicted | compute (ms) | modelled links (ms) | "
            "modelled step (ms) | vs stage 3 | links vs stage 3 | step, shared compute (ms) | vs stage 3 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def ratio(key, r):
        return "-" if not flat3 or not r[key] else f"{flat3[key] / r[key]:.3f}x"
    for r in rows:
        out.append(f"| {r['name']} | {fmt_mib(r['intra_bytes_per_step'])} | {fmt_mib(r['predicted_intra_bytes_per_step'])}"
                   f" | {fmt_mib(r['inter_bytes_per_step'])} | {fmt_mib(r['predicted_inter_bytes_per_step'])}"
                   f" | {r['compute_ms']:.1f} | {r['modelled_comm_ms']:.2f} | {r['modelled_step_ms']:.1f} | "
                   f"{ratio('modelled_step_ms', r)} | {ratio('modelled_comm_ms', r)} | "
                   f"{r['modelled_step_shared_ms']:.2f} | {ratio('modelled_step_shared_ms', r)} |")
    out += ["", "Link bytes: the binary's link model (the MPI collectives' two-level and direct algorithms: "
            "collectives/README.md, Across nodes) over the bytes it measured, summed over every rank. Modelled links: "
            f"{LINK_TEXT}; no overlap with compute is assumed (an upper bound). Compute: the step less the time "
            "it waited for collectives, this run's own (noisy between runs on a shared CPU). Shared compute: "
            f"{rows[0]['shared_compute_text']}, the same for every row, so the ratio beside it is the links' "
            "effect alone. vs stage 3: the first stage-3 row's value over this row's.", ""]
    measured = [r for r in rows if r.get("_cluster")]
    if measured:
        first = {}
        for r in measured:
            for c in r["_cluster"]:
                first.setdefault(c["rate"], c["step_ms"])
        delay = measured[0]["_cluster"][0]["delay"]
        repeats = len(measured[0]["_cluster"][0]["steps_ms"])
        out += ["", f"## Measured on the emulated cluster ({rows[0]['nodes']} nodes of {rows[0]['ranks_per_node']}, "
                f"scripts/cluster.sh{', ' + delay + ' added each way' if delay else ''}): the step at each link rate "
                "beside the model", "",
                "| run | link | TCP rate each way (MB/s) | one-way (us) | inter-node MiB/step | crossing calls/step "
                "| compute (ms) | link time (ms) | latency (ms) | collectives' CPU (ms) | step modelled (ms): full "
                "overlap - none | step measured (ms) | measured / no overlap | overlappable time hidden | vs the first row |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in measured:
            for c in r["_cluster"]:
                flag = " **FLAG: more than 20% outside the model**" if c["flag"] else ""
                spread = "" if len(c["steps_ms"]) < 2 else f" ({min(c['steps_ms']):.1f}-{max(c['steps_ms']):.1f})"
                out.append(f"| {r['name']} | {c['rate']}{' + ' + c['delay'] if c['delay'] else ''} | "
                           f"{c['measured_rate'] / 1e6:.1f} | {c['one_way_us']:.0f} | {fmt_mib(c['inter_bytes'])} | "
                           f"{c['crossing_calls']:g} | {c['compute_ms']:.1f} ({min(c['computes_ms']):.0f}-{max(c['computes_ms']):.0f}) | "
                           f"{c['link_ms']:.1f} | {c['latency_ms']:.1f} | {c['comm_cpu_ms']:.1f} | "
                           f"{c['overlapped_ms']:.1f} - {c['modelled_step_ms']:.1f} | {c['step_ms']:.1f}{spread} | "
                           f"{c['ratio']:.3f}{flag} | {100 * c['hidden']:.0f}% | {c['step_ms'] / first[c['rate']]:.3f}x |")
        out += ["", "Model (scripts/cluster_link.py): compute (each run's step less the time it waited for "
                "collectives; the median over every run of the row, unshaped and shaped, since the math is the same "
                "at every rate: range in brackets), plus the step's inter-node bytes per node at the rate measured "
                "with both nodes sending, plus one "
                "one-way trip (ping's round trip / 2) per call that crosses nodes, or the collectives' own CPU time "
                "where that is longer (what the unshaped runs waited for them: the two levels overlap the node's work "
                "with the link). Two bounds: no overlap (compute + collectives, every collective waited for) and full "
                "overlap (the larger of the two); a row more than 20% outside them is flagged, and 'hidden' is where "
                "the step fell between "
                "them (100%: every collective beside compute). Steps: medians after the first"
                + (f", then the median of {repeats} runs in turns with the unshaped run (range in brackets)"
                   if repeats > 1 else "") + ". vs the first row: this row's measured step over the first row's at the "
                "same rate.", ""]
    out += ["", "## Time, throughput, memory, overlap", "",
            "| run | step (ms) | tokens/s | ledger peak (MiB) | peak RSS - baseline (MiB) | comm busy (ms/step) | "
            "hidden behind compute | final loss |",
            "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        hidden = "-" if r["comm_hidden_share"] is None else f"{100 * r['comm_hidden_share']:.0f}%"
        rss = "-" if r.get("rss_peak_bytes") is None else fmt_mib(r["rss_peak_bytes"])
        out.append(f"| {r['name']} | {r['step_ms']:.1f} | {r['tokens_per_s']:.0f} | {fmt_mib(r['peak_bytes'])} | {rss} | "
                   f"{r['comm_busy_ms_per_step']:.1f} | {hidden} | {r['final_loss']:.4f} |")
    qgz = [r for r in rows if r.get("qgz_quantize_ms_per_step") is not None]
    if qgz:
        out += ["", "## Quantized gradient reductions (qgZ, rank 0, median step; error of each int4 rounding)", "",
                "| run | quantize (ms) | dequantize + sum (ms) | share of the step | max sampled error / block absmax | "
                "RMS | bound |",
                "|---|---|---|---|---|---|---|"]
        for r in qgz:
            q_ms = r["qgz_quantize_ms_per_step"] + r["qgz_dequantize_ms_per_step"]
            out.append(f"| {r['name']} | {r['qgz_quantize_ms_per_step']:.2f} | {r['qgz_dequantize_ms_per_step']:.2f} | "
                       f"{100 * q_ms / r['step_ms']:.1f}% | {r['qgz_max_rel_err']:.5f} | {r['qgz_rms_rel_err']:.5f} | "
                       f"{r['qgz_bound_rel_err']:.5f} |")
    quant = [r for r in rows if r.get("quantize_ms_per_step") is not None]
    if quant:
        out += ["", "## Quantized gathers (qwZ, rank 0, median step)", "",
                "| run | quantize (ms) | dequantize (ms) | share of the step | max sampled error / block absmax |",
                "|---|---|---|---|---|"]
        for r in quant:
            q_ms = r["quantize_ms_per_step"] + r["dequantize_ms_per_step"]
            out.append(f"| {r['name']} | {r['quantize_ms_per_step']:.2f} | {r['dequantize_ms_per_step']:.2f} | "
                       f"{100 * q_ms / r['step_ms']:.1f}% | {r['quant_max_rel_err']:.7f} |")
    out += ["", "Stage 3 runs with stage3_max_reuse_distance 0 and stage3_param_persistence_threshold 0 unless the "
            "config or --set/--vary give them: the paper's case, every unit gathered for its forward and again for "
            "its backward. A tied LM head gathers the embedding unit for its forward and backward too (the "
            "difference to 3Ψ). Hidden behind compute: 1 − (time the compute thread waited for collectives, from "
            "the trace) / (time the communicator was busy), rank 0, steps after the first.", "",
            "Plots: memory.png, comm.png, speed.png, loss.png (every run's loss beside the first row's). "
            "Rows: sweep.csv.", ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


def plot(out_dir, rows, title):
    try:
        import matplotlib
    except ImportError:
        sys.exit("sweep: matplotlib is missing: run scripts/setup.sh (Debian's python3-matplotlib, for /usr/bin/python3)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["name"] for r in rows]
    x = list(range(len(rows)))
    colors = {"params": "#4878d0", "grads": "#ee854a", "master": "#6acc64", "optimizer": "#d65f5f",
              "activations": "#956cb4", "buffers": "#8c613c", "all_reduce": "#4878d0", "reduce_scatter": "#ee854a",
              "all_gather": "#6acc64", "all_to_all": "#d65f5f"}
    files = []

    width = max(7.5, 1.1 * len(rows) + 4)
    rot = 15 if len(rows) > 4 else 0

    def stacked(file, series, formula, formula_label, ylabel, what, peak=False):
        """Stacked bars (label, values in MiB, color) with the paper's formula as a black tick."""
        fig, ax = plt.subplots(figsize=(width, 4.8))
        bottom = [0.0] * len(rows)
        for label, values, color in series:
            ax.bar(x, values, 0.6, bottom=bottom, label=label, color=color)
            bottom = [b + y for b, y in zip(bottom, values)]
        ax.scatter(x, formula, marker="_", s=900, color="black", linewidths=2.5, zorder=5, label=formula_label)
        if peak:
            ax.scatter(x, [r["peak_bytes"] / MiB for r in rows], marker="v", s=60, color="crimson", zorder=6,
                       label="ledger peak")
            rss = [(xi, r["rss_peak_bytes"] / MiB) for xi, r in zip(x, rows) if r.get("rss_peak_bytes") is not None]
            if rss:
                ax.scatter([p[0] for p in rss], [p[1] for p in rss], marker="x", s=60, color="black", zorder=7,
                           label="peak RSS - start-up baseline (OS)")
        ax.set_xticks(x, names, rotation=rot)
        ax.set_ylabel(ylabel)
        ax.set_xlabel("run")
        ax.set_title(f"{what}: {title}", fontsize=10)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, file), dpi=90)
        plt.close(fig)
        files.append(file)

    stacked("memory.png",
            [(c if c != "optimizer" else "optimizer moments", [r[f"{c}_bytes"] / MiB for r in rows], colors[c])
             for c in CATEGORIES],
            [r["formula_model_states_bytes"] / MiB for r in rows], "ZeRO paper formula: model states",
            "resident bytes per rank (MiB)", "Memory per rank by category", peak=True)
    stacked("comm.png",
            [(c + (" (x2: on the wire)" if c == "all_reduce" else ""),
              [(2 if c == "all_reduce" else 1) * r[f"{c}_bytes_per_step"] / MiB for r in rows], colors[c])
             for c in COLLECTIVES],
            [r["formula_volume_bytes"] / MiB for r in rows], "ZeRO paper: 2Ψ (stages 0-2),\n3Ψ (stage 3)",
            "bytes per step per rank (MiB)", "Communication per step by collective")

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(max(10, 2.2 * len(rows) + 4), 4.4))
    a1.bar(x, [r["tokens_per_s"] for r in rows], 0.6, color="#4878d0")
    a1.set_ylabel("tokens per second (all ranks, median step)")
    a1.set_title("throughput", fontsize=10)
    a2.bar(x, [r["step_ms"] for r in rows], 0.6, color="#ee854a", label="step")
    a2.bar(x, [r["comm_busy_ms_per_step"] for r in rows], 0.3, color="#8c613c", label="communicator busy")
    a2.set_ylabel("milliseconds per step (median)")
    a2.set_title("step time", fontsize=10)
    a2.legend(fontsize=8)
    hidden = [(100 * r["comm_hidden_share"]) if r["comm_hidden_share"] is not None else 0.0 for r in rows]
    a3.bar(x, hidden, 0.6, color="#6acc64")
    a3.set_ylim(0, 100)
    a3.set_ylabel("communication hidden behind compute (%)")
    a3.set_title("overlap (from the trace)", fontsize=10)
    for a in (a1, a2, a3):
        a.set_xticks(x, names, rotation=30 if len(rows) > 2 else 0, fontsize=8)
        a.set_xlabel("run")
    fig.suptitle(f"Speed and overlap: {title}", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "speed.png"), dpi=90)
    plt.close(fig)
    files.append("speed.png")

    # Every run's loss curve beside the first row's (the exact run when quantized runs are swept).
    fig, ax = plt.subplots(figsize=(max(7.5, width * 0.8), 4.4))
    for i, r in enumerate(rows):
        ax.plot(range(1, len(r["_losses"]) + 1), r["_losses"], label=r["name"], linewidth=2.2 if i == 0 else 1.2,
                color="black" if i == 0 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (rank 0's report)")
    ax.set_title(f"Loss per step: {title}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "loss.png"), dpi=90)
    plt.close(fig)
    files.append("loss.png")
    return files


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True)
    p.add_argument("--model", default="small")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--stages", default="0,1,2,3")
    p.add_argument("--offload", default="none", help="comma list of offload_optimizer devices: none,cpu,nvme")
    p.add_argument("--vary", action="append", default=[], help="KEY=V1,V2,...: one run per value (dotted config key)")
    p.add_argument("--set", action="append", default=[], help="KEY=VALUE for every run")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--out", required=True)
    p.add_argument("--zerotrain")
    p.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    p.add_argument("--check", action="store_true", help="exit 1 unless measured and formula agree within the slack")
    p.add_argument("--ranks-per-node", type=int, default=0, help="ranks per node n (default: the world size: one node)")
    p.add_argument("--inter-gbps", type=float, default=100.0, help="modelled inter-node bandwidth, Gb/s")
    p.add_argument("--inter-latency-us", type=float, default=10.0, help="modelled inter-node latency per call, us")
    p.add_argument("--intra-speedup", type=float, default=20.0, help="intra-node links this many times faster (both terms)")
    p.add_argument("--compute-ms", type=float, help="the modelled step's shared compute term, ms per step "
                   "(default: the median of the runs' measured compute)")
    p.add_argument("--cluster", action="store_true",
                   help="run every row on the emulated cluster (scripts/cluster.sh, root): world / ranks-per-node "
                        "nodes, once on the unshaped link and once per --link-rates, measured step beside the model")
    p.add_argument("--link-rates", default="1gbit", help="with --cluster: comma list of tc rates (1gbit,100mbit)")
    p.add_argument("--link-delay", help="with --cluster: latency added each way at every rate (500us, 2ms: "
                                        "cluster.sh shape RATE DELAY); the model adds one one-way trip per crossing call")
    p.add_argument("--repeats", type=int, default=1, help="with --cluster: each row's unshaped and shaped runs this "
                                                          "many times, in turns; medians (default 1)")
    a = p.parse_args(argv)
    if a.link_delay and not a.cluster:
        sys.exit("sweep: --link-delay needs --cluster (one host has no link to delay)")
    if a.link_delay and not cluster_link.delay_ok(a.link_delay):
        sys.exit(f"sweep: --link-delay '{a.link_delay}' needs a unit: us, ms or s (e.g. 500us, 2ms)")
    if a.repeats < 1:
        sys.exit(f"sweep: --repeats {a.repeats}: needs 1 or more")
    # Flags every run gets from the sweep itself: given again after `--`, zerotrain would refuse the
    # second one in words about itself ("At Most 1 required but received 2").
    owned = {"--config": "--config", "--model": "--model", "--steps": "--steps", "--eval-every": None,
             "--eval-batches": None, "--metrics": None, "--trace": None}
    for f in extra:
        name = f.split("=", 1)[0]
        if name in owned:
            instead = f"use the sweep's own {owned[name]}" if owned[name] else "drop it"
            sys.exit(f"sweep: '{f}' after '--': the sweep passes {name} to every run itself (--config, --model, "
                     f"--steps, --eval-every 0, --eval-batches 1, --metrics, --trace are its own); {instead}")
    rpn = a.ranks_per_node or a.world_size
    if rpn < 1 or a.world_size % rpn:
        sys.exit(f"sweep: --ranks-per-node {rpn} must divide --world-size {a.world_size}")
    link = {"inter_alpha": a.inter_latency_us * 1e-6, "inter_beta": a.inter_gbps * 1e9 / 8}
    link["intra_alpha"], link["intra_beta"] = link["inter_alpha"] / a.intra_speedup, link["inter_beta"] * a.intra_speedup
    global LINK_TEXT
    LINK_TEXT = (f"inter-node {a.inter_gbps:g} Gb/s per node and {a.inter_latency_us:g} us per call, intra-node "
                 f"{a.intra_speedup:g}x faster in both")
    zt = find_binary("zerotrain", a.zerotrain)
    flags = extra
    with open(a.config) as f:
        base = json.load(f)
    for kv in a.set:
        k, v = kv.split("=", 1)
        set_key(base, k, parse_value(v))
    varies = []
    for kv in a.vary:
        k, vs = kv.split("=", 1)
        varies.append((k, [parse_value(v) for v in vs.split(",")]))
    os.makedirs(a.out, exist_ok=True)
    mpi = [a.mpirun, "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    cluster = Cluster(a.world_size // rpn, rpn, a.link_rates.split(","), a.link_delay) if a.cluster else None
    try:
        rows = run_rows(a, zt, flags, base, varies, mpi, rpn, link, cluster)
    finally:
        if cluster:
            cluster.down()
    return report(a, zt, rows)


class Cluster:
    """The emulated cluster the rows run on: its own name, up for the sweep, down after it; the link's
    measured TCP rate, unshaped and at each rate."""

    def __init__(self, nodes, per_node, rates, delay=None):
        self.sh = os.path.join(ROOT, "scripts", "cluster.sh")
        self.env = dict(os.environ, ZT_CLUSTER="ztsweep%d" % os.getpid(),
                        ZT_CLUSTER_NET="10.%d.%d" % (178 + os.getpid() % 70, os.getpid() % 250))
        self.nodes, self.per_node, self.rates, self.delay, self.measured, self.rtt_us = nodes, per_node, rates, delay, {}, {}
        if nodes < 2:
            sys.exit("sweep: --cluster needs at least 2 nodes (--world-size / --ranks-per-node)")
        check = subprocess.run([self.sh, "check"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if check.returncode != 0:
            sys.exit("sweep: --cluster: " + check.stdout.strip())
        for rate in rates:
            try:
                cluster_link.rate_bits(rate)
            except ValueError as e:
                sys.exit(f"sweep: --link-rates: {e}")
        self.sh_run("up", str(nodes))

    def sh_run(self, *args):
        r = subprocess.run([self.sh] + list(args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            self.down()  # nothing of this sweep's cluster is left behind
            sys.exit(f"sweep: cluster.sh {' '.join(args)} failed: {r.stdout.strip()}")
        return r.stdout

    def shape(self, rate):
        """Shapes every node's link (`off`: unshaped and undelayed, not measured; otherwise at the rate
        with the sweep's delay) and measures its TCP rate and ping's round trip once per rate."""
        self.sh_run("shape", rate, *([self.delay] if self.delay and rate != "off" else []))
        if rate != "off" and rate not in self.measured:
            self.measured[rate] = cluster_link.measure_rate(self.sh, self.env, rate_hint_bps=cluster_link.rate_bits(rate), both_ways=True)
            self.rtt_us[rate] = cluster_link.measure_rtt_us(self.sh, self.env)
            print(f"sweep: the link at {rate}{' + ' + self.delay if self.delay else ''}: {self.measured[rate] / 1e6:.1f} MB/s "
                  f"of TCP payload each way, round trip {self.rtt_us[rate]:.0f} us", flush=True)
        return self.measured.get(rate)

    def launcher(self):
        return [self.sh, "run", "-n", str(self.per_node), "--"]

    def down(self):
        subprocess.run([self.sh, "down"], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_one(cmd, log, name, env=None):
    print(f"sweep: {name}: {' '.join(cmd)}", flush=True)
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    if rc != 0:
        with open(log) as f:
            sys.stderr.write(f.read())
        sys.exit(f"sweep: {name} failed (exit {rc}); its log: {log}")


def run_rows(a, zt, flags, base, varies, mpi, rpn, link, cluster):
    rows = []
    combos = list(itertools.product([int(s) for s in a.stages.split(",")], a.offload.split(","),
                                    itertools.product(*[v for _, v in varies]) if varies else [()]))
    for stage, off, values in combos:
        if off != "none" and stage == 0:
            continue  # offload needs stage >= 1
        if stage < 3 and any(k in STAGE3_ONLY and STAGE3_ONLY[k](v) for (k, _), v in zip(varies, values)):
            continue  # hpZ exists at stage 3 alone (the binary refuses it below): the baselines run it off
        name = f"stage {stage}" + ("" if off == "none" else f" offload {off}") + \
               "".join(f", {k.split('.')[-1]}={v}" for (k, _), v in zip(varies, values))
        slug = name.replace(" ", "_").replace(",", "").replace("=", "-")
        run_dir = os.path.join(a.out, "runs", slug)
        os.makedirs(run_dir, exist_ok=True)
        cfg = copy.deepcopy(base)
        set_key(cfg, "zero_optimization.stage", stage)
        if off != "none":
            set_key(cfg, "zero_optimization.offload_optimizer.device", off)
            if off == "nvme":
                set_key(cfg, "zero_optimization.offload_optimizer.nvme_path",
                        cfg.get("zero_optimization", {}).get("offload_optimizer", {}).get("nvme_path") or "/tmp")
        given = {kv.split("=", 1)[0] for kv in a.set} | {k for k, _ in varies}
        if stage == 3:
            for k, v in PAPER_STAGE3.items():
                zo = cfg.get("zero_optimization", {})
                leaf = k.split(".")[-1]
                if k not in given and leaf not in zo and leaf.replace("stage3_", "") not in zo:
                    set_key(cfg, k, v)
        for (k, _), v in zip(varies, values):
            set_key(cfg, k, v)
        cfg_path = os.path.join(run_dir, "ds_config.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=2)
        metrics, trace, log = (os.path.join(run_dir, n) for n in ("metrics.jsonl", "trace.json", "run.log"))
        args = [zt, "--config", cfg_path, "--model", a.model, "--steps", str(a.steps), "--eval-every", "0",
                "--eval-batches", "1", "--metrics", metrics, "--trace", trace] + flags
        # On the cluster the start record finds the nodes itself; on one host --ranks-per-node says.
        if cluster:
            cluster.shape("off")  # the compute term: this run on the unshaped link
            run_one(cluster.launcher() + args, log, name, cluster.env)
        else:
            run_one(mpi + ["-np", str(a.world_size)] + args + ["--ranks-per-node", str(rpn)], log, name)
        m = zt_metrics.read_metrics(metrics, missing_ok=False)  # the run exited 0: its file must be there
        row = summarize({"name": name, "offload": off, **{k: v for (k, _), v in zip(varies, values)}},
                        m.start, m.of("step"), m.end, a.world_size, link)
        if cluster:
            row["_cluster"] = measure_on_cluster(cluster, row, args, run_dir, name, a.repeats)
        rows.append(row)
    return rows


def step_terms(metrics):
    """(step, compute, inter-node bytes, crossing calls) of one run's records: medians over the steps
    after the first; compute is the step less the time it waited for collectives."""
    m = zt_metrics.read_metrics(metrics, missing_ok=False)
    steps = m.of("step")
    later = steps[1:] if len(steps) > 1 else steps
    step_ms = statistics.median(s["step_ms"] for s in later)
    hidden = (m.end or {}).get("comm_hidden_share") or 0.0
    waited = (1 - hidden) * 1e3 * statistics.median(s["comm_busy_s"] for s in later)
    return (step_ms, max(0.0, step_ms - waited), statistics.median(s["comm_bytes_inter"] for s in later),
            statistics.median(call_counts(s, m.start["world_size"], m.start)[1] for s in later))


def measure_on_cluster(cluster, row, args, run_dir, name, repeats):
    """The row's run again at each link rate, `repeats` times in turns with the unshaped run (the first
    unshaped run is the row's own), so drift on a shared machine falls on every rate alike: medians of
    each rate's steps beside the model's (cluster_link) over the unshaped runs' median base."""
    def run_at(rate, k):
        tag = f"{rate}" + (f"_r{k + 1}" if k else "")
        shaped = list(args)
        shaped[shaped.index("--metrics") + 1] = os.path.join(run_dir, f"metrics_{tag}.jsonl")
        shaped[shaped.index("--trace") + 1] = os.path.join(run_dir, f"trace_{tag}.json")
        run_one(cluster.launcher() + shaped, os.path.join(run_dir, f"run_{tag}.log"),
                f"{name} at {rate}" + (f" (repeat {k + 1})" if k else ""), cluster.env)
        return step_terms(shaped[shaped.index("--metrics") + 1])

    unshaped = [step_terms(args[args.index("--metrics") + 1])]
    at = {rate: [] for rate in cluster.rates}
    for k in range(repeats):
        if k:
            cluster.shape("off")
            unshaped.append(run_at("off", k))
        for rate in cluster.rates:
            cluster.shape(rate)
            at[rate].append(run_at(rate, k))
    cluster.shape("off")
    # The compute term: the same math at every rate, so the median over every run of the row (on two
    # shared cores one run's compute strays by a third; an unshaped run's whole step strays by 2x, its
    # unbounded TCP taking cores from the ranks).
    every = unshaped + [t for rate in cluster.rates for t in at[rate]]
    compute = statistics.median(t[1] for t in every)
    unshaped_ms = statistics.median(u[0] for u in unshaped)
    # The collectives' own CPU time: what the unshaped runs waited for them (the link then takes ~0).
    cpu_ms = statistics.median(u[0] - u[1] for u in unshaped)
    out = []
    for rate in cluster.rates:
        measured_rate, one_way = cluster.measured[rate], cluster.rtt_us[rate] / 2
        step_ms = statistics.median(t[0] for t in at[rate])
        inter = statistics.median(t[2] for t in at[rate])
        crossing = statistics.median(t[3] for t in at[rate])
        bounds = cluster_link.step_bounds_ms(compute, inter, row["nodes"], measured_rate, crossing, one_way, cpu_ms)
        flagged, hidden = cluster_link.judge(step_ms, bounds)
        out.append({"rate": rate, "delay": cluster.delay or "", "measured_rate": measured_rate, "one_way_us": one_way,
                    "inter_bytes": inter, "crossing_calls": crossing, "step_ms": step_ms,
                    "steps_ms": [t[0] for t in at[rate]], "unshaped_ms": unshaped_ms, "compute_ms": compute,
                    "computes_ms": [t[1] for t in every], "comm_cpu_ms": cpu_ms,
                    "link_ms": cluster_link.link_ms(inter, row["nodes"], measured_rate),
                    "latency_ms": cluster_link.latency_ms(crossing, one_way), "overlapped_ms": bounds[0],
                    "modelled_step_ms": bounds[1], "ratio": step_ms / bounds[1], "hidden": hidden, "flag": flagged})
    return out


def report(a, zt, rows):
    share_compute(rows, a.compute_ms)
    title = f"{a.model} ({rows[0]['params'] / 1e6:.2f} M params), N = {a.world_size}, {machine_name(zt)}"
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys and not k.startswith("_")]
    with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    write_markdown(os.path.join(a.out, "sweep.md"), rows, title, a.world_size)
    files = plot(a.out, rows, title)
    print(f"sweep: wrote {a.out}/sweep.csv, sweep.md, " + ", ".join(files))
    with open(os.path.join(a.out, "sweep.md")) as f:
        print(f.read())
    if a.check:
        problems = check_rows(rows, a.world_size)
        problems += [f"{r['name']} at {c['rate']}: measured step {c['step_ms']:.1f} ms outside the model's "
                     f"{c['overlapped_ms']:.1f}-{c['modelled_step_ms']:.1f} by more than 20%"
                     for r in rows for c in r.get("_cluster", []) if c["flag"]]
        for m in problems:
            print("sweep: CHECK FAILED:", m)
        if problems:
            return 1
        print(f"sweep: check ok: {len(rows)} runs agree with the formulas within the padding and the named buffers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
