#!/usr/bin/env bash
# wire.sh [COUNT] - emgload straight to emgsink on loopback, over SMPP and then
# UCP: 10 connections, window 50, a receipt for every message after 0-1000 ms.
# Prints msgs/s, ack latency and the CPU and peak memory of both processes.
# Both processes share this machine's cores, as in every benchmark here.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-1000000}
protocols=${PROTOCOLS:-smpp ucp}
scripts/install-deps.sh >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target emgload emgsink >/dev/null

tmp=$(mktemp -d)
sink_pid=
trap '[ -n "$sink_pid" ] && kill -KILL "$sink_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# CPU seconds (user + system) a process has used, from /proc.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}
peak_rss_mb() {
  awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"
}

printf '%-6s %10s %12s %10s %10s %10s %9s %9s %9s %9s\n' protocol messages "msgs/s" "ack p50" "ack p99" receipts \
  "load cpu" "sink cpu" "load MB" "sink MB"
for proto in $protocols; do
  rm -f "$tmp/port"
  build/emgsink --protocol "$proto" --listen 127.0.0.1:0 --port-file "$tmp/port" --dlr-delay 0-1000 \
    --quiet &
  sink_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  build/emgload --protocol "$proto" --connect "127.0.0.1:$(cat "$tmp/port")" --connections 10 \
    --window 50 --count "$count" --dlr --wait-dlr 30 --json --quiet > "$tmp/load.json" &
  load_pid=$!
  # Sample the loader's CPU and memory just before it exits.
  load_cpu=0 load_mb=0
  while kill -0 "$load_pid" 2>/dev/null; do
    if [ -r "/proc/$load_pid/stat" ]; then
      load_cpu=$(cpu_seconds "$load_pid" 2>/dev/null || echo "$load_cpu")
      load_mb=$(peak_rss_mb "$load_pid" 2>/dev/null || echo "$load_mb")
    fi
    sleep 0.2
  done
  wait "$load_pid" || true
  sink_cpu=$(cpu_seconds "$sink_pid")
  sink_mb=$(peak_rss_mb "$sink_pid")
  kill -TERM "$sink_pid"; wait "$sink_pid" 2>/dev/null || true
  sink_pid=
  jq -r --arg p "$proto" --arg lc "$load_cpu" --arg sc "$sink_cpu" --arg lm "$load_mb" --arg sm "$sink_mb" \
    '[$p, .acked, (.msgs_per_s | floor), "\(.ack_latency_ms.p50) ms", "\(.ack_latency_ms.p99) ms",
      .receipts, "\($lc) s", "\($sc) s", $lm, $sm] | @tsv' "$tmp/load.json" |
    awk -F'\t' '{ printf "%-6s %10s %12s %10s %10s %10s %9s %9s %9s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
done
