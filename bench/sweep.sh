#!/usr/bin/env bash
# sweep.sh - the reference test (reference.sh's base variant: persist on,
# receipts after 0-10 s, log level info) over emgload's connections x window
# per connection, each point on a fresh emgd and emgsink with bench/lib.sh's
# setup. emgd's ucp-in gets max(10, connections) instances, so that every
# connection is served and the 10 x 100 point is the reference test itself.
# Writes a markdown table of msgs/s and ack p99 per point.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/sweep.sh [--duration S | --count N] [--connections LIST] [--windows LIST] [--out FILE]
  --duration S        emgload sends for S seconds per point (default 30: past the first
                      10 s, receipts come back as fast as messages go out)
  --count N           N messages per point instead (slow at small windows: one
                      connection with window 1 moves a few thousand msgs/s at most)
  --connections LIST  comma-separated (default 1,2,4,10,20)
  --windows LIST      comma-separated, outstanding submits per connection (default 1,10,50,100)
  --out FILE          the table (default doc/reference-sweep.md)
Environment: NO_BUILD=1 uses the binaries in build/ as they are.
A point in which emgload fails (refused, unanswered or unsent messages, missing
receipts) or emgsink's counts do not cover emgload's stops the sweep with a
message on stderr and status 1, without writing the table.
Run time: a point takes its S seconds, up to 10 s more for the last receipts (15 s at
most, then they count as missing) and about 2 s to start and stop: with the defaults,
20 points x about 42 s, about 14 minutes, and 20 x 47 s = 16 minutes at most unless a
point stalls (emgload gives up after 60 s without progress).
USAGE
}

cmdline="bench/sweep.sh${*:+ $*}"
duration=30
count=""
conn_list=1,2,4,10,20
window_list=1,10,50,100
out=doc/reference-sweep.md
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=${2:?--duration needs seconds}; count=""; shift 2 ;;
    --count) count=${2:?--count needs a number}; duration=""; shift 2 ;;
    --connections) conn_list=${2:?--connections needs a list}; shift 2 ;;
    --windows) window_list=${2:?--windows needs a list}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
IFS=, read -r -a conns <<< "$conn_list"
IFS=, read -r -a windows <<< "$window_list"
for x in ${duration:-} ${count:-} "${conns[@]}" "${windows[@]}"; do
  [[ $x =~ ^[1-9][0-9]*$ ]] || { echo "sweep.sh: '$x' is not a positive number" >&2; exit 2; }
done
for c in "${conns[@]}"; do
  [ "$c" -le 1000 ] || { echo "sweep.sh: at most 1000 connections (emgd's instances)" >&2; exit 2; }
done
case $out in /*) ;; *) out=$PWD/$out ;; esac

# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_build
mkdir -p "$(dirname "$out")"

size=(duration="$duration")
[ -n "$count" ] && size=(count="$count")
declare -A cell
details=()
points=$((${#conns[@]} * ${#windows[@]}))
point=0
for c in "${conns[@]}"; do
  for w in "${windows[@]}"; do
    point=$((point + 1))
    dir=$bench_tmp/c$c-w$w
    bench_start_sink "$dir" 0-10000
    bench_start_emgd "$dir" persist=true ucp_instances=$((c > 10 ? c : 10))
    bench_load "$dir" port="$ucp_port" connections="$c" window="$w" wait_dlr=15 "${size[@]}"
    emgd_cpu=$(cpu_seconds "$emgd_pid")
    emgd_mb=$(peak_rss_mb "$emgd_pid")
    bench_stop "$emgd_pid"
    bench_stop "$sink_pid"
    bench_check_sink "$dir"
    cell[$c,$w]=$(jq -r "$bench_jq_defs"'"\(.msgs_per_s | n) (p99 \(.ack_latency_ms.p99) ms)"' "$dir/load.json")
    details+=("$(jq -r --arg c "$c" --arg w "$w" --arg ec "$emgd_cpu" --arg em "$emgd_mb" "$bench_jq_defs"'
      [$c, $w, (.acked | n), (.msgs_per_s | n), "\(.ack_latency_ms.p50) ms", "\(.ack_latency_ms.p99) ms",
       (.receipts | n), (.refused | n), "\($ec) s", "\($em) MB"] | "| " + join(" | ") + " |"' "$dir/load.json")")
    echo "sweep.sh: $point/$points: connections $c, window $w: ${cell[$c,$w]}"
  done
done

{
  echo "# The reference test over connections x window"
  echo
  echo "Command: \`$cmdline\` ($(date -u '+%Y-%m-%d %H:%M UTC'))."
  echo
  echo "Machine: $(bench_machine). emgload, emgd and emgsink all run on this machine and share"
  echo "its $(nproc) cores."
  echo
  echo "Each point is the reference test (see reference-results.md) with persist on, receipts after"
  echo "a random 0-10 s and log level info, on a fresh emgd and emgsink; emgload opens the row's number"
  echo "of UCP connections with the column's window each, and emgd's \`ucp-in\` has max(10, connections)"
  echo "instances (smpp-out stays at 10 instances, window 100)."
  if [ -n "$count" ]; then
    echo "emgload sends $count messages per point."
  else
    echo "emgload sends for $duration s per point."
  fi
  echo
  echo "msgs/s (ack p99), by connections (rows) and window per connection (columns):"
  echo
  printf '| connections \\ window |'
  for w in "${windows[@]}"; do printf ' %s |' "$w"; done
  printf '\n| ---: |'
  for w in "${windows[@]}"; do printf ' ---: |'; done
  printf '\n'
  for c in "${conns[@]}"; do
    printf '| %s |' "$c"
    for w in "${windows[@]}"; do printf ' %s |' "${cell[$c,$w]}"; done
    printf '\n'
  done
  echo
  echo "All figures:"
  echo
  echo "| connections | window | messages acked | msgs/s | ack p50 | ack p99 | receipts back | refused | emgd CPU | emgd peak RSS |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  printf '%s\n' "${details[@]}"
  echo
  echo "msgs/s, the ack latencies and the receipts are emgload's (\`--json\`): acked submits over the"
  echo "time from the first submit to the last ack; the run then waits (15 s at most) for the receipts."
  echo "emgd CPU is user + system seconds from /proc/PID/stat once the load has ended; peak RSS is VmHWM."
} > "$out"
echo "sweep.sh: wrote $out"
