#!/usr/bin/env bash
# routing.sh BUILD - routes an operator runs a network with: weighted
# balancing within 5 % of its weights, prefixes to two SMSCs, the earliest of
# equal routes, recipients written with a '+' routed on their digits over
# SMPP, UCP and HTTP, groups passing over a paused member, failover when one
# is down; an SMSC down for 10 s under
# load (the queue grows, then drains, nothing lost); throttling answered by
# retries that keep the order; max_rate shared by a connector's instances.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink a smpp --user emg --password secret --dlr-delay 0-200
start_sink b smpp --user emg --password secret --dlr-delay 0-200
in=$(free_port)
ucp_in=$(free_port)
http_in=$(free_port)
admin_port=$(free_port)
cat > "$TMP/r.conf" <<CONF
general: { node_id = 2; persist = false; };
admin: { listen = "127.0.0.1:$admin_port"; token = "routing-test-token-1"; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$in"; instances = 4;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp_in"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "http-in"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$http_in"; instances = 1;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "a"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_a"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; reconnect_max = 500; },
  { name = "b"; protocol = "ucp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_b"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; reconnect_max = 500; }
);
routes = (
  { dst_prefix = "4910"; to = "a"; },
  { dst_prefix = "4911"; to = "b"; },
  { dst_prefix = "4912"; to = [ "a", "b" ]; },
  { dst_prefix = "4913"; to = [ "a", "b" ]; mode = "weighted"; weights = [ 3, 1 ]; },
  { dst_prefix = "4914"; to = "a"; },
  { dst_prefix = "4914"; to = "b"; },
  { dst_prefix = "4915"; to = "b"; },
  { dst_prefix = "4915"; to = "a"; },
  { dst_prefix = "4916"; to = "a"; },
  { to = "b"; }
);
CONF
# b speaks UCP: restart it as a UCP sink on its port.
stop_sink b
SINK_FIXED_PORT=$SINK_PORT_b start_sink b ucp --user emg --password secret --dlr-delay 0-200
start_emgd r "$TMP/r.conf"
wait_port "$in"
wait_bound r a 2   # the weighted split needs both members bound from the first message
wait_bound r b 2

load() {  # load NAME TO_PATTERN COUNT [more emgload options]
  local name=$1 to=$2 count=$3
  shift 3
  "$BIN/emgload" --protocol "${PROTO:-smpp}" --connect "127.0.0.1:${PORT:-$in}" --user load --password secret \
    --connections 2 --window 20 --count "$count" --to "$to" --json --quiet --give-up 30 "$@" \
    > "$TMP/$name.json" || true
}
count_to() { grep -c "	$2" "$TMP/$1.record" || true; }
# settle PREFIX COUNT: waits (bounded) until the sinks recorded COUNT messages
# to PREFIX: emgd acks before it has forwarded everything.
settle() {
  local tries=1200   # 60 s: a hang guard; it returns as soon as they are there
  while [ $(( $(count_to a "$1") + $(count_to b "$1") )) -lt "$2" ] && [ $tries -gt 0 ]; do
    sleep 0.05
    tries=$((tries - 1))
  done
}

# 1. Weighted 3:1 over 10,000 messages: within 5 % of 7,500 / 2,500.
load w 4913:13 10000
settle 4913 10000
a=$(count_to a 4913); b=$(count_to b 4913)
check "weighted: 10,000 acked" [ "$(jget "$TMP/w.json" .acked)" = 10000 ]
check "weighted: a got $a of 10,000 (3/4 within 5 %)" between "$a" 7125 7875
check "weighted: b got $b of 10,000 (1/4 within 5 %)" between "$b" 2375 2625
check "weighted: none lost" [ $((a + b)) = 10000 ]

