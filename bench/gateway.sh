#!/usr/bin/env bash
# gateway.sh [COUNT] [DLR_DELAY] - the reference test through emgd:
# emgload (UCP, 10 connections, receipts) -> emgd (ucp-in 10 instances,
# smpp-out 10 instances) -> emgsink (SMPP, receipts after DLR_DELAY ms,
# default 0-10000) and the receipts back. 145-character texts, 13-digit
# addresses, persist off (PERSIST=true for on). Prints msgs/s, ack latency, and emgd's CPU and
# peak RSS. All three processes share this machine's cores.
#   IN=cimd2    submits over CIMD2 to a CIMD2 server connector (cimd2-in) instead of UCP
#   IN=http     submits over HTTP (JSON, keep-alive) to an HTTP connector instead of UCP;
#               HTTP_API=kannel: Kannel's GET /cgi-bin/sendsms instead of the JSON API;
#               CALLBACK_PIPELINE=N: receipt callbacks pipelined N deep (emgload's listener takes it);
#               BATCH=N: JSON submits of N messages a request
#   TLS=1       TLS on both sides: emgload to emgd, emgd to emgsink (certificates made for the run)
#   DB=1        with the message log in PostgreSQL (a throw-away cluster on this machine)
#   RECEIPTS=0  no receipts asked for
#   RATE=MPS    submit at this rate (emgload --rate) instead of flat out
#   LATENCY_LOG=FILE  each second's acks and their latency p50/p99/max (emgload --latency-log)
#   PERF=FILE   record a perf profile of emgd during the load into FILE (PERF_HZ samples/s, default 1000)
#   COMMIT_US   general.journal_commit_interval_us (default 500)
#   CONNECTIONS emgload's connections (default 10), each with WINDOW (default 100) outstanding
#   LENGTH      characters a text (default 145; 320 makes three parts)
#   LONG_RECEIPTS  smpp-out's long_receipts (last, combined, each; default last)
#   HISTORY_SERIES  general.history_series (the console's history; 0: none kept)
#   LOG_LEVEL, HISTORY_SIZE, WINDOW, THREADS=1 (emgd's CPU and wake-ups per thread; THREADS_TOP=N lines),
#   NO_BUILD=1 (use the binaries in build/ as they are)
# A run in which emgload fails (refused, unanswered or unsent messages,
# missing receipts) or emgsink's counts do not cover emgload's stops with a
# message on stderr and status 1 before any figure is printed.
# The setup is bench/lib.sh's, shared with reference.sh, sweep.sh and soak.sh.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

count=${1:-1000000}
dlr_delay=${2:-0-10000}
window=${WINDOW:-100}
bench_build
tmp=$bench_tmp

bench_start_sink "$tmp" "$dlr_delay"
database=""
if [ -n "${DB:-}" ]; then
  source tests/integration/pg_lib.sh
  pg_start >/dev/null
  database="database: { conninfo = \"$PG_URL\"; message_log = true; };"
fi
bench_start_emgd "$tmp" persist="${PERSIST:-false}" log_level="${LOG_LEVEL:-info}" \
  history_size="${HISTORY_SIZE:-262144}" database="$database"

if [ -n "${PERF:-}" ]; then   # PERF=FILE: a perf profile of emgd during the load
  perf record -F ${PERF_HZ:-1000} -g -p "$emgd_pid" -o "$PERF" >/dev/null 2>&1 &
  perf_pid=$!
  bench_pids+=("$perf_pid")
fi
in=${IN:-ucp}
port=$ucp_port
[ "$in" = http ] && port=$http_port
[ "$in" = cimd2 ] && port=$cimd2_port
bench_load "$tmp" proto="$in" port="$port" window="$window" count="$count" receipts="${RECEIPTS:-1}" \
  rate="${RATE:-}" connections="${CONNECTIONS:-10}" latency_log="${LATENCY_LOG:-}"
