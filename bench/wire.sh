#!/usr/bin/env bash
# wire.sh [COUNT] - emgload straight to emgsink on loopback, over SMPP and then
# UCP: 10 connections, window 50, a receipt for every message after 0-1000 ms.
# Prints msgs/s, ack latency and the CPU and peak memory of both processes.
# Both processes share this machine's cores, as in every benchmark here.
# A run stops with a message on stderr and status 1, printing no figures,
# unless emgload succeeded and the sink's counts match its (bench/lib.sh).
# NO_BUILD=1 uses the binaries in build/ as they are; TLS=1 runs both over
# TLS (certificates made for the run).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

count=${1:-1000000}
protocols=${PROTOCOLS:-smpp ucp}
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_build emgload emgsink

tls_sink=() tls_load=()
if bench_tls; then
  bench_tls_files
  tls_sink=(--tls --cert "$bench_pki/server.pem" --key "$bench_pki/server.key")
  tls_load=(--tls --ca "$bench_pki/ca.pem")
fi

header() {
  printf '%-6s %10s %12s %10s %10s %10s %9s %9s %9s %9s\n' protocol messages "msgs/s" "ack p50" "ack p99" receipts \
    "load cpu" "sink cpu" "load MB" "sink MB"
}
first=1
for proto in $protocols; do
  dir=$bench_tmp/$proto
  mkdir -p "$dir"
  build/emgsink --protocol "$proto" --listen 127.0.0.1:0 --port-file "$dir/port" --dlr-delay 0-1000 \
    --summary "$dir/sink.json" --quiet ${tls_sink[@]+"${tls_sink[@]}"} &
  sink_pid=$!
  bench_pids+=("$sink_pid")
  for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
  [ -s "$dir/port" ] || { echo "wire.sh: emgsink did not start" >&2; exit 1; }
  build/emgload --protocol "$proto" --connect "127.0.0.1:$(cat "$dir/port")" --connections 10 \
    --window 50 --count "$count" --dlr --wait-dlr 30 --json --quiet ${tls_load[@]+"${tls_load[@]}"} > "$dir/load.json" &
  load_pid=$!
  bench_pids+=("$load_pid")
  # Sample the loader's CPU and memory just before it exits (emgload ends
  # by itself: after its receipts, or 60 s without progress).
  load_cpu=0 load_mb=0
  while kill -0 "$load_pid" 2>/dev/null; do
    if [ -r "/proc/$load_pid/stat" ]; then
      load_cpu=$(cpu_seconds "$load_pid" 2>/dev/null || echo "$load_cpu")
      load_mb=$(peak_rss_mb "$load_pid" 2>/dev/null || echo "$load_mb")
    fi
    sleep 0.2
  done
  load_status=0
  wait "$load_pid" || load_status=$?
  bench_forget "$load_pid"
  bench_check_load "$dir" "$load_status"
  sink_cpu=$(cpu_seconds "$sink_pid")
  sink_mb=$(peak_rss_mb "$sink_pid")
  bench_stop "$sink_pid"
  bench_check_sink "$dir" direct
  # The header only above a checked row: a failed first run prints nothing.
  [ -z "$first" ] || header
  first=
  jq -r --arg p "$proto" --arg lc "$load_cpu" --arg sc "$sink_cpu" --arg lm "$load_mb" --arg sm "$sink_mb" \
    '[$p, .acked, (.msgs_per_s | floor), "\(.ack_latency_ms.p50) ms", "\(.ack_latency_ms.p99) ms",
      .receipts, "\($lc) s", "\($sc) s", $lm, $sm] | @tsv' "$dir/load.json" |
    awk -F'\t' '{ printf "%-6s %10s %12s %10s %10s %10s %9s %9s %9s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
done
