#!/usr/bin/env bash
# receipts.sh BUILD - the promise that a client hears once about each
# message it asked a receipt for:
#  - an SMSC that sends ENROUTE before every final receipt: the DLR entry
#    outlives the intermediate one, and every final receipt reaches the
#    client (UCP in -> SMPP out, SMPP in -> UCP out);
#  - a long message split into parts asks the SMSC for one receipt (its
#    last part's), and the client gets exactly one; with long_receipts
#    "combined" every part asks for one and the client still gets one per
#    message (delivered, or the first failure), across a SIGKILL too; with
#    "each" the client gets every part's;
#  - an entry with no receipt within dlr_ttl expires: the table lets it go,
#    the message's history says receipt_given_up, and the late receipt
#    matches nothing.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

# write_conf FILE IN OUT LISTEN_PORT SMSC_PORT [general settings]
write_conf() {
  cat > "$1" <<CONF
general: { node_id = 21; persist = ${PERSIST:-false}; ${6:-} };
admin: { listen = "127.0.0.1:${ADMIN_PORT:-0}"; token = "t0ken-receipts-0123"; };
connectors = (
  { name = "in"; protocol = "$2"; mode = "server"; listen = "127.0.0.1:$4"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "out"; protocol = "$3"; mode = "client"; connect = "127.0.0.1:$5"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; ${OUT_EXTRA:-} }
);
routes = ( { to = "out"; } );
CONF
}

# gateway NAME IN OUT [sink options...]: a sink and an emgd in front of it;
# sets LISTEN.
gateway() {
  local name=$1 in=$2 out=$3 port_var="SINK_PORT_$1"
  shift 3
  start_sink "$name" "$out" --user emg --password secret "$@"
  LISTEN=$(free_port)
  write_conf "$TMP/$name.conf" "$in" "$out" "$LISTEN" "${!port_var}" "${GENERAL:-}"
  start_emgd "$name" "$TMP/$name.conf"
  wait_port "$LISTEN"
}

# 1. ENROUTE first, then the final receipt, for every message.
N=1000
for pair in "ucp smpp" "smpp ucp"; do
  set -- $pair
  name="enroute_$1_$2"
  gateway "$name" "$1" "$2" --enroute-rate 1 --dlr-delay 0-300
  "$BIN/emgload" --protocol "$1" --connect "127.0.0.1:$LISTEN" --user load --password secret \
    --connections 2 --window 20 --count $N --dlr --wait-dlr 20 --json --quiet --give-up 30 \
    > "$TMP/$name.json" || true
  stop_emgd "$name"
  stop_sink "$name"
  check "$1 in, $2 out, ENROUTE first: the SMSC sent $N intermediate receipts" \
    [ "$(jget "$TMP/$name.summary.json" .receipts_sent)" -ge $((2 * N)) ]
  check "$1 in, $2 out, ENROUTE first: all $N final receipts reached the client, once each" \
    [ "$(jget "$TMP/$name.json" '[.acked, .receipts_delivered, .receipts_duplicate, .receipts_unknown] | map(tostring) | join(" ")')" = "$N $N 0 0" ]
done

# 2. Long messages (320 characters: three parts): one receipt asked of the
#    SMSC, one heard by the client.
n=200
for in in ucp smpp; do
  name="long_$in"
  gateway "$name" "$in" smpp --dlr-delay 0-200
  "$BIN/emgload" --protocol "$in" --connect "127.0.0.1:$LISTEN" --user load --password secret \
    --count $n --length 320 --dlr --wait-dlr 15 --json --quiet --give-up 30 > "$TMP/$name.json" || true
  stop_emgd "$name"
  stop_sink "$name"
  check "$in in, 320 characters: $((3 * n)) parts at the SMSC" [ "$(wc -l < "$TMP/$name.record")" = $((3 * n)) ]
  check "$in in, 320 characters: the SMSC was asked for $n receipts, one a message ($(jget "$TMP/$name.summary.json" .receipts_sent))" \
    [ "$(jget "$TMP/$name.summary.json" .receipts_sent)" = $n ]
  check "$in in, 320 characters: the client got $n receipts, none twice, none unknown" \
    [ "$(jget "$TMP/$name.json" '[.receipts, .receipts_duplicate, .receipts_unknown] | map(tostring) | join(" ")')" = "$n 0 0" ]
done

# 2b. The same long messages with a receipt asked for every part.
n=200
ADMIN_PORT=$(free_port)
OUT_EXTRA='long_receipts = "combined";' gateway combined smpp smpp --dlr-delay 0-200
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$LISTEN" --user load --password secret \
  --count $n --length 320 --dlr --wait-dlr 15 --json --quiet --give-up 30 > "$TMP/combined.json" || true
curl -s -H 'Authorization: Bearer t0ken-receipts-0123' "http://127.0.0.1:$ADMIN_PORT/api/dlr" > "$TMP/combined-dlr.json"
unset ADMIN_PORT
stop_emgd combined
stop_sink combined
check "combined: the SMSC was asked for $((3 * n)) receipts, one a part ($(jget "$TMP/combined.summary.json" .receipts_sent))" \
  [ "$(jget "$TMP/combined.summary.json" .receipts_sent)" = $((3 * n)) ]
check "combined: the client got $n receipts, all delivered, none twice, none unknown" \
  [ "$(jget "$TMP/combined.json" '[.receipts, .receipts_delivered, .receipts_duplicate, .receipts_unknown] | map(tostring) | join(" ")')" = "$n $n 0 0" ]
check "combined: nothing left behind, in the DLR table or the joiner" \
  [ "$(jget "$TMP/combined-dlr.json" '[.used, .combining] | map(tostring) | join(" ")')" = "0 0" ]

