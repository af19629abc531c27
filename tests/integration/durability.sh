#!/usr/bin/env bash
# durability.sh BUILD - an ack means the message is stored. With persist on
# and the journal's group commit slowed to its longest interval (100 ms, so
# that a message waits in memory for its commit long enough to be caught
# there), emgd is killed with SIGKILL under load, twice, and restarted, while
# its SMSC is not there yet: what was acked waits in the queue, and only the
# journal keeps it through a kill. Then the SMSC comes: every message
# emgload saw acked must reach it, and its receipt come back. An ack sent
# before its record is on disk is lost in the kill, and shows here as a
# message missing at the SMSC.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

COUNT=9000
smsc=$(free_port)
ucp=$(free_port)
mkdir -p "$TMP/spool"
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 13; persist = true; spool_dir = "$TMP/spool"; journal_commit_interval_us = 100000; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 4;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$smsc"; instances = 2;
    system_id = "emg"; password = "secret"; window = 100; reconnect_min = 100; }
);
routes = ( { to = "smpp-out"; } );
CONF
start_emgd g0 "$TMP/emgd.conf"
wait_port "$ucp"
# Windows wide enough for the slow commits (8 x 100 per 100 ms): the rate,
# not the commit interval, sets the pace.
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 8 --window 100 --count $COUNT --rate 3000 --dlr --wait-dlr 30 --timeout 3000 \
  --json --quiet --give-up 60 > "$TMP/load.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")
for k in 1 2; do
  sleep 1.3
  kill_emgd "g$((k - 1))"
  start_emgd "g$k" "$TMP/emgd.conf"
  wait_port "$ucp"
done
sleep 1
SINK_FIXED_PORT=$smsc start_sink s smpp --dlr-delay 0-500
wait "$load_pid" || true
for _ in $(seq 600); do grep -q "in flight 0," "$TMP/g2.log" 2>/dev/null && break; sleep 0.1; done
stop_emgd g2
stop_sink s

check "all $COUNT acked in the end ($(jget "$TMP/load.json" .resubmits) resubmitted after the kills)" \
  [ "$(jget "$TMP/load.json" .acked)" = $COUNT ]
check "the kills came while messages were being acked (both restarts recovered messages)" \
  [ "$(grep -l 'journal: ' "$TMP"/g[12].log | wc -l)" = 2 ]
check "every acked message reached the SMSC" record_seen_all "$TMP/s.record" $COUNT
check "every acked message's receipt came back ($(jget "$TMP/load.json" .receipts) of $COUNT)" \
  [ "$(jget "$TMP/load.json" .receipts)" = $COUNT ]
finish
