#!/usr/bin/env bash
# The emulated cluster: N nodes on this machine, each a network namespace with its own hostname (a
# UTS namespace), joined by veth links to a bridge in a "switch" namespace of their own, so that a
# real Open MPI job runs across them: shared memory between the ranks of one node, TCP over the veth
# between nodes, every inter-node byte on the nodes' interface counters. A rate (tc tbf on each
# node's egress) shapes the links, and a delay line adds latency: this kernel has no netem, so the
# packets each node receives on its link go through an iptables NFQUEUE rule to scripts/delay_line.cpp,
# which holds each one the given time (built on first use; its own floor of some tens of
# microseconds shows in the ping that `shape` prints). Held on arrival, not on the way out: a packet
# held in its sender still counts against the socket's TCP small-queue budget, which capped a
# 1 Gbit/s link with 2 ms added at 63 MB/s. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN).
#
#   cluster.sh check                  can this machine make the cluster? (exit 0; else one line, exit 77)
#   cluster.sh up N                   N nodes (ends a previous cluster of this name first: recovers a crash)
#   cluster.sh shape RATE [DELAY]     each node's link at RATE (tc units: 1gbit, 100mbit), every packet
#                                     held DELAY more on its way in (us, ms: 500us, 2ms; a round trip
#                                     gains twice it); prints the ping between nodes 1 and 2; `shape off`
#   cluster.sh run [-n RANKS_PER_NODE] [-x VAR]... [--mca K V]... [--map-by POLICY] -- CMD ARGS...
#                                     mpirun inside node 1 across every node (ranks node by node
#                                     unless --map-by says otherwise);
#                                     the launcher's link check is set to end a job whose node is cut
#                                     off within ZT_COMM_TIMEOUT_S + 30 s (docs/across-nodes.md)
#   cluster.sh status [--json]        nodes, addresses, shaping, interface counters, processes
#   cluster.sh counters               {"bytes_sent": total, "nodes": [{"tx":..,"rx":..}, ...]} (JSON)
#   cluster.sh link NODE down|up      cut or restore node NODE's link (a fault: the job is not told)
#   cluster.sh kill NODE              SIGKILL every rank on node NODE (not its daemon)
#   cluster.sh exec NODE CMD...       a command inside node NODE
#   cluster.sh down                   ends what the cluster runs (by pid), removes every namespace, link,
#                                     hosts file, Open MPI session folder and the state folder
#
# ZT_CLUSTER (default "zt") names the cluster: namespaces zt-n1.. and zt-sw, hostnames zt-node1..;
# ZT_CLUSTER_NET (default 10.77.0) is its private /24, used only inside these namespaces.
set -euo pipefail

NAME=${ZT_CLUSTER:-zt}
NET=${ZT_CLUSTER_NET:-10.77.0}
STATE=${ZT_CLUSTER_DIR:-/tmp/zt-cluster-$NAME}
SW="$NAME-sw"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "cluster: $*" >&2; exit 2; }
node_ns() { echo "$NAME-n$1"; }
node_host() { echo "$NAME-node$1"; }
nodes() { cat "$STATE/nodes" 2>/dev/null || echo 0; }
holder() { cat "$STATE/holder.$1" 2>/dev/null || die "node $1 is not up (run: cluster.sh up N)"; }
need_up() { [ -f "$STATE/nodes" ] || die "no cluster '$NAME' is up (run: cluster.sh up N)"; }
check_node() {
  [[ "$1" =~ ^[0-9]+$ ]] && (( $1 >= 1 && $1 <= $(nodes) )) || die "node '$1' is not one of 1..$(nodes)"
}

# Whether this process may make namespaces and links: one line and exit 77 (a test's skip) if not.
cmd_check() {
  local why=""
  if [ "$(id -u)" -ne 0 ]; then
    why="needs root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN); run as root"
  else
    for tool in ip tc nsenter unshare mpirun; do
      command -v "$tool" >/dev/null || { why="needs '$tool' (run scripts/setup.sh)"; break; }
    done
    if [ -z "$why" ] && ! err=$(unshare --net --uts true 2>&1); then
      why="cannot make namespaces here ($err); run as root outside a restricted container"
    fi
  fi
  if [ -n "$why" ]; then
    echo "cluster: $why"
    exit 77
  fi
}