# A third of the parts undelivered: still one receipt a message, the
# failure for every message with a part undelivered.
OUT_EXTRA='long_receipts = "combined";' gateway combined_fail smpp smpp --dlr-delay 0-200 --undeliv-rate 0.3
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$LISTEN" --user load --password secret \
  --count $n --length 320 --dlr --wait-dlr 15 --json --quiet --give-up 30 > "$TMP/combined_fail.json" || true
stop_emgd combined_fail
stop_sink combined_fail
failed_parts=$(jget "$TMP/combined_fail.summary.json" .receipts_undeliverable)
failed_msgs=$(jget "$TMP/combined_fail.json" .receipts_undeliverable)
check "combined, 30 % of parts undelivered: the client got $n receipts, none twice" \
  [ "$(jget "$TMP/combined_fail.json" '[.receipts, .receipts_duplicate, .receipts_unknown] | map(tostring) | join(" ")')" = "$n 0 0" ]
check "combined, 30 % of parts undelivered: $failed_msgs messages failed for $failed_parts parts (at most one a part, at least one in three)" \
  [ "$failed_msgs" -gt 0 ] && [ "$failed_msgs" -le "$failed_parts" ] && [ $((3 * failed_msgs)) -ge "$failed_parts" ]

# Every part's receipt passed on.
OUT_EXTRA='long_receipts = "each";' gateway each smpp smpp --dlr-delay 0-200
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$LISTEN" --user load --password secret \
  --count $n --length 320 --receipts-each 3 --wait-dlr 15 --json --quiet --give-up 30 > "$TMP/each.json" || true
stop_emgd each
stop_sink each
check "each: the client heard $((3 * n)) receipts, three a message" \
  [ "$(jget "$TMP/each.json" '[.receipts, .receipts_duplicate] | map(tostring) | join(" ")')" = "$n $((2 * n))" ]

# Combined, with persist on and a SIGKILL while half the parts' receipts
# are still at the SMSC: after the restart the client still hears once a
# message.
mkdir -p "$TMP/spool"
OUT_EXTRA='long_receipts = "combined";' PERSIST=true GENERAL="spool_dir = \"$TMP/spool\";" \
  gateway combined_kill smpp smpp --dlr-delay 1500-5000 --undeliv-rate 0.2
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$LISTEN" --user load --password secret \
  --count $n --length 320 --dlr --wait-dlr 40 --json --quiet --give-up 60 > "$TMP/combined_kill.json" &
load_pid=$!
all_parts_sent() { [ "$(wc -l < "$TMP/combined_kill.record")" -ge $((3 * n)) ]; }
wait_until 300 all_parts_sent
sleep 1
kill_emgd combined_kill
start_emgd combined_kill2 "$TMP/combined_kill.conf"
wait "$load_pid" || true
stop_emgd combined_kill2
stop_sink combined_kill
check "combined across a SIGKILL: the client got $n receipts, none unknown ($(jget "$TMP/combined_kill.json" '[.receipts, .receipts_delivered, .receipts_undeliverable, .receipts_duplicate] | map(tostring) | join("/")') received/delivered/undeliverable/duplicate)" \
  [ "$(jget "$TMP/combined_kill.json" '[.receipts, .receipts_unknown] | map(tostring) | join(" ")')" = "$n 0" ]
check "combined across a SIGKILL: no message heard of twice" \
  [ "$(jget "$TMP/combined_kill.json" .receipts_duplicate)" = 0 ]

# 3. dlr_ttl: receipts come after 6 s, entries expire after 2.
ADMIN_PORT=$(free_port)
GENERAL='dlr_ttl = 2; log_level = "debug2";' gateway ttl smpp smpp --dlr-delay 6000-6000
n=50
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$LISTEN" --user load --password secret \
  --count $n --dlr --wait-dlr 9 --json --quiet --give-up 30 > "$TMP/ttl.json" || true
admin() { curl -s -H 'Authorization: Bearer t0ken-receipts-0123' "http://127.0.0.1:$ADMIN_PORT$1"; }
admin /api/dlr > "$TMP/ttl-dlr.json"
id=$(grep -o 'accepted [0-9]* from' "$TMP/ttl.log" | head -1 | awk '{ print $2 }')
admin "/api/messages/$id" > "$TMP/ttl-msg.json"
stop_emgd ttl
stop_sink ttl
check "dlr_ttl 2 s: $n acked, no receipt reached the client" \
  [ "$(jget "$TMP/ttl.json" '[.acked, .receipts] | map(tostring) | join(" ")')" = "$n 0" ]
check "dlr_ttl 2 s: all $n entries expired, none left, none matched" \
  [ "$(jget "$TMP/ttl-dlr.json" '[.expired, .used, .matched] | map(tostring) | join(" ")')" = "$n 0 0" ]
check "dlr_ttl 2 s: message $id's history says receipt_given_up (no receipt within dlr_ttl)" \
  [ "$(jget "$TMP/ttl-msg.json" '[.events[] | select(.event == "receipt_given_up") | .detail] | join(",")')" = "no receipt within dlr_ttl" ]
check "dlr_ttl 2 s: message $id stands as unknown, its receipt from the SMSC unknown" \
  [ "$(jget "$TMP/ttl-msg.json" '[.state, .receipt.from_smsc] | join(" ")')" = "unknown unknown" ]
check "dlr_ttl 2 s: the SMSC's late receipts came and were logged as unknown" \
  [ "$(jget "$TMP/ttl.summary.json" .receipts_acked)/$(grep -c 'receipt for unknown message id' "$TMP/ttl.log")" = "$n/$n" ]
finish
