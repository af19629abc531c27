#!/usr/bin/env bash
# gateway.sh BUILD - the reference path at small scale: emgload (UCP, 10
# connections, receipts) -> emgd (ucp-in, 10 instances; smpp-out, 10
# instances) -> emgsink (SMPP, receipts after 0-1000 ms) and the op 53
# receipts back. Then the queue limits and the DLR table's counters.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

# write_conf FILE UCP_PORT SMPP_PORT [general settings...]
write_conf() {
  local file=$1 ucp=$2 smpp=$3
  shift 3
  cat > "$file" <<CONF
general: {
  node_id = 7;
  persist = false;
  log_level = "info";
  $*
};
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "s3cret-token-gateway"; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 10;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$smpp"; instances = 10;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; }
);
routes = (
  { from = "ucp-in"; dst_prefix = "49"; to = "smpp-out"; },
  { to = "smpp-out"; }
);
CONF
}

N=5000
ADMIN_PORT=$(free_port)
admin() {  # admin PATH [curl options]: the admin API with the token
  local path=$1
  shift
  curl -s -H "Authorization: Bearer s3cret-token-gateway" "$@" "http://127.0.0.1:$ADMIN_PORT$path"
}

# 1. The reference path.
start_sink s smpp --dlr-delay 0-1000 --user emg --password secret
ucp=$(free_port)
write_conf "$TMP/a.conf" "$ucp" "$SINK_PORT_s" "dlr_table_size = 100000;"
check "emgd --check-config accepts it" "$BIN/emgd" -c "$TMP/a.conf" --check-config
start_emgd a "$TMP/a.conf"
wait_port "$ucp"
rc=0
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 10 --window 20 --count $N --dlr --wait-dlr 20 --json --quiet --give-up 30 \
  > "$TMP/a.json" || rc=$?
check "emgload exit status 0" [ $rc = 0 ]
check "all $N acked by emgd" [ "$(jget "$TMP/a.json" .acked)" = $N ]
check "all $N op 53 receipts back at emgload" [ "$(jget "$TMP/a.json" '.receipts_delivered')" = $N ]
check "no unknown or duplicate receipts" [ "$(jget "$TMP/a.json" '.receipts_unknown + .receipts_duplicate')" = 0 ]
# The admin API sees it too, and only with the token.
check "admin API: 401 without the token" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/api/status")" = 401 ]
check "admin API: 401 with a wrong token" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret-tokem' "http://127.0.0.1:$ADMIN_PORT/api/status")" = 401 ]
admin /api/status > "$TMP/status.json"
check "admin API: status counts $N received and $N sent, node 7" \
  [ "$(jq -r '.totals.received, .totals.sent, .node_id' "$TMP/status.json" | tr '\n' ' ')" = "$N $N 7 " ]
check "admin API: $N receipts delivered to the client" [ "$(jq -r .totals.receipts_out "$TMP/status.json")" = $N ]
admin /api/connectors > "$TMP/connectors.json"
check "admin API: smpp-out keeps its 10 binds, ucp-in has none now emgload has left" \
  [ "$(jq -r '.connectors[] | "\(.name)=\(.bound)"' "$TMP/connectors.json" | tr '\n' ' ')" = "ucp-in=0 smpp-out=10 " ]
check "emgctl status: a table with the totals" \
  bash -c "'$BIN/emgctl' --url http://127.0.0.1:$ADMIN_PORT --token s3cret-token-gateway status | grep -Eq '^received +$N\$'"
check "emgctl --json status, URL and token from the environment" \
  [ "$(EMGCTL_URL=http://127.0.0.1:$ADMIN_PORT EMGCTL_TOKEN=s3cret-token-gateway "$BIN/emgctl" --json status | jq -r .totals.sent)" = $N ]
check "emgctl connectors: smpp-out with its 10 binds, one row per instance, and the total" \
  bash -c "'$BIN/emgctl' --url http://127.0.0.1:$ADMIN_PORT --token s3cret-token-gateway --wide connectors > '$TMP/connectors.txt' &&
    grep -Eq '^smpp-out +smpp client +10/10 +127\.0\.0\.1:$SINK_PORT_s +[0-9]+/500 ' '$TMP/connectors.txt' &&
    [ \$(grep -cE '^ +[0-9] +bound +127\.0\.0\.1:$SINK_PORT_s +emg +trx ' '$TMP/connectors.txt') = 10 ] &&
    grep -Eq '^total +10/20 ' '$TMP/connectors.txt'"
