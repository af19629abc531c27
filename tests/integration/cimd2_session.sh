#!/usr/bin/env bash
# cimd2_session.sh BUILD - CIMD2 sessions as the other protocols have them:
#  - the server connector against a peer written from the specification
#    (cimd2_peer.py): each bad request gets the protocol's answer (a submit
#    before login 900:1, a wrong password 900:100 and the connection
#    closed, a bad checksum a NACK 99, an unknown operation a general error
#    98, a bad value 900:2), good ones their answers (alive, a submit with
#    and without a checksum, logout), and emgd's own alive when idle;
#  - the client connector's login (user, password, window in 019) and its
#    alive when idle, seen by that peer playing the SMSC;
#  - the client connector against an SMSC that answers one submit in five
#    with a temporary error: every message retried and delivered; against
#    one that refuses every submit: each fails, logged by its CIMD2 code;
#    and against one killed mid-run and started again: the connector
#    reconnects and every message gets through.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
PEER="python3 $(dirname "$0")/cimd2_peer.py"

# ---- the server connector against a raw peer ----
port=$(free_port)
cat > "$TMP/server.conf" <<CONF
general: { node_id = 5; persist = false; };
connectors = (
  { name = "cimd2-in"; protocol = "cimd2"; mode = "server"; listen = "127.0.0.1:$port"; instances = 2;
    keepalive = 1000; users = ( { name = "app"; password = "secret"; } ); },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:9"; system_id = "emg"; }
);
routes = ( { to = "out"; } );
CONF
start_emgd server "$TMP/server.conf"
wait_port "$port"
$PEER probe "127.0.0.1:$port" app secret > "$TMP/probe.out" 2>&1
stop_emgd server 20
saw() { grep -Eqx "$1" "$TMP/probe.out"; }
check "a submit before login: 53 with 900:1 (unexpected operation)" saw 'submit_before_login 53:001\|900:1\|'
check "a wrong password: 51 with 900:100 (invalid login)" saw 'wrong_password 51:001\|900:100\|'
check "... and the connection closed" saw 'after_wrong_password EOF'
check "the right password: 51, logged in" saw 'login 51:001\|'
check "alive answered (90)" saw 'alive 90:003\|'
check "a bad checksum: NACK 99 with its number" saw 'bad_checksum 99:005\|'
check "an unknown operation: general error 98 with 900:1" saw 'unknown_operation 98:007\|900:1\|'
check "an operation emg does not handle (enquire, 04): 54 with 900:1" saw 'enquire_status 54:009\|900:1\|'
check "a bad status report request: 53 with 900:2 (syntax error)" saw 'bad_status_report_request 53:011\|900:2\|'
check "a submit without a checksum: 53 naming the message by 021 and 060" \
  saw 'no_checksum_submit 53:013\|021:4917012345\|060:[0-9]{12}\|'
check "a submit: 53 with 021 and 060" saw 'submit 53:015\|021:4917012345\|060:[0-9]{12}\|'
check "emgd's own alive when idle, numbered even" saw 'server_alive 40:[0-9]{2}[02468]\|'
check "logout answered (52), then the connection closed" bash -c "grep -qx 'logout 52:017|' '$TMP/probe.out' && grep -qx 'after_logout EOF' '$TMP/probe.out'"
check "the wrong password logged" grep -q "as 'app' refused: wrong password" "$TMP/server.log"

# ---- the client connector's login and alive ----
smsc=$(free_port)
$PEER smsc "$smsc" 4 > "$TMP/smsc.out" 2>&1 &
STARTED_PIDS+=($!)
peer_pid=$!
wait_port "$smsc"
cat > "$TMP/client.conf" <<CONF
general: { node_id = 6; persist = false; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$(free_port)";
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "cimd2-out"; protocol = "cimd2"; mode = "client"; connect = "127.0.0.1:$smsc";
    system_id = "emg"; password = "secret"; window = 32; keepalive = 500; }
);
routes = ( { to = "cimd2-out"; } );
CONF
start_emgd client "$TMP/client.conf"
wait "$peer_pid" 2>/dev/null || true
stop_emgd client 20
check "the client's login: user, password and its window (019:32)" grep -qx 'login 01:001|010:emg|011:secret|019:32|' "$TMP/smsc.out"
check "the client's alives when idle, numbered odd, more than one in 4 s" \
  [ "$(grep -Ec '^alive 40:[0-9]{2}[13579]\|$' "$TMP/smsc.out")" -ge 2 ]

# An SMSC without windowing refuses the login that asks for one (105): the
# client logs in again asking for none, and stays bound.
smsc=$(free_port)
# (8 s: a login refused, the next after reconnect_min (1 s), then an alive.)
$PEER smsc "$smsc" 8 nowindow > "$TMP/nowindow.out" 2>&1 &
STARTED_PIDS+=($!)
peer_pid=$!
wait_port "$smsc"
sed -i "s/connect = \"127.0.0.1:[0-9]*\"/connect = \"127.0.0.1:$smsc\"/" "$TMP/client.conf"
start_emgd nowindow "$TMP/client.conf"
wait "$peer_pid" 2>/dev/null || true
stop_emgd nowindow 20
check "an SMSC refusing the window: the first login asked for it, the next did not" \
  bash -c "head -2 '$TMP/nowindow.out' | tr '\n' ' ' | grep -qx 'login 01:001|010:emg|011:secret|019:32| login 01:001|010:emg|011:secret| '"
