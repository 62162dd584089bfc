"""The emulated cluster's link, measured: the rate one node's TCP stream reaches another (the rate
the step's inter-node bytes travel at) and the α–β model of a step at another rate.

measure_rate(cluster_sh, env) runs a receiver in node 2 and a sender in node 1 (scripts/cluster.sh
exec) and times a transfer of about one second at the shaped rate, after a first 64 KiB that opens
the connection and TCP's window; bytes per second of payload.

step_bounds_ms(...) is the sweep's cluster-mode model, α–β: the compute (the step less the time it
waited for collectives), the step's inter-node bytes (the whole job's comm_bytes_inter, split evenly
over the nodes' own links, which send in parallel) at the link's rate measured with both nodes
sending, as an exchange does, and one one-way trip (ping's round trip / 2) per call that crosses
nodes, or the collectives' own CPU time where that is longer (what they waited for on the unshaped
link: on shared cores, eight ranks' folding and copying outlast a 1 Gbit/s link). Two bounds: no
overlap (compute + link + latency: a step whose collectives all wait) and full overlap (the larger
of compute and link + latency: every collective beside compute); judge() flags a measured step more
than 20% outside them and says how much of the overlappable time the run hid."""
import subprocess

RECEIVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 20)
    if not b: break
    n += len(b)
c.sendall(b"k"); c.close(); print(n, flush=True)
"""

SENDER = r"""
import socket, sys, time
host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = socket.create_connection((host, port)); chunk = b"\0" * (1 << 20)
c.sendall(chunk[:65536])  # the connection and the first window, not timed
t0 = time.perf_counter(); left = total
while left > 0:
    n = min(left, len(chunk)); c.sendall(chunk[:n]); left -= n
c.shutdown(socket.SHUT_WR); c.recv(1); print(time.perf_counter() - t0, flush=True)
"""


def rate_bits(rate):
    """A tc rate (1gbit, 100mbit, 500kbit, 64000bit) in bits per second; ValueError otherwise."""
    for unit, factor in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if rate.endswith(unit) and rate[:-len(unit)].replace(".", "", 1).isdigit():
            return float(rate[:-len(unit)]) * factor
    raise ValueError(f"'{rate}' is not a tc rate (e.g. 1gbit, 100mbit)")


def _receiver(cluster_sh, env, node, port):
    rx = subprocess.Popen([cluster_sh, "exec", str(node), "python3", "-c", RECEIVER, str(port)], env=env,
                          stdout=subprocess.PIPE, text=True)
    if rx.stdout.readline().strip() != "ready":
        rx.kill()
        raise RuntimeError(f"cluster_link: the receiver in node {node} did not start")
    return rx


def measure_rate(cluster_sh, env, seconds_at_rate=1.0, rate_hint_bps=None, port=47111, both_ways=False):
    """Payload bytes per second of a TCP stream from node 1 to node 2, about `seconds_at_rate` long;
    both_ways: node 2 streams to node 1 at the same time (what an exchange between nodes does), and
    the slower direction's rate is returned: each node's link then carries its data and the other
    stream's acknowledgements in one queue."""
    total = max(int((rate_hint_bps or 1e9) / 8 * seconds_at_rate), 4 << 20)
    pairs = [(1, 2, port)] + ([(2, 1, port + 1)] if both_ways else [])
    hosts = {n: subprocess.run([cluster_sh, "exec", str(n), "hostname"], env=env, stdout=subprocess.PIPE, text=True,
                               check=True).stdout.strip() for n in (1, 2)}
    receivers, senders = [], []
    try:
        for src, dst, p in pairs:  # every receiver listens before any sender starts: the streams overlap
            receivers.append(_receiver(cluster_sh, env, dst, p))
        for src, dst, p in pairs:
            senders.append(subprocess.Popen([cluster_sh, "exec", str(src), "python3", "-c", SENDER, hosts[dst], str(p),
                                             str(total)], env=env, stdout=subprocess.PIPE, text=True))
        rates = []
        for tx, rx in zip(senders, receivers):
            out, _ = tx.communicate(timeout=300)
            if tx.returncode != 0:
                raise RuntimeError("cluster_link: the sender failed")
            got = int(rx.stdout.readline().strip())
            if got != total + 65536:
                raise RuntimeError(f"cluster_link: received {got} of {total + 65536} bytes")
            rates.append(total / float(out.strip()))
    finally:
        for p in senders + receivers:
            if p.poll() is None:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
    return min(rates)


