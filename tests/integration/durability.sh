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
# Then receipts that wait for a client who left: they come back while no
# session of the account is bound, wait in its queue (and the journal),
# and reach its next session after a stop and a start.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

COUNT=9000
smsc=$(free_port)
ucp=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=durability-test-token
mkdir -p "$TMP/spool"
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 13; persist = true; spool_dir = "$TMP/spool"; journal_commit_interval_us = 100000; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
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

# Receipts for a client that left: it sends and goes at once; the receipts
# (2-3 s later, long after its last ack) find no session of its account
# and wait for the next, in the queue and the journal.
LEFT=100
SINK_FIXED_PORT=$smsc start_sink s2 smpp --dlr-delay 2000-3000
start_emgd g3 "$TMP/emgd.conf"
wait_port "$ucp"
wait_bound g3 smpp-out 2
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 1 --window 100 --count $LEFT --dlr --wait-dlr 0 --json --quiet --give-up 30 \
  > "$TMP/left.json" || true
receipts_in_reach() { [ "$(admin_call /api/status | jq .totals.receipts_in)" -ge $LEFT ]; }
wait_until 600 receipts_in_reach
left_acked() { [ "$(jget "$TMP/left.json" .acked)" = $LEFT ] && receipts_in_reach; }
check "the client that left: $LEFT acked, and their receipts reached emgd after it left" left_acked
stop_emgd g3
start_emgd g4 "$TMP/emgd.conf"
wait_port "$ucp"
kept=$(sed -n 's/.* awaiting receipts, \([0-9]*\) receipts to deliver,.*/\1/p' "$TMP/g4.log")
early=$(jget "$TMP/left.json" .receipts)
kept_back() { [ "${kept:-0}" -ge 1 ] && [ $((${kept:-0} + early)) -ge $LEFT ]; }
check "the restart put the waiting receipts back (${kept:-none} to deliver; $early came before the client left)" \
  kept_back
# Its next session: one message more, and the kept receipts, which name
# messages of the earlier session (emgload counts them as unknown).
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 1 --window 50 --count 1 --dlr --wait-dlr 20 --json --quiet --give-up 30 \
  > "$TMP/back.json" || true
back=$(jget "$TMP/back.json" .receipts_unknown)
all_back() { [ "$back" -ge "${kept:-1}" ] && [ $((back + early)) -ge $LEFT ]; }
check "the client's next session got every receipt kept for it ($back; $early before it left, of $LEFT)" all_back
stop_emgd g4
stop_sink s2

check "all $COUNT acked in the end ($(jget "$TMP/load.json" .resubmits) resubmitted after the kills)" \
  [ "$(jget "$TMP/load.json" .acked)" = $COUNT ]
check "the kills came while messages were being acked (both restarts recovered messages)" \
  [ "$(grep -l 'journal: ' "$TMP"/g[12].log | wc -l)" = 2 ]
check "every acked message reached the SMSC" record_seen_all "$TMP/s.record" $COUNT
check "every acked message's receipt came back ($(jget "$TMP/load.json" .receipts) of $COUNT)" \
  [ "$(jget "$TMP/load.json" .receipts)" = $COUNT ]
finish
