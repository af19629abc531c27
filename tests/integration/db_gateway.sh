#!/usr/bin/env bash
# db_gateway.sh BUILD - emgd with a real PostgreSQL (a throw-away cluster):
#  1. emgd --init-db creates the schema (twice: the second changes nothing);
#  2. the message log holds one row per message sent, with its receipt state;
#  3. the database stopped for 20 s under load: traffic never stops, and once
#     it is back every row is written, none twice;
#  4. two nodes on one database: ids from the shared sequence never overlap,
#     and receipts that reach node B for messages sent through node A are
#     handed over and delivered to A's client;
#  5. node B killed while it holds such receipts: none is lost;
#  6. a state nobody asked for and not final is not handed over;
#  7. receipts a full DLR table gives up show in the log as UNKNOWN.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pg_lib.sh"

pg_start
rows() { pg_psql -c "SELECT count(*) FROM message_log WHERE $1"; }
# wait_rows CONDITION N SECONDS: until N rows match (bounded: a hang guard,
# returning as soon as they are there)
wait_rows() {
  for _ in $(seq $(($3 * 10))); do [ "$(rows "$1")" -ge "$2" ] && return 0; sleep 0.1; done
  return 1
}

start_sink s smpp --dlr-delay 0-500
admin=$(free_port)
admin_b=$(free_port)
write_node() {   # write_node NAME NODE_ID UCP_PORT BIND_MODE
  mkdir -p "$TMP/$1.spool"
  cat > "$TMP/$1.conf" <<CONF
general: { node_id = $2; persist = true; spool_dir = "$TMP/$1.spool"; history_size = 64; };
database: { conninfo = "$PG_URL"; message_log = true; };
admin: { listen = "127.0.0.1:$( [ "$1" = a ] && echo "$admin" || echo "$admin_b" )"; token = "db-gateway-token-0123"; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$3"; instances = 2;
    users = ( { name = "load"; password = "secret"; }, { name = "alpha"; password = "secret"; },
              { name = "beta"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; bind_mode = "$4"; }
);
routes = ( { to = "smpp-out"; } );
CONF
}
load() {   # load NAME PORT COUNT [emgload options...]
  local name=$1 port=$2 count=$3
  shift 3
  "$BIN/emgload" --protocol ucp --connect "127.0.0.1:$port" --user "${USER_NAME:-load}" --password secret \
    --connections 2 --window 20 --count "$count" --dlr --wait-dlr 30 --json --quiet "$@" > "$TMP/$name.json"
}

# 1. The schema.
ucp_a=$(free_port)
write_node a 21 "$ucp_a" transceiver
check "emgd --init-db creates the schema" "$BIN/emgd" -c "$TMP/a.conf" --init-db
check "a second --init-db applies nothing" bash -c "'$BIN/emgd' -c '$TMP/a.conf' --init-db | grep -q '(0 migrations applied)'"

# 2. The message log.
start_emgd a "$TMP/a.conf"
wait_port "$ucp_a"
load first "$ucp_a" 5000
check "5000 acked and their receipts back" \
  [ "$(jget "$TMP/first.json" .acked)" = 5000 -a "$(jget "$TMP/first.json" .receipts)" = 5000 ]
check "the log has a row per message" wait_rows "true" 5000 60
check "... every one with its SMSC id and the delivered receipt" \
  wait_rows "smsc_id IS NOT NULL AND receipt_state = 2 AND origin_user = 'load' AND node_id = 21" 5000 60
check "... and its origin's reference and addresses" \
  [ "$(rows "origin_ref LIKE '4917100%:%' AND src_addr LIKE '4917000%' AND target_connector = 'smpp-out'")" = 5000 ]

# A message the history (64 events here) no longer holds: from the message log.
old=$(pg_psql -c "SELECT id FROM message_log ORDER BY id LIMIT 1")
curl -s -H "Authorization: Bearer db-gateway-token-0123" "http://127.0.0.1:$admin/api/messages/$old" > "$TMP/old.json"
check "an old message is looked up in the message log" [ "$(jget "$TMP/old.json" .source)" = database ]
check "... delivered, with its events from the row" \
  [ "$(jget "$TMP/old.json" .state)" = delivered -a "$(jget "$TMP/old.json" '.events | length')" -ge 3 ]
check "emgctl msg shows it too" bash -c \
  "'$BIN/emgctl' --url http://127.0.0.1:$admin --token db-gateway-token-0123 msg $old | grep -q delivered"
old_to=$(pg_psql -c "SELECT dst_addr FROM message_log WHERE id = $old")
old_smsc=$(pg_psql -c "SELECT smsc_id FROM message_log WHERE id = $old")
check "its recipient's messages, with or without the '+': it too, from the message log" bash -c "
  for to in '$old_to' '%2B$old_to'; do
    curl -s -H 'Authorization: Bearer db-gateway-token-0123' \"http://127.0.0.1:$admin/api/messages?to=\$to\" |
      jq -e '.database_error == null and any(.messages[]; .id == \"$old\" and .source == \"database\" and .matched == \"to\" and .to == \"$old_to\")' >/dev/null || exit 1
  done"
check "the SMSC's id ($old_smsc) and q= find it in the message log" bash -c "
  curl -s -H 'Authorization: Bearer db-gateway-token-0123' 'http://127.0.0.1:$admin/api/messages?smsc_id=$old_smsc' |
    jq -e 'any(.messages[]; .id == \"$old\" and .state == \"delivered\" and .matched == \"smsc_id\")' >/dev/null &&
  curl -s -H 'Authorization: Bearer db-gateway-token-0123' 'http://127.0.0.1:$admin/api/messages?q=$old' |
    jq -e '.messages[0].id == \"$old\" and .messages[0].matched == \"id\"' >/dev/null"
curl -s -H "Authorization: Bearer db-gateway-token-0123" -o "$TMP/none.json" -w '%{http_code}' \
  "http://127.0.0.1:$admin/api/messages/12345" > "$TMP/none.code"
check "an id nobody used: 404" [ "$(cat "$TMP/none.code")" = 404 ]

# 3. The database away for 20 s under load (1,000 messages a second).
start_at=$(wc -l < "$TMP/s.record")
load steady "$ucp_a" 40000 --rate 1000 --from 4917777:13 &
loader=$!
STARTED_PIDS+=("$loader")
sleep 5
pg_server_stop
down_at=$(wc -l < "$TMP/s.record")
before=$((down_at - start_at))   # the first 5 s: the pace this machine keeps
sleep 10
curl -s -H "Authorization: Bearer db-gateway-token-0123" "http://127.0.0.1:$admin/api/status" > "$TMP/status_down.json"
sleep 10
during=$(( $(wc -l < "$TMP/s.record") - down_at ))
pg_server_start
wait "$loader" || true
# Traffic that waited for the database would all but stop; a slow machine
# is slow before the outage too: held to half the pace of the 5 s before
# it ($before then), not to the rate.
check "while the database was away, traffic went on ($during messages in 20 s, $before in the 5 s before)" \
  [ "$during" -gt 0 -a "$during" -ge $((before * 2)) ]
check "all 40000 acked, none refused, all receipts back" \
  [ "$(jget "$TMP/steady.json" .acked)" = 40000 -a "$(jget "$TMP/steady.json" .refused)" = 0 \
    -a "$(jget "$TMP/steady.json" .receipts)" = 40000 ]
check "the log said the database was away" grep -q "message log: database unreachable" "$TMP/a.log"
lag=$(jget "$TMP/status_down.json" .database.message_log.lag_s)
status_showed_outage() {
  [ "$(jget "$TMP/status_down.json" .database.message_log.connected)" = false ] &&
    awk -v l="$lag" 'BEGIN { exit !(l >= 5) }' &&
    [ "$(jget "$TMP/status_down.json" .database.message_log.events_pending)" -gt 1000 ]
}
check "the status showed it: not connected, lag ${lag} s, events pending" status_showed_outage
check "once it was back, every row was written" wait_rows "true" 45000 120
check "... with its receipt" wait_rows "receipt_state = 2" 45000 60
check "... and none twice (ids are the key: $(rows true) rows)" [ "$(rows true)" = 45000 ]

# 4. Two nodes: A binds to the SMSC as transmitter only, so every receipt
# comes to B's transceiver bind. A's client (account alpha) is not
# connected to B: B hands A's receipts over.
stop_emgd a 20
write_node a 21 "$ucp_a" transmitter
ucp_b=$(free_port)
write_node b 22 "$ucp_b" transceiver
start_emgd a2 "$TMP/a.conf"
start_emgd b "$TMP/b.conf"
wait_port "$ucp_a"
wait_port "$ucp_b"
sleep 0.5
USER_NAME=alpha load via_a "$ucp_a" 3000 --from 4917111:13 &
la=$!
USER_NAME=beta load via_b "$ucp_b" 2000 --from 4917222:13
wait "$la" || true
check "node A: 3000 acked, and all 3000 receipts came back through node B" \
  [ "$(jget "$TMP/via_a.json" .acked)" = 3000 -a "$(jget "$TMP/via_a.json" .receipts)" = 3000 ]
check "node B: 2000 acked, receipts back" \
  [ "$(jget "$TMP/via_b.json" .acked)" = 2000 -a "$(jget "$TMP/via_b.json" .receipts)" = 2000 ]
check "both nodes' messages are in the log" wait_rows "node_id = 22" 2000 60
stop_emgd a2 20
stop_emgd b 20
handed=$(sed -n 's/.*resolved here, \([0-9]*\) handed over.*/\1/p' "$TMP/b.log")
claimed=$(sed -n 's/.*handed over, \([0-9]*\) claimed.*/\1/p' "$TMP/a2.log")
check "node B handed A's 3000 receipts over ($handed)" [ "${handed:-0}" -ge 3000 ]
check "node A claimed them ($claimed)" [ "${claimed:-0}" -ge 3000 ]
overlap=$(pg_psql -c "SELECT count(*) FROM message_log a JOIN message_log b
                      ON (a.id & 281474976710655) = (b.id & 281474976710655) AND a.node_id <> b.node_id")
check "no sequence number used by both nodes ($overlap)" [ "$overlap" = 0 ]
# 5. Node B killed while it holds receipts for A's messages (the SMSC has
# its answers, A has not had them yet): its journal keeps them, and after
# the restart every receipt still reaches A's client.
start_emgd a3 "$TMP/a.conf"
start_emgd b2 "$TMP/b.conf"
wait_port "$ucp_a"
wait_port "$ucp_b"
sleep 0.5
USER_NAME=alpha load crash_a "$ucp_a" 4000 --rate 2000 --from 4917333:13 &
la=$!
sleep 1
# Until B holds a good number of receipts for the database path: the
# first ones may not be durable yet (then the SMSC has no answer for them
# and sends them again, which proves nothing).
for _ in $(seq 100); do
  [ "$(curl -s -H "Authorization: Bearer db-gateway-token-0123" "http://127.0.0.1:$admin_b/api/status" |
       jq -r '.database.cluster.receipts_waiting // 0')" -ge 50 ] && break
  sleep 0.02
done
kill_emgd b2
start_emgd b3 "$TMP/b.conf"
wait "$la" || true
kept=$(sed -n 's/.*receipts to deliver, \([0-9]*\) matching no message yet.*/\1/p' "$TMP/b3.log")
check "node B restarted with receipts still to resolve from its journal (${kept:-none})" [ "${kept:-0}" -gt 0 ]
check "B killed once: A's 4000 acked, and all 4000 receipts came back" \
  [ "$(jget "$TMP/crash_a.json" .acked)" = 4000 -a "$(jget "$TMP/crash_a.json" .receipts)" = 4000 ]
stop_emgd a3 20
stop_emgd b3 20
stop_sink s

# 6. An SMSC that reports ENROUTE first, asked for or not, and a client that
# asked for the delivered state only: B hands A the final receipts (they
# close A's DLR entries and journal records) and not the ENROUTE ones, which
# nobody wants; A's client gets exactly its delivered receipts.
start_sink e smpp --dlr-delay 0-500 --enroute-rate 0.5
sed -i -e "s|127.0.0.1:$SINK_PORT_s|127.0.0.1:$SINK_PORT_e|" "$TMP/a.conf" "$TMP/b.conf"
start_emgd a4 "$TMP/a.conf"
start_emgd b4 "$TMP/b.conf"
wait_port "$ucp_a"
wait_port "$ucp_b"
sleep 0.5
USER_NAME=alpha load masked "$ucp_a" 2000 --from 4917444:13 --dlr-mask 1
stop_emgd a4 20
stop_emgd b4 20
stop_sink e
enroute=$(jget "$TMP/e.summary.json" .receipts_enroute)
check "the SMSC sent ENROUTE receipts nobody asked for ($enroute)" [ "$enroute" -gt 0 ]
check "A's client: 2000 acked, 2000 delivered receipts, nothing else" \
  [ "$(jget "$TMP/masked.json" '[.acked, .receipts_delivered, .receipts_other, .receipts_unknown] | map(tostring) | join(" ")')" = "2000 2000 0 0" ]
handed=$(sed -n 's/.*resolved here, \([0-9]*\) handed over.*/\1/p' "$TMP/b4.log")
resolved=$(sed -n 's/.*: \([0-9]*\) resolved here, .*/\1/p' "$TMP/b4.log")
check "B handed over the 2000 final receipts only ($handed), and kept back the $enroute ENROUTE ($resolved)" \
  [ "${handed:-0}" = 2000 -a "${resolved:-0}" = "$enroute" ]

# 7. A DLR table too small for what waits: the entries it drops give their
# messages' receipts up, and the message log says so (receipt state
# UNKNOWN). Here the receipts never come; had they come, the message log
# would have resolved them all the same.
start_sink g smpp --dlr-delay 600000-600000
write_node a 21 "$ucp_a" transceiver
sed -i -e "s|127.0.0.1:$SINK_PORT_s|127.0.0.1:$SINK_PORT_g|" \
  -e "s|history_size = 64;|history_size = 64; dlr_table_size = 100;|" "$TMP/a.conf"
start_emgd a5 "$TMP/a.conf"
wait_port "$ucp_a"
load small "$ucp_a" 300 --from 4917555:13 --wait-dlr 0 || true
check "a table of 100: 200 receipts given up in the log (state UNKNOWN)" \
  wait_rows "src_addr LIKE '4917555%' AND receipt_state = 7" 200 60
check "... and 100 still awaited" [ "$(rows "src_addr LIKE '4917555%' AND receipt_state IS NULL")" = 100 ]
gone=$(pg_psql -c "SELECT id FROM message_log WHERE src_addr LIKE '4917555%' AND receipt_state = 7 LIMIT 1")
curl -s -H "Authorization: Bearer db-gateway-token-0123" "http://127.0.0.1:$admin/api/messages/$gone" > "$TMP/gone.json"
check "its message shows the receipt as unknown" [ "$(jget "$TMP/gone.json" .receipt.from_smsc)" = unknown ]
stop_emgd a5 20
stop_sink g
finish