rc=0; "$BIN/emgctl" --url "http://127.0.0.1:$ADMIN_PORT" --token wrong status >/dev/null 2>&1 || rc=$?
check "emgctl: exit 3 when unauthorised" [ $rc = 3 ]
rc=0; "$BIN/emgctl" --url "http://127.0.0.1:$ADMIN_PORT" --token s3cret-token-gateway frobnicate >/dev/null 2>&1 || rc=$?
check "emgctl: exit 5 for a bad argument" [ $rc = 5 ]
check "admin API: Prometheus metrics" bash -c "curl -s -H 'Authorization: Bearer s3cret-token-gateway' http://127.0.0.1:$ADMIN_PORT/metrics | grep -qx 'emg_messages_received_total $N'"
stop_emgd a 20
stop_sink s
check "the sink recorded each message once" record_has_each_seq_once "$TMP/s.record" $N
check "the sink recorded the full texts" [ "$(awk -F'\t' 'length($3) != 145' "$TMP/s.record" | wc -l)" = 0 ]
check "the sink saw 10 binds from emgd" [ "$(jget "$TMP/s.summary.json" .binds)" = 10 ]
check "the sink sent $N receipts and all were acked" \
  [ "$(jget "$TMP/s.summary.json" '.receipts_sent, .receipts_acked' | tr '\n' ' ')" = "$N $N " ]
check "emgd logged no errors" bash -c "! grep -q ' ERROR ' '$TMP/a.log'"

# 2. Hard limit: with the SMSC stopped, submits beyond max_total_queue are refused and counted.
start_sink h smpp
ucp=$(free_port)
write_conf "$TMP/h.conf" "$ucp" "$SINK_PORT_h" "max_total_queue = 200; max_total_queue_soft = 150;"
start_emgd h "$TMP/h.conf"
wait_port "$ucp"
kill -STOP "$SINK_PID_h"
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 2 --window 50 --count 400 --json --quiet --give-up 5 --timeout 60000 \
  > "$TMP/h.json" || true
kill -CONT "$SINK_PID_h"
check "hard limit: emgd accepted 200" [ "$(jget "$TMP/h.json" .acked)" = 200 ]
check "hard limit: the other 200 were refused" [ "$(jget "$TMP/h.json" .refused)" = 200 ]
# (At least the 100 ms; the upper bound is a hang guard, not a speed.)
check "soft limit: the acks above 150 were held back about 100 ms" \
  between "$(jget "$TMP/h.json" '.ack_latency_ms.max | floor')" 90 4000
stop_emgd h 20
stop_sink h
check "hard limit: refusals counted in the status" grep -q "refused 200 (queue_full 200)" "$TMP/h.log"

# journal_gateway NAME DLR_DELAY TABLE_SIZE: a sink NAME sending receipts
# after DLR_DELAY, and emgd NAME with persist on (its journal in
# $TMP/NAME.spool) and a DLR table of TABLE_SIZE, listening on $ucp
journal_gateway() {
  local name=$1
  start_sink "$name" smpp --dlr-delay "$2"
  ucp=$(free_port)
  local port_var="SINK_PORT_$name"
  write_conf "$TMP/$name.conf" "$ucp" "${!port_var}" "dlr_table_size = $3;"
  sed -i -e "s|persist = false;|persist = true; spool_dir = \"$TMP/$name.spool\";|" "$TMP/$name.conf"
  start_emgd "$name" "$TMP/$name.conf"
  wait_port "$ucp"
}
# load300 NAME [options]: 300 messages with receipts through one bind, into $TMP/NAME.json
load300() {
  local name=$1
  shift
  "$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
    --connections 1 --window 50 --count 300 --dlr --json --quiet --give-up 20 "$@" > "$TMP/$name.json" || true
}

# wait_admin JQ VALUE: up to 30 s (a hang guard) for the admin status's JQ to read VALUE; prints the last read
wait_admin() {
  local v=""
  for _ in $(seq 300); do
    v=$(admin /api/status | jq -r "$1")
    [ "$v" = "$2" ] && break
    sleep 0.1
  done
  echo "$v"
}

