#!/usr/bin/env bash
# tls_handshakes.sh [RATE] [SECONDS] - handshakes a TLS server connector
# completes while a bound session's traffic flows: the reference setup with
# TLS on both sides (bench/lib.sh, TLS=1, persist on); emgload submits over
# UCP at RATE msgs/s (default 20000) with receipts for SECONDS (default 10),
# first alone, then while `openssl s_time -new` (an independent client)
# makes full handshakes with the same connector as fast as it can, each
# connection closed once its handshake is done. Prints the handshakes a
# second and emgload's throughput and ack latency in both runs.
# NO_BUILD=1 uses the binaries in build/ as they are.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
rate=${1:-20000}
seconds=${2:-10}
export TLS=1
bench_build emgload emgsink emgd
bench_start_sink "$bench_tmp" 0-1000
bench_start_emgd "$bench_tmp" persist=true

run() {   # run NAME: emgload at the rate, its JSON into NAME.json
  bench_load "$bench_tmp" port="$ucp_port" duration="$seconds" rate="$rate" wait_dlr=30
  cp "$bench_tmp/load.json" "$bench_tmp/$1.json"
}
run alone
openssl s_time -connect "127.0.0.1:$ucp_port" -new -time "$seconds" -CAfile "$bench_pki/ca.pem" -verify 1 \
  > "$bench_tmp/s_time.txt" 2>&1 &
s_time=$!
bench_pids+=("$s_time")
run flood
wait "$s_time" || true
bench_forget "$s_time"
bench_stop "$emgd_pid"
bench_stop "$sink_pid"
bench_check_sink "$bench_tmp"
# "3456 connections in 10.00s; 345.60 connections/user sec, ..." and the line with real seconds
handshakes=$(sed -n 's/^\([0-9]*\) connections in \([0-9.]*\) real seconds.*/\1 \2/p' "$bench_tmp/s_time.txt" | tail -1)
[ -n "$handshakes" ] || { echo "tls_handshakes.sh: s_time made no connections:" >&2; cat "$bench_tmp/s_time.txt" >&2; exit 1; }
read -r n secs <<<"$handshakes"
printf 'handshakes    %s in %s s: %.0f a second (openssl s_time -new, ECDSA P-256, TLS 1.3)\n' "$n" "$secs" \
  "$(awk -v n="$n" -v s="$secs" 'BEGIN { print n / s }')"
for r in alone flood; do
  jq -r --arg r "$r" --arg rate "$rate" '"\($r | if . == "alone" then "session alone " else "with the flood" end) \(.msgs_per_s | floor) msgs/s of \($rate) asked, \(.acked) acked, \(.receipts) receipts, ack p50 \(.ack_latency_ms.p50) ms, p99 \(.ack_latency_ms.p99) ms"' "$bench_tmp/$r.json"
done