check "... then bound: its alives answered" grep -Eq '^alive 40:[0-9]{2}[13579]\|$' "$TMP/nowindow.out"
check "... logged with CIMD2's words and what emgd does" \
  grep -q "bind refused: error 105 Windowing disabled; binding again with a window of 1" "$TMP/nowindow.log"

# ---- throttling and reconnects against emgsink ----
# write_conf FILE SINK_PORT IN_PORT
write_conf() {
  cat > "$1" <<CONF
general: { node_id = 7; persist = false; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$3"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "cimd2-out"; protocol = "cimd2"; mode = "client"; connect = "127.0.0.1:$2"; instances = 2;
    system_id = "emg"; password = "secret"; window = 20; reconnect_min = 100; reconnect_max = 400; }
);
routes = ( { to = "cimd2-out"; } );
CONF
}

# against NAME SINK_OPTIONS... -- EMGLOAD_OPTIONS...: emgsink over CIMD2
# with those options, a fresh emgd (SMPP in, CIMD2 out to it) and emgload
# over SMPP to the end (its JSON: $TMP/NAME.json); both stopped after.
against() {
  local name=$1 sink_options=() in port_var="SINK_PORT_$1"
  shift
  while [ "$1" != -- ]; do
    sink_options+=("$1")
    shift
  done
  shift
  start_sink "$name" cimd2 "${sink_options[@]}" --user emg --password secret
  in=$(free_port)
  write_conf "$TMP/$name.conf" "${!port_var}" "$in"
  start_emgd "$name" "$TMP/$name.conf"
  wait_port "$in"
  "$BIN/emgload" --protocol smpp --connect "127.0.0.1:$in" --user load --password secret "$@" \
    --json --quiet > "$TMP/$name.json" || true
  stop_emgd "$name" 20
  stop_sink "$name"
}

N=2000
against busy --fail-rate 0.2 --dlr-delay 0-100 -- --count $N --window 20 --dlr --wait-dlr 20 --give-up 60
refused=$(jget "$TMP/busy.summary.json" .refused)
check "an SMSC refusing a fifth of the submits for now: $refused refusals, every message retried and acked ($(jget "$TMP/busy.json" .acked))" \
  [ "$(jget "$TMP/busy.json" .acked)/$(jget "$TMP/busy.json" .receipts_delivered)" = "$N/$N" -a "$refused" -gt 100 ]
check "... each at the SMSC once" record_has_each_seq_once "$TMP/busy.record" $N

against refusing --reject-rate 1 -- --count 50 --dlr --wait-dlr 10 --give-up 30
check "an SMSC refusing for good: each message failed with a receipt to its origin ($(jget "$TMP/refusing.json" .receipts) receipts, $(jget "$TMP/refusing.json" .receipts_delivered) delivered)" \
  [ "$(jget "$TMP/refusing.json" .receipts)/$(jget "$TMP/refusing.json" .receipts_delivered)" = "50/0" ]
check "... logged with CIMD2's error code and words" \
  grep -q "refused by the SMSC: error 9 Requested operation failed" "$TMP/refusing.log"

SINK_FIXED_PORT=$(free_port)
start_sink first cimd2 --dlr-delay 0-100 --user emg --password secret
in=$(free_port)
write_conf "$TMP/restart.conf" "$SINK_FIXED_PORT" "$in"
start_emgd restart "$TMP/restart.conf"
wait_port "$in"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$in" --user load --password secret --count $N \
  --rate 500 --window 20 --json --quiet --give-up 60 > "$TMP/restart.json" &
load_pid=$!
STARTED_PIDS+=($load_pid)
sleep 1.5
kill -KILL "$SINK_PID_first"
sleep 0.5
start_sink second cimd2 --dlr-delay 0-100 --user emg --password secret
wait "$load_pid" || true   # its own verdict is read from its JSON
# Acked by an SMSC, as emgd counts it: the killed sink's record may lack
# lines it had not written out yet, so emgd's count is the one that tells.
all_sent() { grep "status:" "$TMP/restart.log" | tail -1 | grep -q "sent $N, failed 0, expired 0, in flight 0"; }
wait_until 30 all_sent || true   # (the last status line comes at the stop)
stop_emgd restart 20
stop_sink second
check "an SMSC killed mid-run and started again: all $N acked ($(jget "$TMP/restart.json" .acked))" \
  [ "$(jget "$TMP/restart.json" .acked)" = $N ]
check "... the client reconnected and every message was taken by an SMSC, $(wc -l < "$TMP/second.record") by the second" \
  bash -c "grep 'status:' '$TMP/restart.log' | tail -1 | grep -q 'sent $N, failed 0, expired 0, in flight 0' && [ -s '$TMP/second.record' ]"
check "... and the loss was logged with the next attempt" grep -q "lost.*next attempt in" "$TMP/restart.log"
finish
