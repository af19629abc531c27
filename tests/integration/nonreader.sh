#!/usr/bin/env bash
# nonreader.sh BUILD - backpressure: an SMPP client that binds, then sends
# enquire_links as fast as it can and never reads an answer. emgd stops
# reading from it once SESSION_OUTPUT_MAX (1 MiB) of answers is unsent, so
# its RSS stays within 64 MB of what it was before the flood (sampled every
# 0.1 s); it drops the session once no byte of that output has been written
# for response_timeout (2 s here), which must happen while the flood lasts
# (30 s at most; a few seconds on a quiet machine, and a slow one may take
# longer to fill the output); and a normal load over
# another bind of the same connector is all acked meanwhile.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

RESPONSE_TIMEOUT_MS=2000
RSS_MARGIN_KB=$((64 * 1024))       # the bound checked
RSS_KILL_KB=$((512 * 1024))        # the flood is stopped beyond this (a failing emgd)
FLOOD_SECS=30

start_sink out smpp --user emg --password secret
in=$(free_port)
cat > "$TMP/n.conf" <<CONF
general: { node_id = 5; persist = false; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$in"; instances = 4;
    response_timeout = $RESPONSE_TIMEOUT_MS;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_out"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; reconnect_max = 500; }
);
routes = ( { to = "out"; } );
CONF
start_emgd n "$TMP/n.conf"
wait_port "$in"
sleep 0.5

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$EMGD_PID_n/status" 2>/dev/null || echo 0; }

base=$(rss_kb)
# The flooder (smpp_client.py flood): bound, it sends enquire_links without
# ever reading.
python3 "$(dirname "$0")/smpp_client.py" flood "127.0.0.1:$in" load secret "$FLOOD_SECS" > "$TMP/flood.json" &
flood=$!
STARTED_PIDS+=("$flood")
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$in" --user load --password secret \
  --connections 2 --window 20 --count 5000 --to 4910:13 --json --quiet --give-up 60 \
  > "$TMP/load.json" &
load=$!
STARTED_PIDS+=("$load")

# Samples emgd's RSS while the flood lasts (bounded by its length).
peak=$base
tries=$((FLOOD_SECS * 10 + 50))
while kill -0 "$flood" 2>/dev/null && [ "$tries" -gt 0 ]; do
  rss=$(rss_kb)
  [ "$rss" -gt "$peak" ] && peak=$rss
  if [ "$rss" -gt $((base + RSS_KILL_KB)) ]; then
    echo "emgd RSS ${rss} kB: stopping the flood" >&2
    kill -TERM "$flood" 2>/dev/null || true
  fi
  sleep 0.1
  tries=$((tries - 1))
done
kill -TERM "$flood" 2>/dev/null || true
wait "$flood" 2>/dev/null || true
tries=600
while kill -0 "$load" 2>/dev/null && [ "$tries" -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
wait "$load" 2>/dev/null || true

closed=$(jq -r '.closed_after // "null"' "$TMP/flood.json" 2>/dev/null || true)
closed=${closed:-null}
echo "emgd RSS ${base} kB before the flood, ${peak} kB at most during it;" \
  "flood: $(cat "$TMP/flood.json" 2>/dev/null)"
check "emgd RSS during the flood (${peak} kB) within ${RSS_MARGIN_KB} kB of before (${base} kB)" \
  between "$peak" 0 $((base + RSS_MARGIN_KB))
check "the non-reading session was closed by emgd ($closed s after the flood began)" \
  awk -v c="$closed" -v max=$((RESPONSE_TIMEOUT_MS / 1000 + 15)) 'BEGIN { exit !(c != "null" && c <= max) }'
check "emgd logged why it dropped the session" \
  grep -q "ended: peer not reading: .* none written for $RESPONSE_TIMEOUT_MS ms" "$TMP/n.log"
check "the load over another bind: 5000 acked" [ "$(jget "$TMP/load.json" .acked 2>/dev/null)" = 5000 ]
check "emgd still takes binds after the flood" wait_port "$in" 20
finish
