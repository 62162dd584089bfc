"""scripts/gpu_check.sh against the build it runs in (a unit test, no GPU needed):
- the GPU tests it builds (GPU_TEST_TARGETS) are exactly the executables of the build's
  gpu-labelled CTest tests, which its gpu_tests stage runs (ctest -L gpu): none "Not Run";
- every other binary its stages run (STAGE_TARGETS) is a target of this build;
- its dry run reaches every stage, in the planned order, each reported NO-DEVICE, with the GPU
  tests, the attention bench, the engine at world 1 and the multi-rank runs inside the first call's
  budget and before zerotrain vs the PyTorch peer.
usage: check_gpu_check.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

build, src = sys.argv[1], sys.argv[2]
script = os.path.join(src, "scripts", "gpu_check.sh")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


listing = subprocess.run(["bash", script, "--list-targets"], capture_output=True, text=True, check=True).stdout
fields = dict(line.split(": ", 1) for line in listing.strip().splitlines())
gpu_targets = fields["gpu_test_targets"].split()
stage_targets = fields["stage_targets"].split()
stages = fields["stages"].split()

shown = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1", "-L", "gpu"],
                       capture_output=True, text=True, check=True).stdout
tests = json.loads(shown)["tests"]
exe_of = {t["name"]: os.path.basename(t["command"][0]) for t in tests if t.get("command")}
print(f"gpu-labelled tests ({len(exe_of)}): " + ", ".join(f"{n} ({e})" for n, e in sorted(exe_of.items())))
print(f"gpu_check.sh builds ({len(gpu_targets)}): {' '.join(gpu_targets)}")
run_exes = set(exe_of.values())
for e in sorted(run_exes - set(gpu_targets)):
    fail(f"gpu_tests runs {e} (a gpu-labelled test) but the build stage does not build it")
for e in sorted(set(gpu_targets) - run_exes):
    fail(f"the build stage builds {e}, which no gpu-labelled test runs (stale name?)")

with open(os.path.join(build, "CMakeFiles", "TargetDirectories.txt")) as f:
    build_targets = {re.sub(r"\.dir$", "", os.path.basename(line.strip())) for line in f if line.strip()}
for t in stage_targets:
    if t not in build_targets:
        fail(f"gpu_check.sh's stages run {t}, which is not a target of this build")

with tempfile.TemporaryDirectory() as out:
    dry = subprocess.run(["bash", script, "--dry-run"], capture_output=True, text=True,
                         env=dict(os.environ, OUT=out, ZT_GPU_CHECK_BUDGET="480"), timeout=60)
verdicts = [l.split() for l in dry.stdout.splitlines() if l.startswith("gpu_check: ")]
names = [v[1] for v in verdicts]
print("dry run: " + " ".join(names))
if dry.returncode != 0:
    fail(f"the dry run exited {dry.returncode}: {dry.stderr[-500:]}")
if names != stages:
    fail(f"the dry run reached {names}, the plan is {stages}")
for v in verdicts:
    if v[2] != "NO-DEVICE":
        fail(f"dry run: stage {v[1]} reported {v[2]}, not NO-DEVICE")
call_of = {}
for line in dry.stdout.splitlines():
    m = re.match(r"gpu_check: (\S+) .*dry run: call (\d)", line)
    if m:
        call_of[m.group(1)] = int(m.group(2))
for s in ("build", "gpu_tests", "attention", "engine", "multirank"):
    if call_of.get(s) != 1:
        fail(f"stage {s} is not planned in the first call ({call_of.get(s)})")
order = ["gpu_tests", "attention", "engine", "multirank", "zt_vs_peer"]
if all(s in names for s in order) and [names.index(s) for s in order] != sorted(names.index(s) for s in order):
    fail(f"the stages do not run in the order {order}")
plan = re.search(r"plan: call 1 caps (\d+) s \+ (\d+) s for the table, budget (\d+) s", dry.stdout)
if not plan:
    fail("the dry run printed no plan line")
elif int(plan.group(1)) + int(plan.group(2)) > int(plan.group(3)):
    fail(f"call 1's caps ({plan.group(1)} s + {plan.group(2)} s) exceed its budget ({plan.group(3)} s)")
else:
    print(plan.group(0))

if failures:
    sys.exit(1)
print("gpu_check.sh: target lists match the build; the dry run reaches every stage in order")
