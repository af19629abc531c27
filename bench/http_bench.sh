#!/usr/bin/env bash
# http_bench.sh [COUNT] - the HTTP connector alone, without the gateway: the
# codec's figures on one core, then emgload --protocol http with 10 kept-alive
# connections (window 1, as HTTP/1.1 carries one request at a time) against
# http_bench's server, whose gateway takes every message at once: over the
# JSON API and over Kannel's sendsms, and once more each with a receipt
# called back for every message (the dlr-url carries emgload's sequence
# number back to its listener). Both processes share this machine's cores.
# BUILD=DIR picks the build directory (default build).
# A run stops with a message on stderr and status 1, printing no row for it,
# unless emgload succeeded and the server's counts match its (bench/lib.sh).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

count=${1:-200000}
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
build=${BUILD:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target emgload http_bench >/dev/null

echo "== codec, one core =="
"$build/http_bench" --seconds 3
echo

# run API RECEIPTS: one emgload run against a fresh server; prints a row.
run() {
  local api=$1 receipts=$2 dlr=() serve=() dir=$bench_tmp/$1-$2
  if [ "$receipts" = yes ]; then dlr=(--dlr --wait-dlr 30); serve=(--receipts); fi
  mkdir -p "$dir"
  # The server prints its counts (the fields bench_check_sink reads: accepted,
  # receipts_sent) when it is stopped.
  "$build/http_bench" --serve 127.0.0.1:0 --port-file "$dir/port" ${serve[@]+"${serve[@]}"} > "$dir/sink.json" &
  local server_pid=$!
  bench_pids+=("$server_pid")
  for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
  [ -s "$dir/port" ] || { echo "http_bench.sh: the server did not start" >&2; exit 1; }
  "$build/emgload" --protocol http --http-api "$api" --connect "127.0.0.1:$(cat "$dir/port")" \
    --user load --password secret --connections 10 --window 1 --count "$count" ${dlr[@]+"${dlr[@]}"} \
    --json --quiet > "$dir/load.json" &
  local load_pid=$! load_cpu=0 load_status=0
  bench_pids+=("$load_pid")
  while kill -0 "$load_pid" 2>/dev/null; do
    load_cpu=$(cpu_seconds "$load_pid" 2>/dev/null || echo "$load_cpu")
    sleep 0.2
  done
  wait "$load_pid" || load_status=$?
  bench_forget "$load_pid"
  bench_check_load "$dir" "$load_status"
  local server_cpu
  server_cpu=$(cpu_seconds "$server_pid")
  bench_stop "$server_pid"
  bench_check_sink "$dir" direct
  jq -r --arg api "$api" --arg r "$receipts" --arg lc "$load_cpu" --arg sc "$server_cpu" \
    '[$api, $r, .acked, (.msgs_per_s | floor), "\(.ack_latency_ms.p50) ms", "\(.ack_latency_ms.p99) ms",
      .receipts, .refused + .unanswered, "\($sc) s", "\($lc) s"] | @tsv' "$dir/load.json" |
    awk -F'\t' '{ printf "%-7s %-8s %9s %9s %10s %10s %9s %6s %10s %10s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
}

echo "== emgload --protocol http --connections 10 --window 1, $count messages =="
printf '%-7s %-8s %9s %9s %10s %10s %9s %6s %10s %10s\n' api receipts acked "msgs/s" "ack p50" "ack p99" \
  receipts lost "server cpu" "load cpu"
for api in json kannel; do
  run "$api" no
done
for api in json kannel; do
  run "$api" yes
done
