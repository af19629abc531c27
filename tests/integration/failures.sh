#!/usr/bin/env bash
# failures.sh BUILD - the paths operators complain about in other gateways:
# an SMPP server connector's errors (submit before bind, wrong password,
# unknown command, the session beyond its instances), route reloads on
# SIGHUP (good and bad) without dropping traffic, a connector's own queue
# limit, validity expiry, and SMSC throttling with retries that lose nothing.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
probe() { perl "$here/smpp_probe.pl" "$@" 2>>"$TMP/probe.stderr"; }

start_sink a smpp --user emg --password secret --dlr-delay 0-100
start_sink b smpp --user emg --password secret --dlr-delay 0-100
smpp_in=$(free_port)
# write_conf FILE TARGET [general settings] [out connector settings]
write_conf() {
  cat > "$1" <<CONF
general: { node_id = 5; persist = false; ${3:-} };
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp_in"; instances = 10;
    users = ( { name = "esme"; password = "pw1"; } ); },
  { name = "to-a"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_a"; instances = 2;
    system_id = "emg"; password = "secret"; window = 20; reconnect_min = 100; ${4:-} },
  { name = "to-b"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_b"; instances = 2;
    system_id = "emg"; password = "secret"; window = 20; reconnect_min = 100; }
);
routes = ( { to = "$2"; } );
CONF
}
write_conf "$TMP/g.conf" to-a
start_emgd g "$TMP/g.conf"
wait_port "$smpp_in"

# 1. The SMPP server connector's error paths, seen by Net::SMPP.
probe "$smpp_in" before-bind > "$TMP/p1"
check "submit before bind: ESME_RINVBNDSTS" grep -qx "submit_status=0x04" "$TMP/p1"
probe "$smpp_in" bad-password esme > "$TMP/p2"
check "wrong password: ESME_RINVPASWD" grep -qx "bind_status=0x0e" "$TMP/p2"
check "wrong password: then the connection is closed" grep -qx "closed=1" "$TMP/p2"
probe "$smpp_in" unknown-command esme pw1 > "$TMP/p3"
check "unknown command: generic_nack ESME_RINVCMDID with its sequence number" \
  [ "$(tr '\n' ' ' < "$TMP/p3")" = "bind_status=0x00 response_cmd=0x80000000 response_status=0x03 response_seq_matches=1 " ]
probe "$smpp_in" binds 11 esme pw1 > "$TMP/p4"
check "ten binds of a 10-instance connector succeed" [ "$(grep -c '=0x00$' "$TMP/p4")" = 10 ]
check "the eleventh is refused with ESME_RBINDFAIL" grep -qx "bind_11=0x0d" "$TMP/p4"

# 2. Routes reload on SIGHUP while traffic flows: nothing refused or lost.
a_before=$(wc -l < "$TMP/a.record")
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp_in" --user esme --password pw1 \
  --connections 2 --window 10 --count 3000 --rate 1000 --json --quiet --give-up 20 > "$TMP/r.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")
# The old route has had its share (more than the 500 checked below) when the
# reload comes, however long a busy machine took to start the traffic.
a_had_some() { [ "$(wc -l < "$TMP/a.record")" -ge $((a_before + 600)) ]; }
wait_until 300 a_had_some || true
write_conf "$TMP/g.conf" to-b
kill -HUP "$EMGD_PID_g"
sleep 1
echo 'routes = ( { to = "nowhere"; } ' >> "$TMP/g.conf"   # a broken file: refused, routes stay
kill -HUP "$EMGD_PID_g"
wait "$load_pid" || true
check "reload under traffic: all 3000 acked, none refused" \
  [ "$(jget "$TMP/r.json" '.acked, .refused' | tr '\n' ' ')" = "3000 0 " ]
check "reload: the new route took traffic" [ "$(wc -l < "$TMP/b.record")" -gt 500 ]
check "reload: the old route had taken traffic before" [ "$(wc -l < "$TMP/a.record")" -gt 500 ]
check "reload: the broken file was refused with its reason" grep -q "reload refused, routes unchanged" "$TMP/g.log"
check "reload: the reason names the file and line" grep -q "reload: .*g.conf:[0-9]*:" "$TMP/g.log"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp_in" --user esme --password pw1 \
  --count 100 --json --quiet --give-up 20 > "$TMP/r2.json" || true
check "after the refused reload the routes in place still work" [ "$(jget "$TMP/r2.json" .acked)" = 100 ]
# A change a reload cannot put in place is refused, naming its key.
write_conf "$TMP/g.conf" to-b "dlr_ttl = 3600;"
kill -HUP "$EMGD_PID_g"
sed -i 's/password = "pw1"/password = "pw2"/' "$TMP/g.conf"
sed -i 's/dlr_ttl = 3600;//' "$TMP/g.conf"
kill -HUP "$EMGD_PID_g"
for _ in $(seq 300); do grep -q 'reload: accounts: 0 added, 1 changed' "$TMP/g.log" && break; sleep 0.1; done
check "reload: a changed dlr_ttl is refused, naming the key" \
  grep -q "reload refused, routes unchanged: general.dlr_ttl changed: a reload puts routes, plugins, accounts and TLS certificates in place" "$TMP/g.log"
