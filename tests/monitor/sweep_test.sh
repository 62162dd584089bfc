#!/usr/bin/env bash
# scripts/sweep.py on `small` at 2 CPU ranks: every stage runs, sweep.csv / sweep.md / three PNGs
# are written, the CSV has a row per stage with the formula columns, and --check (measured beside
# the ZeRO formulas within the padding and the named buffers, link bytes equal to the predictor) passes;
# as two "nodes" of one rank, every row carries inter-node bytes and a modelled step time; MiCS at 8
# ranks as 2 x 4 passes --check beside flat stage 3, and so does qwZ.
# Usage: sweep_test.sh SWEEP_PY ZEROTRAIN CONFIG MPIRUN
set -uo pipefail
sweep=$1 zt=$2 config=$3 mpirun=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$sweep" --config "$config" --model small --world-size 2 --steps 3 --out "$work/out" \
  --ranks-per-node 1 --zerotrain "$zt" --mpirun "$mpirun" --check > "$work/log" 2>&1
rc=$?
status=0
[ $rc = 0 ] || { cat "$work/log"; echo "FAIL: sweep exited $rc"; status=1; }
for f in sweep.csv sweep.md memory.png comm.png speed.png; do
  [ -s "$work/out/$f" ] || { echo "FAIL: $f missing"; status=1; }
done
/usr/bin/python3 - "$work/out/sweep.csv" <<'PY' || status=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [int(r["stage"]) for r in rows] == [0, 1, 2, 3], [r["stage"] for r in rows]
for r in rows:
    for col in ("formula_model_states_bytes", "model_states_bytes", "formula_volume_bytes",
                "paper_volume_measured_bytes", "tokens_per_s", "comm_hidden_share"):
        assert r[col] not in ("", "None"), (r["name"], col)
for r in rows:
    assert int(r["nodes"]) == 2 and float(r["inter_bytes_per_step"]) > 0, (r["name"], r["inter_bytes_per_step"])
    assert float(r["inter_bytes_per_step"]) == float(r["predicted_inter_bytes_per_step"]), r["name"]
    assert float(r["modelled_step_ms"]) > float(r["compute_ms"]) >= 0, r["name"]
    # One shared compute term for every row, plus the row's own modelled links.
    assert r["shared_compute_ms"] == rows[0]["shared_compute_ms"], r["name"]
    assert abs(float(r["modelled_step_shared_ms"]) - float(r["shared_compute_ms"]) - float(r["modelled_comm_ms"])) < 1e-6
# Every stage trains the same way: the same final loss and parameters.
assert len({r["param_checksum"] for r in rows}) == 1, [r["param_checksum"] for r in rows]
print("sweep_test: csv ok")
PY
grep -q "sweep: check ok: 4 runs" "$work/log" || { echo "FAIL: no check line"; status=1; }
# MiCS swept like any key, at 8 ranks as two nodes of 4 (tiny, the paper's stage 3): --check holds
# (states over s, volume 3Psi + 2Psi/s, the plan's buffers with the split groups', link bytes equal
# to the predictor) and MiCS over a node sends fewer bytes between nodes than flat stage 3.
/usr/bin/python3 "$sweep" --config "$config" --model tiny --world-size 8 --ranks-per-node 4 --stages 3 --steps 3 \
  --vary zero_optimization.mics_shard_size=-1,4 --out "$work/mics" --zerotrain "$zt" --mpirun "$mpirun" --check \
  > "$work/mics.log" 2>&1 || { cat "$work/mics.log"; echo "FAIL: the MiCS sweep exited non-zero"; status=1; }
grep -q "sweep: check ok: 2 runs" "$work/mics.log" || { echo "FAIL: no MiCS check line"; status=1; }
/usr/bin/python3 - "$work/mics/sweep.csv" <<'PY' || status=1
import csv, sys
flat, mics = list(csv.DictReader(open(sys.argv[1])))
assert int(mics["mics_shard_size"]) == 4 and int(flat["mics_shard_size"]) == 0, (flat["name"], mics["name"])
assert float(mics["inter_bytes_per_step"]) < float(flat["inter_bytes_per_step"]), (mics["inter_bytes_per_step"],
                                                                               flat["inter_bytes_per_step"])
