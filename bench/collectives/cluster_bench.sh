#!/usr/bin/env bash
# bench_collectives across 2 emulated nodes (scripts/cluster.sh, root): the link shaped to RATE, its
# TCP rate measured in the same run with both nodes sending at once, as an exchange does
# (scripts/cluster_link.py), then each op of ours beside the MPI library's own and beside the time
# the link needs for the op's inter-node bytes at that rate.
#   bench/collectives/cluster_bench.sh [RATE=1gbit] [RANKS_PER_NODE=2] [bench_collectives flags...]
# ZT_LINK_DELAY (e.g. 1ms) adds that latency each way (cluster.sh shape RATE DELAY); the ping between
# the nodes is printed beside the rate.
# ZT_BUILD_DIR picks the build (default build/); the cluster is this script's own and is removed after.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rate=${1:-1gbit}
per_node=${2:-2}
shift $(( $# >= 2 ? 2 : $# ))
bench="${ZT_BUILD_DIR:-$root/build}/bench/collectives/bench_collectives"
[ -x "$bench" ] || { echo "cluster_bench: $bench is not built (run scripts/build.sh)"; exit 2; }
export ZT_CLUSTER="ztbench$$" ZT_CLUSTER_NET="10.$((200 + $$ % 50)).$(($$ % 250))"
cluster="$root/scripts/cluster.sh"
"$cluster" check
trap '"$cluster" down >/dev/null' EXIT
"$cluster" up 2
"$cluster" shape "$rate" ${ZT_LINK_DELAY:+"$ZT_LINK_DELAY"}
measured=$(cd "$root/scripts" && python3 -c "
import os, cluster_link
print(int(cluster_link.measure_rate('$cluster', dict(os.environ), rate_hint_bps=cluster_link.rate_bits('$rate'), both_ways=True)))")
one_way=$(cd "$root/scripts" && python3 -c "
import os, cluster_link
print(cluster_link.measure_rtt_us('$cluster', dict(os.environ)) / 2)")
echo "# the link at $rate${ZT_LINK_DELAY:+ + $ZT_LINK_DELAY each way}: $(awk "BEGIN{printf \"%.1f\", $measured / 1e6}") MB/s of TCP payload each way, both nodes sending at once; one-way $(printf %.0f "$one_way") us (ping's round trip / 2)"
"$cluster" run -n "$per_node" -- "$bench" --link-rate "$measured" --link-latency-us "$one_way" "$@"
