#!/usr/bin/env bash
# tls_handshakes.sh [RATE] [SECONDS] - handshakes a TLS server connector
# completes while a bound session's traffic flows: the reference setup with
# TLS on both sides (bench/lib.sh, TLS=1, persist on); emgload submits over
# UCP at RATE msgs/s (default 20000) with receipts for SECONDS (default 10),
# first alone, then while CLIENTS (default 2) `openssl s_time -new` (an
# independent client; each makes one handshake at a time) make full
# handshakes with the same connector as fast as they can, each connection
# closed once its handshake is done. Prints the handshakes a second and
# emgload's throughput and ack latency in both runs. All processes share
# this machine's cores: the clients' half of each handshake costs about as
# much as emgd's.
# NO_BUILD=1 uses the binaries in build/ as they are.
# SPDX-License-Identifier: Apache-2.0
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
clients=${CLIENTS:-2}
s_times=()
for ((i = 0; i < clients; i++)); do
  openssl s_time -connect "127.0.0.1:$ucp_port" -new -time "$seconds" -CAfile "$bench_pki/ca.pem" -verify 1 \
    > "$bench_tmp/s_time.$i.txt" 2>&1 &
  s_times+=("$!")
  bench_pids+=("$!")
done
run flood
for p in "${s_times[@]}"; do
  wait "$p" || true
  bench_forget "$p"
done
bench_stop "$emgd_pid"
bench_stop "$sink_pid"
bench_check_sink "$bench_tmp"
# Each s_time ends with "N connections in S real seconds, ...".
n=0 secs=0
for ((i = 0; i < clients; i++)); do
  line=$(sed -n 's/^\([0-9]*\) connections in \([0-9.]*\) real seconds.*/\1 \2/p' "$bench_tmp/s_time.$i.txt" | tail -1)
  [ -n "$line" ] || { echo "tls_handshakes.sh: s_time made no connections:" >&2; cat "$bench_tmp/s_time.$i.txt" >&2; exit 1; }
  read -r c s <<<"$line"
  n=$((n + c))
  secs=$(awk -v a="$secs" -v b="$s" 'BEGIN { print (b > a) ? b : a }')
done
printf 'handshakes    %s in %s s from %s clients: %.0f a second (openssl s_time -new, ECDSA P-256, TLS 1.3)\n' \
  "$n" "$secs" "$clients" "$(awk -v n="$n" -v s="$secs" 'BEGIN { print n / s }')"
for r in alone flood; do
  jq -r --arg r "$r" --arg rate "$rate" '"\($r | if . == "alone" then "session alone " else "with the flood" end) \(.msgs_per_s | floor) msgs/s of \($rate) asked, \(.acked) acked, \(.receipts) receipts, ack p50 \(.ack_latency_ms.p50) ms, p99 \(.ack_latency_ms.p99) ms"' "$bench_tmp/$r.json"
done