# With the same compute, MiCS over a node models a faster step than flat stage 3 (fewer, smaller
# inter-node calls), and the shared term is the median of the two runs' measured compute.
assert float(mics["modelled_step_shared_ms"]) < float(flat["modelled_step_shared_ms"])
median = (float(flat["compute_ms"]) + float(mics["compute_ms"])) / 2
assert abs(float(flat["shared_compute_ms"]) - median) < 1e-6, (flat["shared_compute_ms"], median)
print("sweep_test: MiCS row ok")
PY
# qwZ swept like any key (tiny, 8 ranks as 2 x 4, the paper's stage 3): --check holds with both
# gathers at one byte an element plus the scales, link bytes equal to the predictor, and the
# quantized run sends fewer bytes between nodes.
/usr/bin/python3 "$sweep" --config "$config" --model tiny --world-size 8 --ranks-per-node 4 --stages 3 --steps 3 \
  --vary zero_optimization.zero_quantized_weights=false,true --out "$work/qwz" --zerotrain "$zt" --mpirun "$mpirun" --check \
  > "$work/qwz.log" 2>&1 || { cat "$work/qwz.log"; echo "FAIL: the qwZ sweep exited non-zero"; status=1; }
grep -q "sweep: check ok: 2 runs" "$work/qwz.log" || { echo "FAIL: no qwZ check line"; status=1; }
/usr/bin/python3 - "$work/qwz/sweep.csv" <<'PY' || status=1
import csv, sys
exact, qwz = list(csv.DictReader(open(sys.argv[1])))
assert qwz["quantized_weights"] == "True" and exact["quantized_weights"] == "False", (exact["name"], qwz["name"])
assert float(qwz["inter_bytes_per_step"]) < float(exact["inter_bytes_per_step"])
assert float(qwz["all_gather_bytes_per_step"]) < 0.3 * float(exact["all_gather_bytes_per_step"])
assert float(qwz["quantize_ms_per_step"]) > 0 and float(qwz["dequantize_ms_per_step"]) > 0, qwz["name"]
assert exact["quantize_ms_per_step"] in ("", "None"), exact["quantize_ms_per_step"]
print("sweep_test: qwZ row ok")
PY
# qgZ likewise: --check holds with the reduce-scatter's Psi as two int4 all-to-alls (and the 1-D
# tensors exact), link bytes equal to the predictor; fewer bytes cross nodes; the error is tabled.
/usr/bin/python3 "$sweep" --config "$config" --model tiny --world-size 8 --ranks-per-node 4 --stages 3 --steps 3 \
  --vary zero_optimization.zero_quantized_gradients=false,true --out "$work/qgz" --zerotrain "$zt" --mpirun "$mpirun" --check \
  > "$work/qgz.log" 2>&1 || { cat "$work/qgz.log"; echo "FAIL: the qgZ sweep exited non-zero"; status=1; }
grep -q "sweep: check ok: 2 runs" "$work/qgz.log" || { echo "FAIL: no qgZ check line"; status=1; }
grep -q "Quantized gradient reductions" "$work/qgz/sweep.md" || { echo "FAIL: no qgZ table"; status=1; }
[ -s "$work/qgz/loss.png" ] || { echo "FAIL: no loss curves (loss.png)"; status=1; }
/usr/bin/python3 - "$work/qgz/sweep.csv" <<'PY' || status=1
import csv, sys
exact, qgz = list(csv.DictReader(open(sys.argv[1])))
assert qgz["quantized_gradients"] == "True" and exact["quantized_gradients"] == "False", (exact["name"], qgz["name"])
assert float(qgz["inter_bytes_per_step"]) < float(exact["inter_bytes_per_step"])
assert float(qgz["all_to_all_bytes_per_step"]) > 0 and float(exact["all_to_all_bytes_per_step"]) == 0
assert float(qgz["reduce_scatter_bytes_per_step"]) < 0.1 * float(exact["reduce_scatter_bytes_per_step"])
assert 0 < float(qgz["qgz_max_rel_err"]) <= float(qgz["qgz_bound_rel_err"]), qgz["qgz_max_rel_err"]
print("sweep_test: qgZ row ok")
PY
[ $status = 0 ] && echo "sweep_test: ok"
# A flag the sweep passes to every run, given again after `--`: refused before any run, naming it.
/usr/bin/python3 "$sweep" --config "$config" --model small --world-size 2 --steps 3 --out "$work/owned" \
  --zerotrain "$zt" --mpirun "$mpirun" -- --eval-batches=2 > "$work/owned.log" 2>&1
rc=$?
if [ $rc = 0 ] || ! grep -q "'--eval-batches=2' after '--': the sweep passes --eval-batches to every run itself" \
  "$work/owned.log" || [ -e "$work/owned/runs" ]; then
  cat "$work/owned.log"; echo "FAIL: a sweep-owned flag after -- was not refused up front (rc $rc)"; status=1
fi
exit $status
