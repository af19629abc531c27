#!/usr/bin/env bash
# throttle.sh [EMGD...] - what a client flooding a spent max_rate budget
# costs: an account with max_rate 1,000 pushed by emgload with no rate of
# its own over 4 SMPP connections (window 50) for DURATION seconds (default
# 20). Prints, for each run, the messages taken, the refusals, emgd's and
# emgload's CPU seconds, and emgd's CPU per message taken.
#
# With several emgd binaries (e.g. a build of the commit before and
# build/emgd), runs them alternately, ROUNDS times (default 2), so that the
# machine's drift falls on both alike. emgload and emgsink are build/'s.
#
#   bench/throttle.sh                                  build/emgd alone
#   ROUNDS=3 bench/throttle.sh /tmp/old/emgd build/emgd
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
source "$(dirname "$0")/lib.sh"

duration=${DURATION:-20}
rounds=${ROUNDS:-2}
[ $# -gt 0 ] || set -- build/emgd
bench_build emgd emgload emgsink

run_one() {  # run_one EMGD DIR: prints one row
  local emgd=$1 dir=$2 port
  mkdir -p "$dir"
  bench_start_sink "$dir" 0
  port=$(free_port)
  cat > "$dir/emgd.conf" <<CONF
general: { node_id = 1; persist = false; };
accounts = ( { name = "capped"; password = "pw"; max_rate = 1000.0; } );
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$port"; instances = 4;
    window = 100; },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$sink_port"; instances = 2;
    window = 100; system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
  "$emgd" -c "$dir/emgd.conf" > "$dir/emgd.log" 2>&1 &
  local emgd_pid=$!
  bench_pids+=("$emgd_pid")
  local i
  for ((i = 0; i < 100; i++)); do
    (exec 3<> "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
  done
  local cpu0 load_pid
  cpu0=$(cpu_seconds "$emgd_pid")
  build/emgload --protocol smpp --connect "127.0.0.1:$port" --user capped --password pw --connections 4 \
    --window 50 --duration "$duration" --give-up 20 --json --quiet > "$dir/load.json" &
  load_pid=$!
  local load_cpu=0
  # emgload's own CPU, read just before it ends (its summary comes after the last answer).
  while kill -0 "$load_pid" 2>/dev/null; do
    load_cpu=$(cpu_seconds "$load_pid" 2>/dev/null || echo "$load_cpu")
    sleep 0.2
  done
  wait "$load_pid" || true
  local cpu1
  cpu1=$(cpu_seconds "$emgd_pid")
  bench_stop "$emgd_pid" 10
  bench_stop "$sink_pid" 10
  jq -r --arg emgd "$emgd" --arg cpu "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')" --arg lcpu "$load_cpu" \
    "$bench_jq_defs"'"| \($emgd) | \(.acked | n) | \(.refused | n) | \($cpu | tonumber * 100 | round / 100) | \($lcpu) | \((($cpu | tonumber) / .acked * 1e6) | round) |"' \
    "$dir/load.json"
}

echo "throttle.sh: max_rate 1,000, 4 connections of window 50, ${duration} s; $(bench_machine)"
echo
echo "| emgd | taken | refused | emgd CPU s | emgload CPU s | emgd CPU µs per message taken |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
n=0
for ((r = 1; r <= rounds; r++)); do
  for emgd in "$@"; do
    n=$((n + 1))
    run_one "$emgd" "$bench_tmp/run$n"
  done
done