# Ends what runs in each node (ranks, daemons, mpirun) by pid, then the namespaces.
cmd_down() {
  local n i ns pids
  n=$(nodes)
  [ -d "$STATE" ] || n=0
  for ((i = 1; i <= n; i++)); do
    ns=$(node_ns "$i")
    ip netns list 2>/dev/null | grep -qw "^$ns" || continue
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null || true
  done
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    local left=""
    for ((i = 1; i <= n; i++)); do left+=$(ip netns pids "$(node_ns "$i")" 2>/dev/null || true); done
    [ -z "$left" ] && break
    sleep 0.2
  done
  for ((i = 1; i <= n; i++)); do
    ns=$(node_ns "$i")
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
    rm -rf /tmp/ompi."$(node_host "$i")".* /dev/shm/vader_segment."$(node_host "$i")".* 2>/dev/null || true
  done
  ip netns del "$SW" 2>/dev/null || true
  rm -rf "$STATE"
}

cmd_up() {
  local n=${1:-}
  [[ "$n" =~ ^[0-9]+$ ]] && (( n >= 1 && n <= 250 )) || die "up needs a node count 1..250, got '${n}'"
  cmd_check
  # A previous cluster of this name (a crashed run): end it first. Its node count is in its state;
  # without state, look for namespaces of this name.
  if [ ! -f "$STATE/nodes" ]; then
    local found
    found=$(ip netns list 2>/dev/null | awk '{print $1}' | sed -n "s/^$NAME-n\([0-9]*\)$/\1/p" | sort -n | tail -1)
    [ -n "$found" ] && { mkdir -p "$STATE"; echo "$found" > "$STATE/nodes"; }
  fi
  cmd_down
  mkdir -p "$STATE"
  echo "$n" > "$STATE/nodes"
  ip netns add "$SW"
  ip -n "$SW" link add br0 type bridge
  ip -n "$SW" link set br0 up
  local hosts="127.0.0.1 localhost"$'\n'
  for ((i = 1; i <= n; i++)); do hosts+="$NET.$i $(node_host "$i")"$'\n'; done
  for ((i = 1; i <= n; i++)); do
    local ns
    ns=$(node_ns "$i")
    ip netns add "$ns"
    ip -n "$SW" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "$SW" link set "v$i" master br0 up
    ip -n "$ns" addr add "$NET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    mkdir -p "/etc/netns/$ns"
    printf '%s' "$hosts" > "/etc/netns/$ns/hosts"
    echo "$(node_host "$i")" > "/etc/netns/$ns/hostname"
    # The holder: a process in the node's network namespace, its own UTS namespace (the hostname)
    # and the mount namespace `ip netns exec` made (/etc/hosts is the node's). Commands enter all three.
    ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $(node_host "$i") && exec sleep infinity" \
      </dev/null >/dev/null 2>&1 &
    echo $! > "$STATE/holder.$i"
  done
  # ORTE's rsh launcher calls the agent as it would call ssh: AGENT [options] HOST COMMAND WORDS.
  cat > "$STATE/agent" <<AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
i=\${host##*node}
exec nsenter -t "\$(cat "$STATE/holder.\$i")" -m -u -n /bin/sh -c "\$*"
AGENT
  chmod +x "$STATE/agent"
  for ((i = 1; i <= n; i++)); do  # each holder has set its hostname before anything enters it
    for _ in $(seq 50); do
      [ "$(nsenter -t "$(holder "$i")" -u hostname 2>/dev/null)" = "$(node_host "$i")" ] && break
      sleep 0.02
    done
  done
  echo "cluster: $n node(s) up: $(for ((i = 1; i <= n; i++)); do printf '%s=%s.%d ' "$(node_host "$i")" "$NET" "$i"; done)"
}

# A number with a unit, scaled to an integer: scaled WHAT VALUE EXAMPLES UNIT=FACTOR...; dies naming
# WHAT, the value and the units otherwise.
scaled() {
  local what=$1 v=$2 eg=$3 num uf
  shift 3
  num=$(echo "$v" | sed -n 's/^\([0-9][0-9.]*\).*$/\1/p')
  [ -n "$num" ] || die "shape: $what '$v' is not a number with a unit (e.g. $eg)"
  for uf in "$@"; do
    [ "${v#"$num"}" = "${uf%%=*}" ] && { awk "BEGIN{print int($num*${uf#*=})}"; return; }
  done
  die "shape: $what '$v' needs a unit: ${*%%=*} (e.g. $eg)"
}

# Bytes per second from a tc rate (tbf's own units: bit, kbit, mbit, gbit; bps = bytes/s).
rate_bytes() { scaled rate "$1" "1gbit, 100mbit" bit=0.125 kbit=125 mbit=125000 gbit=125000000 bps=1; }

# Microseconds from a delay (us, ms, s).
delay_us() { scaled delay "$1" "500us, 2ms" us=1 ms=1000 s=1000000; }

# The delay line off: each node's rule removed first (new packets pass straight), then its daemon
# ended by pid (it lets the packets it holds go before it exits).
delay_off() {
  local n i pid
  n=$(nodes)
  for ((i = 1; i <= n; i++)); do
    [ -f "$STATE/delay.$i" ] || continue
    nsenter -t "$(holder "$i")" -n iptables-legacy -w -F INPUT 2>/dev/null || true
    pid=$(cat "$STATE/delay.$i")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    rm -f "$STATE/delay.$i" "$STATE/delay.$i.ready"
  done
}

# Every packet a node receives on its link held $1 microseconds by a delay line in that node.
delay_on() {
  local us=$1 n i
  command -v iptables-legacy >/dev/null || die "shape: a delay needs iptables-legacy (the package iptables: run scripts/setup.sh)"
  command -v ping >/dev/null || die "shape: a delay needs ping (the package iputils-ping: run scripts/setup.sh)"
  if [ ! -x "$STATE/delay_line" ] || [ "$here/delay_line.cpp" -nt "$STATE/delay_line" ]; then
    local flags err
    flags=$(pkg-config --cflags --libs libnetfilter_queue 2>/dev/null) ||
      die "shape: a delay needs libnetfilter-queue-dev to build scripts/delay_line.cpp (run scripts/setup.sh)"
    err=$(g++ -O2 -std=c++17 -Wall -o "$STATE/delay_line" "$here/delay_line.cpp" $flags 2>&1) ||
      die "shape: scripts/delay_line.cpp does not build: $(echo "$err" | grep -m1 error)"
  fi
  n=$(nodes)
  for ((i = 1; i <= n; i++)); do
    nsenter -t "$(holder "$i")" -n "$STATE/delay_line" --queue 0 --delay-us "$us" --ready "$STATE/delay.$i.ready" \
      </dev/null >/dev/null 2>"$STATE/delay.$i.log" &
    echo $! > "$STATE/delay.$i"
  done
  for ((i = 1; i <= n; i++)); do
    for _ in $(seq 100); do [ -f "$STATE/delay.$i.ready" ] && break; sleep 0.02; done
    [ -f "$STATE/delay.$i.ready" ] || { delay_off; die "shape: the delay line of node $i did not start: $(cat "$STATE/delay.$i.log")"; }
    # --queue-bypass: packets pass undelayed if the daemon is gone, rather than being dropped.
    nsenter -t "$(holder "$i")" -n iptables-legacy -w -A INPUT -i eth0 -j NFQUEUE --queue-num 0 --queue-bypass ||
      { delay_off; die "shape: cannot add the NFQUEUE rule in node $i (iptables-legacy; does the kernel have NFQUEUE?)"; }
  done
}

# The mean round trip between nodes 1 and 2 in microseconds (ping, 20 echoes; -U: from user space
# to user space, since ping's default stamps a reply when it reaches the node, before the delay line).
rtt_us() {
  nsenter -t "$(holder 1)" -n ping -U -c 20 -i 0.005 -q "$NET.2" 2>/dev/null |
    awk -F'/' '/^rtt/ {print int($5 * 1000)}'
}

cmd_shape() {
  need_up
  local rate=${1:-} delay=${2:-} n i ns us=""
  [ -n "$rate" ] || die "shape needs RATE [DELAY] (e.g. shape 1gbit, shape 100mbit 2ms) or 'off'"
  [ $# -le 2 ] || die "shape takes RATE [DELAY], got $# words: $*"
  [ "$rate" = off ] && [ -n "$delay" ] && die "shape off takes no delay (it removes the rate and the delay)"
  n=$(nodes)
  local bps burst
  [ "$rate" = off ] || bps=$(rate_bytes "$rate")
  [ -n "$delay" ] && us=$(delay_us "$delay")
  delay_off
  for ((i = 1; i <= n; i++)); do
    ns=$(node_ns "$i")
    tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
    [ "$rate" = off ] && continue
    # Burst: 4 ms of the rate (the timer's granularity), at least one 64 KiB offload segment.
    burst=$(( bps / 250 > 65536 + 1514 ? bps / 250 : 65536 + 1514 ))
    tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 200ms
  done
  rm -f "$STATE/shape"
  [ "$rate" = off ] && { echo "cluster: links unshaped, no delay"; return; }
  [ -n "$us" ] && awk "BEGIN{exit !($us > 0)}" && delay_on "$us"
  echo "$rate${us:+ $delay}" > "$STATE/shape"
  local said="cluster: each node sends at $rate"
  [ -n "$us" ] && said+=", every packet held $delay more on its way in"
  (( n >= 2 )) && said+=" (ping node 1 -> 2: round trip $(rtt_us) us)"
  echo "$said"
}

cmd_run() {
  need_up
  local rpn=1 n i
  local -a xs=() mca=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -n) rpn=${2:?}; shift 2 ;;
      -x) xs+=(-x "${2:?}"); shift 2 ;;
      --mca) mca+=(--mca "${2:?}" "${3:?}"); shift 3 ;;
      --map-by) mca+=(--map-by "${2:?}"); shift 2 ;;
      --) shift; break ;;
      *) die "run: unknown option '$1' (run [-n RANKS_PER_NODE] [-x VAR] [--mca K V] [--map-by POLICY] -- CMD ARGS...)" ;;
    esac
  done
  [ $# -gt 0 ] || die "run needs a command after -- (e.g. run -n 2 -- build/runtime/cli/zerotrain --steps 5)"
  [[ "$rpn" =~ ^[0-9]+$ ]] && (( rpn >= 1 )) || die "run: -n needs ranks per node >= 1, got '$rpn'"
  n=$(nodes)
  local hosts=""
  for ((i = 1; i <= n; i++)); do hosts+="${hosts:+,}$(node_host "$i"):$rpn"; done
  local root_flag=()
  [ "$(id -u)" -eq 0 ] && root_flag=(--allow-run-as-root)
  # The launcher's daemons notice a silent link by TCP keepalive (idle 5 s, then 3 missed probes),
  # timed to land a few seconds after zerotrain's watchdog has named the lost node; unless given.
  local keep=()
  if [[ " ${mca[*]:-} " != *" oob_tcp_keepalive"* ]]; then
    local t=${ZT_COMM_TIMEOUT_S:-300}
    local intvl
    intvl=$(awk "BEGIN{v=($t+5)/3; print (v==int(v)) ? v : int(v)+1}")
    keep=(--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl "$intvl" --mca oob_tcp_keepalive_probes 3)
  fi
  [ -n "${ZT_COMM_TIMEOUT_S:-}" ] && xs+=(-x ZT_COMM_TIMEOUT_S)
  # Messages up to 8 MiB go eagerly over TCP: a shaped link's queue holds up to 200 ms of data, and
  # a rendezvous handshake (Open MPI's default above 64 KiB) waits behind the other direction's
  # data in it, which cost 1.35-1.6x the link's time per exchange; eagerly sent, an exchange takes
  # what its bytes need (bench/RESULTS.md). Unless given.
  local k
  for k in btl_tcp_eager_limit btl_tcp_rndv_eager_limit btl_tcp_max_send_size; do
    [[ " ${mca[*]:-} " == *" $k "* ]] || keep+=(--mca "$k" 8388608)
  done
  # The transport and launcher: rsh through the agent into each node, shared memory inside a node and
  # TCP on the cluster's subnet between nodes; no binding and yielding ranks (2 cores, many ranks).
  nsenter -t "$(holder 1)" -m -u -n --wd="$PWD" mpirun "${root_flag[@]}" -q --oversubscribe --bind-to none \
    --host "$hosts" -np $((n * rpn)) \
    --mca plm rsh --mca plm_rsh_agent "$STATE/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl self,vader,tcp --mca pml ob1 \
    --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24" \
    --mca mpi_yield_when_idle 1 -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" \
    "${keep[@]}" "${xs[@]}" "${mca[@]}" "$@"
}

