#!/usr/bin/env python3
"""The sweep's cluster-mode model (scripts/cluster_link.py) by hand-computed cases: the link's time for
a step's bytes, one one-way trip per crossing call, the two bounds (collectives beside compute, and
waited for) and the judgement of a measured step against them; the rate and delay units.
Usage: cluster_link_test.py SCRIPTS_DIR"""
import sys

sys.path.insert(0, sys.argv[1])
import cluster_link as cl  # noqa: E402

FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def near(a, b):
    return abs(a - b) < 1e-9 * max(1.0, abs(b))


# 100 MB of the whole job's inter-node bytes over 2 nodes' links at 50 MB/s: 1 s on each link.
check(near(cl.link_ms(100e6, 2, 50e6), 1000.0), "link time: bytes / nodes / rate")
check(near(cl.latency_ms(17, 2000.0), 34.0), "latency: 17 crossing calls at 2000 us one way = 34 ms")
low, high = cl.step_bounds_ms(50.0, 10e6, 2, 100e6, 10, 1000.0)  # link 50 ms, latency 10 ms
check(near(low, 60.0) and near(high, 110.0), "bounds: max(compute, comm) = 60, compute + comm = 110 (%s, %s)" % (low, high))
low, high = cl.step_bounds_ms(80.0, 2e6, 2, 100e6)  # link 10 ms, compute dominates when overlapped
check(near(low, 80.0) and near(high, 90.0), "bounds with compute above the link: 80 and 90 (%s, %s)" % (low, high))
low, high = cl.step_bounds_ms(50.0, 10e6, 2, 100e6, 10, 1000.0, cpu_ms=90.0)  # CPU outlasts link + latency (60)
check(near(low, 90.0) and near(high, 140.0), "bounds with the collectives' CPU time above the link's: 90 and 140 (%s, %s)"
      % (low, high))
check(cl.step_bounds_ms(50.0, 10e6, 2, 100e6, 10, 1000.0, cpu_ms=40.0) == (60.0, 110.0),
      "the collectives' CPU time below the link's changes nothing")
check(cl.judge(85.0, (60.0, 110.0)) == (False, 0.5), "a step halfway between the bounds: not flagged, half hidden")
check(cl.judge(110.0 * 1.2, (60.0, 110.0))[0] is False and cl.judge(110.0 * 1.21, (60.0, 110.0))[0] is True,
      "flagged above 1.2x the no-overlap bound, not at it")
check(cl.judge(50.0, (60.0, 110.0)) == (False, 1.0) and cl.judge(60.0 / 1.21, (60.0, 110.0))[0] is True,
      "below the full-overlap bound: hidden clamps at 100%; flagged below it / 1.2")
check(cl.judge(130.0, (60.0, 110.0))[1] == 0.0, "above the no-overlap bound: nothing hidden")
check(cl.rate_bits("100mbit") == 1e8 and cl.rate_bits("1.5gbit") == 1.5e9, "tc rates in bits per second")
try:
    cl.rate_bits("100")
    check(False, "a rate without a unit is refused")
except ValueError as e:
    check("tc rate" in str(e), "a rate without a unit is refused (%s)" % e)
check(cl.delay_ok("2ms") and cl.delay_ok("500us") and cl.delay_ok("0.5s") and not cl.delay_ok("2")
      and not cl.delay_ok("ms") and not cl.delay_ok("2 ms"), "delays: a number and us, ms or s")
print("%d failure(s)" % len(FAILURES))
sys.exit(1 if FAILURES else 0)