def delay_ok(delay):
    """Whether `delay` is a number with a unit cluster.sh takes (us, ms, s)."""
    for unit in ("us", "ms", "s"):
        if delay.endswith(unit):
            return delay[:-len(unit)].replace(".", "", 1).isdigit()
    return False


def measure_rtt_us(cluster_sh, env, count=20):
    """The mean round trip between nodes 1 and 2 in microseconds (ping, `count` echoes 5 ms apart)."""
    host = subprocess.run([cluster_sh, "exec", "2", "hostname"], env=env, stdout=subprocess.PIPE, text=True,
                          check=True).stdout.strip()
    # -U: user space to user space (by default ping stamps a reply on arrival, before the delay line)
    out = subprocess.run([cluster_sh, "exec", "1", "ping", "-U", "-c", str(count), "-i", "0.005", "-q", host], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    for line in out.splitlines():
        if line.startswith("rtt") or line.startswith("round-trip"):
            return 1000 * float(line.split("=")[1].split("/")[1])
    raise RuntimeError("cluster_link: ping from node 1 to node 2 failed: " + out.strip()[-200:])


def step_bounds_ms(compute_ms, inter_bytes, nodes, rate, crossing_calls=0, one_way_us=0.0, cpu_ms=0.0):
    """(full overlap, no overlap): the step at `rate` (bytes/s) with every collective beside compute,
    and with every collective waited for. The collectives take the longer of the link's time (bytes
    and latency) and their own CPU time `cpu_ms` (packing, folding, the shared-memory level, the
    TCP stack: what they waited for on the unshaped link), since the levels overlap the two."""
    comm = max(link_ms(inter_bytes, nodes, rate) + latency_ms(crossing_calls, one_way_us), cpu_ms)
    return max(compute_ms, comm), compute_ms + comm


def judge(step_ms, bounds, slack=0.20):
    """(flagged, hidden): whether `step_ms` lies more than `slack` outside the bounds, and the share of
    the overlappable time (no overlap less full overlap) the step hid, clamped to [0, 1]."""
    low, high = bounds
    flagged = step_ms > high * (1 + slack) or step_ms < low / (1 + slack)
    hidden = 1.0 if high <= low else min(1.0, max(0.0, (high - step_ms) / (high - low)))
    return flagged, hidden


def latency_ms(crossing_calls, one_way_us):
    """Milliseconds a step's crossing calls wait on the link's latency: one one-way trip each."""
    return crossing_calls * one_way_us / 1e3


def link_ms(inter_bytes, nodes, rate):
    """Milliseconds a step's inter-node bytes occupy each node's link at `rate` (bytes/s)."""
    return 1e3 * inter_bytes / max(1, nodes) / rate


if __name__ == "__main__":  # scripts/cluster.sh must be up with 2 nodes; argument: the shaped tc rate
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    hint = rate_bits(sys.argv[1]) if len(sys.argv) > 1 else None
    for both in (False, True):
        r = measure_rate(os.path.join(here, "cluster.sh"), dict(os.environ), rate_hint_bps=hint, both_ways=both)
        print(f"{r / 1e6:.1f} MB/s ({8 * r / 1e9:.3f} Gb/s) of TCP payload " +
              ("each way, both nodes sending at once" if both else "from node 1 to node 2"))