# What is read while emgd runs is printed only once the sink's counts have
# been checked, after both have stopped.
report=$tmp/report.txt
: > "$report"
if [ -n "${THREADS:-}" ]; then   # THREADS=1: emgd's CPU and voluntary context switches per thread
  for t in /proc/"$emgd_pid"/task/*; do
    printf '%-16s %s, %s wake-ups\n' "$(cat "$t/comm")" "$(awk -v hz="$(getconf CLK_TCK)" '{ n = split($0, f, ") "); split(f[n], g, " "); printf "%.2f s", (g[12] + g[13]) / hz }' "$t/stat")" \
      "$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status")"
  done | sort -k2 -g -r | head -${THREADS_TOP:-12} >> "$report"
fi
if [ -n "${PERF:-}" ]; then
  kill -INT "$perf_pid"; wait "$perf_pid" || true
  bench_forget "$perf_pid"
fi
gateway_ack=""
[ "$in" = ucp ] && gateway_ack=$(bench_gateway_ack_shares)
# Context switches of all emgd's threads: each wake-up of a sleeping loop is one.
emgd_switches=$(cat /proc/"$emgd_pid"/task/*/status | awk '/^(non)?voluntary_ctxt_switches/ { n += $2 } END { print n }')
emgd_cpu=$(cpu_seconds "$emgd_pid")
emgd_mb=$(peak_rss_mb "$emgd_pid")
sink_cpu=$(cpu_seconds "$sink_pid")
if [ -n "$database" ]; then   # how far the message log got, and how long it took to catch up
  for _ in $(seq 600); do
    [ "$(pg_psql -c "SELECT count(*) FROM message_log WHERE receipt_state IS NOT NULL")" -ge "$(jq .receipts "$tmp/load.json")" ] && break
    sleep 0.1
  done
  echo "message log   $(pg_psql -c "SELECT count(*) FROM message_log") rows, $(pg_psql -c "SELECT count(*) FROM message_log WHERE receipt_state IS NOT NULL") with their receipt" >> "$report"
  # PostgreSQL's CPU: the server and all its processes (the log writer's backend among them)
  pg_cpu=0
  for p in $(pgrep -u postgres); do pg_cpu=$(awk -v a="$pg_cpu" -v b="$(cpu_seconds "$p")" 'BEGIN { printf "%.2f", a + b }'); done
  echo "postgres CPU  $pg_cpu s" >> "$report"
fi
bench_stop "$emgd_pid"; grep -h "journal:" "$tmp/emgd.log" >> "$report" || true
bench_stop "$sink_pid"
bench_check_sink "$tmp"
cat "$report"

tls_note=""
bench_tls && tls_note=", TLS both sides"
lines=$(wc -l < "$tmp/emgd.log")
echo "emgd log      $lines lines at log level ${LOG_LEVEL:-info}"
jq -r --arg in "$in" --arg db "${DB:+, message log on}" --arg persist "${PERSIST:-false}" --arg ec "$emgd_cpu" --arg em "$emgd_mb" --arg cs "$emgd_switches" --arg sc "$sink_cpu" --arg lc "$load_cpu" --arg mc "$machine_cpu" --arg mb "$machine_busy" --arg dd "$dlr_delay" --arg tls "$tls_note" '
  "messages      \(.acked) acked of \(.sent) sent, \(.refused) refused, \(.receipts) receipts (\(.receipts_missing) missing)",
  "throughput    \(.msgs_per_s | floor) msgs/s (\($in | ascii_upcase) in, SMPP out, receipts after \($dd) ms, persist \($persist)\($db)\($tls))",
  "ack latency   p50 \(.ack_latency_ms.p50) ms, p99 \(.ack_latency_ms.p99) ms, max \(.ack_latency_ms.max) ms",
  "emgd          \($ec) s CPU, peak RSS \($em) MB, \($cs) context switches",
  "emgsink       \($sc) s CPU",
  "emgload       \($lc) s CPU",
  "machine       \($mc) s CPU busy during the load (\($mb) % of the cores)"' "$tmp/load.json"
[ -z "$gateway_ack" ] || echo "$gateway_ack"