# each_at_its_sink WHAT COUNT PREFIX:SINK...: COUNT messages to each prefix;
# all of them reach that sink (a or b), none the other.
each_at_its_sink() {
  local what=$1 count=$2 pair prefix at other
  shift 2
  for pair in "$@"; do load "p${pair%%:*}" "${pair%%:*}:13" "$count"; done
  for pair in "$@"; do
    prefix=${pair%%:*} at=${pair#*:}
    other=b; [ "$at" = b ] && other=a
    settle "$prefix" "$count"
    check "$what: $prefix... all $count at $at, none at $other" \
      [ "$(count_to "$at" "$prefix")/$(count_to "$other" "$prefix")" = "$count/0" ]
  done
}

# 2. Prefixes: 4910 to a (SMPP), 4911 to b (UCP).
each_at_its_sink "prefixes" 500 4910:a 4911:b

# 3. Equal routes: the earliest in the file wins, whichever it names.
each_at_its_sink "equal routes, the earliest wins" 300 4914:a 4915:b

# 4. A recipient written with a '+' is routed on its digits (4916 to a, not
#    the default route to b), whichever protocol it came by.
for p in "smpp $in" "ucp $ucp_in" "http $http_in"; do
  set -- $p
  PROTO=$1 PORT=$2 load "plus_$1" "+4916:14" 200
done
settle 4916 600
check "'+4916...' over SMPP, UCP and HTTP: all 600 acked" \
  [ "$(cat "$TMP"/plus_*.json | jq -s 'map(.acked) | add')" = 600 ]
check "'+4916...' over SMPP, UCP and HTTP: all 600 at a (the 4916 route), none at b" \
  [ "$(count_to a 4916)/$(count_to b 4916)" = "600/0" ]
check "the SMSC got the digits without the '+'" [ "$(grep -c '	+' "$TMP/a.record" || true)" = 0 ]

# 5. Paused by the operator: the 4912 failover group and the 4913 weighted
#    one send to b only; a route to a alone (4910) waits in a's queue, and
#    goes out on resume.
ctl() { "$BIN/emgctl" --url "http://127.0.0.1:$admin_port" --token routing-test-token-1 "$@"; }
check "emgctl pause a" [ "$(ctl pause a)" = "a paused" ]
load pf 4912:13 300
load pw 4913:13 300
load pa 4910:13 100
settle 4912 $((300 + 0))
settle 4913 $((10000 + 300))
check "paused a: all 300 of the failover group went to b" \
  [ "$(count_to a 4912)/$(count_to b 4912)" = "0/300" ]
check "paused a: all 300 of the weighted group went to b (a kept its 3/4 of the first 10,000 only)" \
  [ "$(count_to a 4913)/$(( $(count_to b 4913) - b ))" = "$a/300" ]
check "paused a: the 100 for a alone wait in its queue" \
  [ "$(count_to a 4910)/$(curl -s -H 'Authorization: Bearer routing-test-token-1' "http://127.0.0.1:$admin_port/api/queues" | jq -r '.queues[] | select(.connector == "a") | .queued')" = "500/100" ]
logged() { grep -q "$1" "$TMP/r.log"; }
check "the log says the failover group passes over a, why, and where its messages go" \
  wait_until 300 logged "route of line [0-9]* (failover group): a cannot take messages (paused): messages go to b\$"
check "... and the weighted group" \
  wait_until 300 logged "route of line [0-9]* (weighted group): a cannot take messages (paused): messages are shared by b\$"
check "emgctl resume a" [ "$(ctl resume a)" = "a resumed" ]
check "resumed: the log says the failover group has a again" \
  wait_until 300 logged "route of line [0-9]* (failover group): a can take messages again: messages go to a\$"
settle 4910 600
check "resumed a: the 100 went out" [ "$(count_to a 4910)" = 600 ]

# 6. Failover: with a down, the 4912 group sends to b.
kill -KILL "$SINK_PID_a"; wait "$SINK_PID_a" 2>/dev/null || true
# Until both of a's instances noticed, however long a busy machine takes.
a_lost() { [ "$(grep -cE "emg\.conn\.a: instance [01]: connection to .* lost: connection closed by peer" "$TMP/r.log")" -ge 2 ]; }
wait_until 300 a_lost || true
load f 4912:13 500
settle 4912 500
check "failover: all 500 acked with a down" [ "$(jget "$TMP/f.json" .acked)" = 500 ]
check "failover: all 500 went to b" [ "$(count_to b 4912)" = 800 ]
check "failover: the log says a has no session bound" \
  wait_until 300 logged "(failover group): a cannot take messages (no session bound): messages go to b\$"
check "... and when a's instances try to connect again" \
  wait_until 300 logged "connection to 127.0.0.1:$SINK_PORT_a lost: .*; next attempt in [0-9.]* s\$"
stop_emgd r 20
stop_sink b

# 7. An SMSC down (stopped) for 10 s under load, then back: the queue grows and
#    drains; every message reaches it once and every receipt comes back.
start_sink d smpp --user emg --password secret --dlr-delay 0-100
cat > "$TMP/d.conf" <<CONF
general: { node_id = 2; persist = false; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$in"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_d"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; }
);
routes = ( { to = "out"; } );
CONF
start_emgd d "$TMP/d.conf"
wait_port "$in"
load down 4917100:13 20000 --rate 1000 --dlr --wait-dlr 30 &
load_pid=$!
STARTED_PIDS+=("$load_pid")
sleep 3
kill -STOP "$SINK_PID_d"
sleep 10
kill -CONT "$SINK_PID_d"
wait "$load_pid" || true
stop_emgd d 20
stop_sink d
check "SMSC down 10 s: all 20,000 acked to the client meanwhile" [ "$(jget "$TMP/down.json" '.acked, .refused' | tr '\n' ' ')" = "20000 0 " ]
check "SMSC down 10 s: messages waited (receipt latency max $(jget "$TMP/down.json" .receipt_latency_ms.max) ms >= 8 s)" \
  [ "$(jget "$TMP/down.json" '.receipt_latency_ms.max | floor')" -ge 8000 ]
check "SMSC down 10 s: every message reached it once" record_has_each_seq_once "$TMP/d.record" 20000
check "SMSC down 10 s: every receipt came back" [ "$(jget "$TMP/down.json" .receipts)" = 20000 ]

# run_variant NAME COUNT CONNECTIONS WINDOW [SINK OPTIONS] -- SED EXPRESSIONS: the
# gateway of d.conf with its configuration changed by the sed expressions,
# in front of a fresh sink NAME; COUNT messages over SMPP, until the sink has
# them all (bounded); both stopped after.
run_variant() {
  local name=$1 count=$2 connections=$3 window=$4 sink_opts=() port_var="SINK_PORT_$1"
  shift 4
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sink_opts+=("$1"); shift; done
  shift
  start_sink "$name" smpp --user emg --password secret ${sink_opts[@]+"${sink_opts[@]}"}
  sed -e "s/127.0.0.1:$SINK_PORT_d/127.0.0.1:${!port_var}/" "$@" "$TMP/d.conf" > "$TMP/$name.conf"
  start_emgd "$name" "$TMP/$name.conf"
  wait_port "$in"
  "$BIN/emgload" --protocol smpp --connect "127.0.0.1:$in" --user load --password secret \
    --connections "$connections" --window "$window" --count "$count" --json --quiet --give-up 30 \
    > "$TMP/$name.json" || true
  for _ in $(seq 1200); do [ "$(wc -l < "$TMP/$name.record")" -ge "$count" ] && break; sleep 0.05; done
  stop_emgd "$name" 20
  stop_sink "$name"
}

# 8. Throttling (ESME_RTHROTTLED for 10 %): every message delivered, in order,
#    through one bind with window 1 (the order a window of one can keep).
run_variant t 300 1 1 --fail-rate 0.1 -- -e "s/instances = 2;\$/instances = 1;/" -e "s/window = 50;/window = 1;/"
check "throttled: the SMSC throttled some ($(jget "$TMP/t.summary.json" .refused))" [ "$(jget "$TMP/t.summary.json" .refused)" -gt 0 ]
check "throttled: all 300 delivered once" record_has_each_seq_once "$TMP/t.record" 300
check "throttled: in the order they were submitted" \
  bash -c "grep -o 'emgload #[0-9]*' '$TMP/t.record' | sort -c"

# 9. max_rate is the whole connector's, shared by its instances: 2,000
#    messages through four instances at max_rate 400 take about 5 s at the
#    SMSC (each instance alone at 400 would take 1.25 s).
run_variant m 2000 4 50 -- -e "/name = \"out\"/ s/instances = 2;\$/instances = 4; max_rate = 400;/"
span=$(awk -F'\t' 'NR == 1 { first = $4 } { last = $4 } END { printf "%d", (last - first) * 1000 }' "$TMP/m.record")
check "max_rate 400 over 4 instances: 2,000 at the SMSC" [ "$(wc -l < "$TMP/m.record")" = 2000 ]
# No faster than max_rate on any machine (4,300: 400/s less a burst); the
# upper bound only says they were not held back far below it (about 220/s
# is well below what any machine sends through here), not this one's pace.
check "max_rate 400 over 4 instances: they took ${span} ms (about 5,000)" between "$span" 4300 9000
finish
