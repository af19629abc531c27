#!/usr/bin/env bash
# about.sh BUILD - SMPP query_sm, cancel_sm and replace_sm from a client
# that is not ours (Perl's Net::SMPP), before and after sending:
#  - held or queued in emgd (the SMSC connector paused, or a scheduled
#    message): a query says ENROUTE, a replace changes the text that later
#    goes out (and survives a SIGKILL: it is journaled), a cancel drops the
#    message (a query then says DELETED, a second cancel fails);
#  - at the SMSC (emgsink, which answers them): a query and a cancel are
#    passed on and answered by the SMSC, whose receipt then says DELETED;
#  - delivered: a query gives DELIVERED and its date, a cancel fails;
#  - another account's message, or an unknown id: ESME_RINVMSGID;
#  - with a database and no history kept, a query is answered from the
#    message log (DELIVERED), a cancel is too late, another account's
#    message is unknown.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pg_lib.sh"
PROBE="$(dirname "$0")/smpp_probe.pl"

start_sink s smpp --user emg --password secret --dlr-delay 6000-6000
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=about-test-token-1234
cat > "$TMP/a.conf" <<CONF
general: { node_id = 5; persist = true; spool_dir = "$TMP/spool"; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$SMPP_IN"; instances = 2;
    users = ( { name = "load"; password = "secret"; }, { name = "other"; password = "secret2"; } ); },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 1;
    system_id = "emg"; password = "secret"; reconnect_min = 100; reconnect_max = 300; }
);
routes = ( { to = "out"; } );
CONF
start_emgd a "$TMP/a.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"

# probe MODE ARGS...: one Net::SMPP session; its answer lines in $TMP/probe.out
probe() { perl "$PROBE" "$SMPP_IN" "$@" > "$TMP/probe.out" 2>&1; }
field() { sed -n "s/^$1=//p" "$TMP/probe.out"; }
send() {  # send TO TEXT [SCHEDULE]: sets ID
  probe send load secret 4917000001 "$1" "$2" ${3:+"$3"}
  ID=$(field message_id)
}
ask() {  # ask MODE ID [EXTRA] [USER PASSWORD]: its status (hex)
  probe "$1" "${4:-load}" "${5:-secret}" "$2" 4917000001 ${3:+"$3"}
  field status
}
query_state() { probe query load secret "$1" 4917000001; echo "$(field status)/$(field message_state)"; }
recorded() { grep -c -P "\t$1\t" "$TMP/s.record" 2>/dev/null || true; }
recorded_once() { [ "$(recorded "$1")" = 1 ]; }   # a function: wait_until runs it again each time
recorded_text() { grep -P "\t$1\t" "$TMP/s.record" | cut -f3; }
state_is() { [ "$(query_state "$1")" = "$2" ]; }
sink_bound() { admin_call /api/connectors | jq -e '.connectors[] | select(.name == "out") | .bound > 0' > /dev/null; }
check "the SMSC connector is bound" wait_until 300 sink_bound

# 1. Held by the gateway: the SMSC connector paused.
check "emgctl pause out" [ "$(admin_ctl pause out)" = "out paused" ]
send 4917100001 "first text"
A=$ID
check "a submit while paused is acked ($A)" [ -n "$A" ]
check "query of a queued message: ESME_ROK, ENROUTE (1)" [ "$(query_state "$A")" = "0x00/1" ]
check "another account asking about it: ESME_RINVMSGID" [ "$(ask query "$A" "" other secret2)" = "0x0c" ]
check "another account cancelling it: ESME_RINVMSGID" [ "$(ask cancel "$A" 4917100001 other secret2)" = "0x0c" ]
check "an id that was never given: ESME_RINVMSGID" [ "$(ask query 12345)" = "0x0c" ]
check "cancel of the queued message: ESME_ROK" [ "$(ask cancel "$A" 4917100001)" = "0x00" ]
check "query after the cancel: DELETED (4)" [ "$(query_state "$A")" = "0x00/4" ]
check "a second cancel: ESME_RCANCELFAIL" [ "$(ask cancel "$A" 4917100001)" = "0x11" ]
send 4917100002 "the old text"
B=$ID
check "replace of a queued message: ESME_ROK" [ "$(ask replace "$B" "the new text")" = "0x00" ]
send 4917100003 "held for a minute" 000000000100000R
H=$ID
check "query of a scheduled message: ENROUTE" [ "$(query_state "$H")" = "0x00/1" ]
check "cancel of the scheduled message: ESME_ROK" [ "$(ask cancel "$H" 4917100003)" = "0x00" ]
check "query after it: DELETED" [ "$(query_state "$H")" = "0x00/4" ]