counters_json() {
  local n i total=0 first=1
  n=$(nodes)
  printf '{"nodes": ['
  for ((i = 1; i <= n; i++)); do
    local tx rx
    tx=$(cat "/proc/$(holder "$i")/net/dev" | awk '$1=="eth0:"{print $10}')
    rx=$(cat "/proc/$(holder "$i")/net/dev" | awk '$1=="eth0:"{print $2}')
    total=$((total + tx))
    [ $first -eq 1 ] || printf ', '
    first=0
    printf '{"host": "%s", "tx": %s, "rx": %s}' "$(node_host "$i")" "$tx" "$rx"
  done
  printf '], "bytes_sent": %s}\n' "$total"
}

cmd_status() {
  if [ ! -f "$STATE/nodes" ]; then
    [ "${1:-}" = --json ] && { echo '{"up": false}'; return; }
    echo "cluster '$NAME': down"
    return
  fi
  local n i
  n=$(nodes)
  if [ "${1:-}" = --json ]; then counters_json; return; fi
  echo "cluster '$NAME': $n node(s), subnet $NET.0/24, shaping (rate [delay]): $(cat "$STATE/shape" 2>/dev/null || echo none)"
  for ((i = 1; i <= n; i++)); do
    local ns pids procs
    ns=$(node_ns "$i")
    pids=$(ip netns pids "$ns" 2>/dev/null | grep -vx "$(holder "$i")" || true)
    procs=$(for p in $pids; do printf '%s(%s) ' "$(cat /proc/$p/comm 2>/dev/null)" "$p"; done)
    printf '  %s %s.%d  %s  tx %s B rx %s B  %s\n' "$(node_host "$i")" "$NET" "$i" \
      "$(ip -n "$ns" -br link show eth0 | awk '{print $2}')" \
      "$(awk '$1=="eth0:"{print $10}' /proc/"$(holder "$i")"/net/dev)" \
      "$(awk '$1=="eth0:"{print $2}' /proc/"$(holder "$i")"/net/dev)" "${procs:-(idle)}"
  done
}