check "reload: a changed password (a users entry) is put in place" \
  grep -q "reload: accounts: 0 added, 1 changed, 0 removed" "$TMP/g.log"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp_in" --user esme --password pw2 \
  --count 10 --json --quiet --give-up 20 > "$TMP/r3.json" || true
check "... and binds with it at once" [ "$(jget "$TMP/r3.json" .acked)" = 10 ]
stop_emgd g 20
check "refusals are counted: one wrong password, one session beyond the instances" \
  grep -q "binds refused 1, sessions refused 1," "$TMP/g.log"

# 3. A connector's own queue limit, and validity expiry while the SMSC is stalled.
write_conf "$TMP/q.conf" to-a "" "max_queue = 50;"
start_emgd q "$TMP/q.conf"
wait_port "$smpp_in"
kill -STOP "$SINK_PID_a"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp_in" --user esme --password pw1 \
  --connections 1 --window 100 --count 200 --validity 1 --dlr --wait-dlr 8 --json --quiet \
  --give-up 15 > "$TMP/q.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")
sleep 4   # well past the 1 s validity, even if binding took a busy machine a while
kill -CONT "$SINK_PID_a"
wait "$load_pid" || true
stop_emgd q 20
queued=$(jget "$TMP/q.json" .acked)
check "connector queue limit: some refused as queue full" [ "$(jget "$TMP/q.json" .refused)" -gt 0 ]
check "connector queue limit: counted in the status" grep -q "connector_queue_full [1-9]" "$TMP/q.log"
check "validity: messages stuck past their validity come back as EXPIRED receipts" \
  [ "$(jget "$TMP/q.json" .receipts_other)" -gt 0 ]
check "validity: counted in the status" grep -q "expired [1-9]" "$TMP/q.log"

# 4. SMSC throttling: ESME_RTHROTTLED answers are retried until accepted; nothing lost or doubled.
start_sink t smpp --user emg --password secret --fail-rate 0.2
cat > "$TMP/t.conf" <<CONF
general: { node_id = 6; persist = false; };
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp_in"; instances = 2;
    users = ( { name = "esme"; password = "pw1"; } ); },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_t"; instances = 2;
    system_id = "emg"; password = "secret"; window = 20; reconnect_min = 100; }
);
routes = ( { to = "out"; } );
CONF
start_emgd t "$TMP/t.conf"
wait_port "$smpp_in"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp_in" --user esme --password pw1 \
  --connections 2 --window 20 --count 2000 --json --quiet --give-up 30 > "$TMP/t.json" || true
for _ in $(seq 200); do grep -q "in flight 0," "$TMP/t.log" && break; sleep 0.1; done
stop_emgd t 30
stop_sink t
check "throttling: all 2000 acked by emgd" [ "$(jget "$TMP/t.json" .acked)" = 2000 ]
check "throttling: the SMSC throttled some submits" [ "$(jget "$TMP/t.summary.json" .refused)" -gt 0 ]
check "throttling: every message reached the SMSC exactly once" record_has_each_seq_once "$TMP/t.record" 2000
# 5. Permanent refusals by the SMSC fail the message with a REJECTED receipt to its origin.
start_sink x smpp --user emg --password secret --reject-rate 0.1
sed -e "s/127.0.0.1:$SINK_PORT_t/127.0.0.1:$SINK_PORT_x/" "$TMP/t.conf" > "$TMP/x.conf"
start_emgd x "$TMP/x.conf"
wait_port "$smpp_in"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp_in" --user esme --password pw1 \
  --connections 2 --window 20 --count 1000 --dlr --wait-dlr 10 --json --quiet --give-up 30 \
  > "$TMP/x.json" || true
stop_emgd x 20
stop_sink x
rejected=$(jget "$TMP/x.summary.json" .rejected)
check "permanent errors: the SMSC rejected some ($rejected)" [ "$rejected" -gt 0 ]
check "permanent errors: each came back to the origin as a failure receipt" \
  [ "$(jget "$TMP/x.json" .receipts_other)" = "$rejected" ]
check "permanent errors: every message got its receipt" [ "$(jget "$TMP/x.json" .receipts)" = 1000 ]
check "permanent errors: counted as failed in the status" grep -q "failed $rejected," "$TMP/x.log"
check "permanent errors: logged with the protocol's name and code for each ($rejected)" \
  [ "$(grep -c 'refused by the SMSC: ESME_RSUBMITFAIL (0x45)$' "$TMP/x.log")" = "$rejected" ]
finish