# The replaced text is journaled: after a SIGKILL the new one goes out.
kill_emgd a
start_emgd a2 "$TMP/a.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
check "out is still paused after the SIGKILL (a pause is kept across restarts): emgctl resume out" \
  [ "$(admin_ctl resume out)" = "out resumed" ]
check "after a SIGKILL the replaced message went out once" wait_until 300 recorded_once 4917100002
check "... with the new text" [ "$(recorded_text 4917100002)" = "the new text" ]
check "the cancelled messages never went out" [ "$(recorded 4917100001)/$(recorded 4917100003)" = "0/0" ]

# 2. At the SMSC, its receipt 6 s away: passed on to emgsink.
send 4917100004 "to be cancelled at the SMSC"
C=$ID
send 4917100005 "to be delivered"
D=$ID
sent_both() { [ "$(recorded 4917100004)/$(recorded 4917100005)" = 1/1 ]; }
check "both sent to the SMSC" wait_until 300 sent_both
check "query of a sent message, answered by the SMSC: ENROUTE" [ "$(query_state "$C")" = "0x00/1" ]
check "cancel of a sent message, passed on: ESME_ROK" [ "$(ask cancel "$C" 4917100004)" = "0x00" ]
check "replace of a sent message, passed on: ESME_ROK" [ "$(ask replace "$D" "replaced at the SMSC")" = "0x00" ]
check "the SMSC says the cancelled one is DELETED" [ "$(query_state "$C")" = "0x00/4" ]
check "the SMSC's receipt for the delivered one came (DELIVERED, 2)" wait_until 300 state_is "$D" 0x00/2
check "... and for the cancelled one, DELETED" wait_until 300 state_is "$C" 0x00/4
probe query load secret "$D" 4917000001
check "a delivered message's query has its final date ($(field final_date))" [ -n "$(field final_date)" ]
check "cancel of a delivered message: ESME_RCANCELFAIL" [ "$(ask cancel "$D" 4917100005)" = "0x11" ]
check "replace of a delivered message: ESME_RREPLACEFAIL" [ "$(ask replace "$D" "too late")" = "0x13" ]
stop_emgd a2
stop_sink s
check "emgsink answered the queries passed on ($(jget "$TMP/s.summary.json" .queries)), 1 cancel and 1 replace" \
  [ "$(jget "$TMP/s.summary.json" '[.queries >= 2, .cancels, .replaces] | map(tostring) | join("/")')" = "true/1/1" ]

# 3. Older messages: the message log (PostgreSQL), no history kept.
pg_start
start_sink s2 smpp --user emg --password secret --dlr-delay 0-100
mkdir -p "$TMP/spool-db"
sed -e "s|spool_dir = \"[^\"]*\";|spool_dir = \"$TMP/spool-db\"; history_size = 0;|" \
    -e "s|^admin:.*|&\ndatabase: { conninfo = \"$PG_URL\"; message_log = true; };|" \
    -e "s|$SINK_PORT_s|$SINK_PORT_s2|" "$TMP/a.conf" > "$TMP/db.conf"
check "emgd --init-db" "$BIN/emgd" -c "$TMP/db.conf" --init-db
start_emgd db "$TMP/db.conf"
wait_port "$SMPP_IN"
send 4917100006 "for the log"
L=$ID
logged_delivered() { [ "$(pg_psql -c "SELECT receipt_state FROM message_log WHERE id = $L")" = 2 ]; }
check "message $L is in the log, delivered" wait_until 300 logged_delivered
check "query with no history: from the log, DELIVERED" [ "$(query_state "$L")" = "0x00/2" ]
check "... with its final date ($(field final_date))" [ -n "$(field final_date)" ]
check "another account asking: ESME_RINVMSGID" [ "$(ask query "$L" "" other secret2)" = "0x0c" ]
check "cancel: ESME_RCANCELFAIL" [ "$(ask cancel "$L" 4917100006)" = "0x11" ]
check "an id the log does not have: ESME_RINVMSGID" [ "$(ask query 12345)" = "0x0c" ]
stop_emgd db
stop_sink s2
finish