cmd_link() {
  need_up
  check_node "${1:-}"
  case "${2:-}" in
    down|up) ip -n "$(node_ns "$1")" link set eth0 "$2"; echo "cluster: $(node_host "$1")'s link $2" ;;
    *) die "link needs NODE down|up" ;;
  esac
}

cmd_kill() {
  need_up
  check_node "${1:-}"
  local ns pids p killed=""
  ns=$(node_ns "$1")
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  for p in $pids; do
    [ "$p" = "$(holder "$1")" ] && continue
    case "$(cat /proc/$p/comm 2>/dev/null)" in orted|mpirun|sleep|nsenter|sh|delay_line) continue ;; esac
    kill -KILL "$p" 2>/dev/null && killed+="$p "
  done
  echo "cluster: killed on $(node_host "$1"): ${killed:-nothing}"
}

cmd_exec() {
  need_up
  check_node "${1:-}"
  local i=$1
  shift
  exec nsenter -t "$(holder "$i")" -m -u -n --wd="$PWD" "$@"
}

case "${1:-}" in
  check) cmd_check; echo "cluster: this machine can make the emulated cluster" ;;
  up) shift; cmd_up "$@" ;;
  shape) shift; cmd_shape "$@" ;;
  run) shift; cmd_run "$@" ;;
  status) shift; cmd_status "$@" ;;
  counters) need_up; counters_json ;;
  link) shift; cmd_link "$@" ;;
  kill) shift; cmd_kill "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  down) cmd_down; echo "cluster: '$NAME' down" ;;
  ""|-h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '$1' (check, up, shape, run, status, counters, link, kill, exec, down)" ;;
esac