# 3. A small DLR table: the oldest entries are evicted and their receipts
#    count as unmatched. With persist on, the journal lets go of the evicted
#    messages too: nothing stays live, and a restart puts none back.
#    Receipts that match nothing are answered after their first retry, not
#    held for all four: the sink has all 300 answered by the time the
#    client stops waiting for the 200 that cannot come (held for 4.3 s
#    each, they would not be).
journal_gateway e 1500-1500 100
load300 e --wait-dlr 4
stop_sink e
check "small DLR table: the SMSC's 300 receipts all answered at once, matched or not" \
  [ "$(jget "$TMP/e.summary.json" .receipts_acked)" = 300 ]
live=$(wait_admin .spool.live_messages 0)
check "small DLR table: the journal holds no live message (evicted ones let go): $live" [ "$live" = 0 ]
unmatched=$(wait_admin .totals.receipts_unmatched 200)
check "small DLR table: the 200 unmatched given up after their retries: $unmatched" [ "$unmatched" = 200 ]
live=$(wait_admin .spool.live_receipts 0)
check "small DLR table: and their journal records ended: $live live" [ "$live" = 0 ]
stop_emgd e 20
check "small DLR table: 300 acked" [ "$(jget "$TMP/e.json" .acked)" = 300 ]
check "small DLR table: 100 receipts matched" [ "$(jget "$TMP/e.json" .receipts)" = 100 ]
check "small DLR table: 200 evicted and 200 unmatched, counted" \
  grep -q "unmatched 200, DLR table [0-9]*/100 (evicted 200)" "$TMP/e.log"
mv "$TMP/e.log" "$TMP/e1.log"
start_emgd e "$TMP/e.conf"
wait_port "$ucp"
stop_emgd e 20
check "small DLR table: a restart puts no message back" \
  grep -q "journal: 0 messages queued again, 0 awaiting receipts, 0 receipts to deliver" "$TMP/e.log"

# 3b. Receipts answered while they match nothing yet are journaled first:
#     emgd killed while it still retries them, the next start tries them
#     again, gives them up in turn and ends their records.
journal_gateway u 1500-1500 100
load300 u --wait-dlr 4 &
load_pid=$!
STARTED_PIDS+=("$load_pid")
kept=$(wait_admin .spool.live_receipts 200)
check "kept receipts: the 200 unmatched ones are in the journal while retried: $kept" [ "$kept" = 200 ]
kill_emgd u
wait "$load_pid" 2>/dev/null || true
stop_sink u
mv "$TMP/u.log" "$TMP/u1.log"
start_emgd u "$TMP/u.conf"
wait_port "$ucp"
tried_again() {
  logged "$TMP/u.log" '200 matching no message yet' && logged "$TMP/u.log" '200 receipts that matched no message yet are tried again'
}
check "kept receipts: the next start tries the 200 again" tried_again
unmatched=$(wait_admin .totals.receipts_unmatched 200)
check "kept receipts: given up after their retries: $unmatched" [ "$unmatched" = 200 ]
live=$(wait_admin .spool.live_receipts 0)
check "kept receipts: their records ended: $live live" [ "$live" = 0 ]
stop_emgd u 20
mv "$TMP/u.log" "$TMP/u2.log"
start_emgd u "$TMP/u.conf"
wait_port "$ucp"
stop_emgd u 20
check "kept receipts: a second start finds none" grep -q ' 0 matching no message yet' "$TMP/u.log"

# 3c. Restarted with a smaller DLR table than its journal needs: the
#     messages that do not fit are let go (with a warning), once.
journal_gateway r 600000-600000 1000
load300 r
stop_emgd r 20
check "smaller table: 300 acked, their receipts still to come" [ "$(jget "$TMP/r.json" .acked)" = 300 ]
sed -i -e "s|dlr_table_size = 1000;|dlr_table_size = 100;|" "$TMP/r.conf"
for run in 1 2; do
  start_emgd "r$run" "$TMP/r.conf"
  wait_port "$ucp"
  stop_emgd "r$run" 20
