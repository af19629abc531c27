#!/usr/bin/env bash
# run-demo.sh - set everything up and run the gateway on its embedded
# defaults (etc/emgd.conf: UCP in on 127.0.0.1:3000, SMPP out to an SMSC on
# 127.0.0.1:2775, no database): an emgsink plays the SMSC, emgload submits
# with receipts for a while, the summary is shown, everything is stopped.
# Usage: run-demo.sh [COUNT] (default 200000)
# Exits 0 when the demo ran well: every message acked with its receipt
# back, emgd stopped cleanly; non-zero otherwise, saying what went wrong.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-200000}
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target emgd emgload emgsink

mkdir -p var
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

echo "== emgsink: an SMSC on 127.0.0.1:2775, receipts after 0-1000 ms"
build/emgsink --protocol smpp --listen 127.0.0.1:2775 --user emg --password secret \
  --dlr-delay 0-1000 --summary var/emgsink.json --quiet &
pids+=($!)
echo "== emgd -c etc/emgd.conf (log in var/emgd.log)"
build/emgd -c etc/emgd.conf --foreground 2>var/emgd.log &
emgd_pid=$!
pids+=($emgd_pid)
for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/3000) 2>/dev/null && break; sleep 0.05; done
sleep 0.5
echo "== emgload: $count messages over UCP, 10 connections, with receipts"
load_status=0
build/emgload --protocol ucp --connect 127.0.0.1:3000 --user load --password secret \
  --connections 10 --window 50 --count "$count" --dlr --wait-dlr 30 || load_status=$?
echo "== stopping emgd (SIGTERM) and emgsink"
emgd_status=0
kill -TERM "$emgd_pid"; wait "$emgd_pid" || emgd_status=$?
grep "status:" var/emgd.log | tail -1 || true
if [ "$load_status" != 0 ]; then
  echo "demo FAILED: emgload exited $load_status (refused, unanswered or missing receipts; see above and var/emgd.log)" >&2
  exit 1
fi
if [ "$emgd_status" != 0 ]; then
  echo "demo FAILED: emgd exited $emgd_status (see var/emgd.log)" >&2
  exit 1
fi
echo "demo OK: $count messages acked, every receipt back, emgd stopped cleanly"