done
check "smaller table: the first restart puts 100 back and lets 200 go" \
  bash -c "grep -q '0 messages queued again, 100 awaiting receipts' '$TMP/r1.log' &&
    grep -q '200 messages awaiting receipts did not fit in the DLR table' '$TMP/r1.log'"
check "smaller table: the second finds only the 100" \
  bash -c "grep -q '0 messages queued again, 100 awaiting receipts' '$TMP/r2.log' &&
    ! grep -q 'did not fit in the DLR table' '$TMP/r2.log'"
stop_sink r

# 4. The operator acts without a restart: pause a connector (its queue holds),
#    list what waits, drop one stuck message (its origin gets a failed receipt),
#    resume (the rest goes out), reload.
start_sink o smpp --dlr-delay 0-100
ucp=$(free_port)
write_conf "$TMP/o.conf" "$ucp" "$SINK_PORT_o"
start_emgd o "$TMP/o.conf"
wait_port "$ucp"
sleep 0.3
check "admin API: pause smpp-out" bash -c "curl -s -X POST -H 'Authorization: Bearer s3cret-token-gateway' http://127.0.0.1:$ADMIN_PORT/api/connectors/smpp-out/pause | jq -e '.paused == true' >/dev/null"
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 2 --window 50 --count 300 --dlr --wait-dlr 15 --json --quiet --give-up 30 > "$TMP/o.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")
for _ in $(seq 600); do [ "$(admin /api/queues | jq -r '.queues[] | select(.connector == "smpp-out") | .queued')" = 300 ] && break; sleep 0.05; done
ctl() { "$BIN/emgctl" --url "http://127.0.0.1:$ADMIN_PORT" --token s3cret-token-gateway "$@"; }
check "emgctl queues: smpp-out holds 300, paused" bash -c "$(declare -f ctl); BIN='$BIN' ADMIN_PORT=$ADMIN_PORT; ctl queues | grep -Eq '^smpp-out +300 +[0-9.]+ +- +yes\$'"
check "emgctl queue smpp-out 0 3: three messages listed" \
  [ "$(ctl --wide queue smpp-out 0 3 | grep -c ' message ')" = 3 ]
check "paused: the 300 messages wait in smpp-out's queue" \
  [ "$(admin /api/queues | jq -r '.queues[] | select(.connector == "smpp-out") | "\(.queued) \(.paused)"')" = "300 true" ]
admin "/api/queues/smpp-out/messages?offset=10&limit=5" > "$TMP/list.json"
check "queue listing: 5 messages from offset 10, with id, from, to and age" \
  [ "$(jq -r '[.queued, (.messages | length), (.messages[0].to | length), (.messages[0].age_s >= 0)] | join(" ")' "$TMP/list.json")" = "300 5 13 true" ]
victim=$(jq -r '.messages[0].id' "$TMP/list.json")
check "drop a stuck message" [ "$(admin "/api/messages/$victim" -X DELETE | jq -r .dropped)" = true ]
check "drop it again: 404" [ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H 'Authorization: Bearer s3cret-token-gateway' "http://127.0.0.1:$ADMIN_PORT/api/messages/$victim")" = 404 ]
check "emgctl resume smpp-out" [ "$(ctl resume smpp-out)" = "smpp-out resumed" ]
wait "$load_pid" || true
check "resumed: the other 299 delivered with their receipts" [ "$(jget "$TMP/o.json" .receipts_delivered)" = 299 ]
# DELETED reaches a UCP client as "not delivered" (Dst 2): UCP has no deleted state.
check "the dropped message's origin got a failed receipt" [ "$(jget "$TMP/o.json" .receipts_undeliverable)" = 1 ]
check "admin API: POST /api/reload reloads" [ "$(admin /api/reload -X POST | jq -r .reloaded)" = true ]
echo 'routes = ( { to = "nowhere"; } );' >> "$TMP/o.conf"
rc=0; ctl reload > "$TMP/reload.out" 2>&1 || rc=$?
check "emgctl reload of a broken file: refused with the reason, exit 1" \
  bash -c "[ $rc = 1 ] && grep -q 'refused: .*o.conf:[0-9]*:' '$TMP/reload.out'"
stop_emgd o 20
stop_sink o
check "the sink got exactly the 299" [ "$(jget "$TMP/o.summary.json" .accepted)" = 299 ]

finish
