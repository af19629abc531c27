#!/usr/bin/env bash
# drain.sh BUILD - an operator moves what waits for a paused SMSC connector
# to the other member of its failover group (emgctl drain), and the move is
# journaled: after a SIGKILL the moved messages go out to the new member,
# not back to the old one. Messages routed to the paused connector alone
# stay with it. The client's account has credit: the moved messages'
# journal records are copies, so the replay after the SIGKILL takes each
# message's credit once, not again for its move.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink a smpp --user emg --password secret
start_sink b smpp --user emg --password secret
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=drain-test-token-123
cat > "$TMP/d.conf" <<CONF
general: { node_id = 3; persist = true; spool_dir = "$TMP/spool"; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$SMPP_IN"; instances = 1; },
  { name = "a"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_a"; instances = 1;
    system_id = "emg"; password = "secret"; window = 10; reconnect_min = 100; reconnect_max = 300; },
  { name = "b"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_b"; instances = 1;
    system_id = "emg"; password = "secret"; window = 10; reconnect_min = 100; reconnect_max = 300; }
);
accounts = ( { name = "load"; password = "secret"; connectors = [ "in" ]; credit = 1000; } );
routes = (
  { dst_prefix = "4912"; to = [ "a", "b" ]; },
  { dst_prefix = "4910"; to = "a"; }
);
CONF
queued() {  # queued NAME: messages waiting in connector NAME's queue
  admin_call /api/queues | jq -r --arg n "$1" '.queues[] | select(.connector == $n) | .queued'
}
# distinct SINK PREFIX: the distinct messages to PREFIX the sink recorded.
distinct() { grep -P "\t$2" "$TMP/$1.record" | grep -o 'emgload #[0-9]*' | sort -u | wc -l; }
queued_is() { [ "$(queued "$1")" = "$2" ]; }
queues_are() { [ "$(queued a)/$(queued b)" = "$1" ]; }
at_least() { [ "$(distinct "$1" "$2")" -ge "$3" ]; }

start_emgd d "$TMP/d.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
wait_bound d a 1   # both bound before a's SMSC stops answering
wait_bound d b 1

# The SMSC behind a stops answering: the group's messages queue on a (it
# is still bound), behind the 10 in its window.
kill -STOP "$SINK_PID_a"
smpp_load group 4912:13 300
smpp_load alone 4910:13 50
check "300 for the group and 50 for a alone, all acked" \
  [ "$(jget "$TMP/group.json" .acked)/$(jget "$TMP/alone.json" .acked)" = "300/50" ]
check "a's queue holds 340 (10 more in its window)" wait_until 300 queued_is a 340
check "emgctl pause a" [ "$(admin_ctl pause a)" = "a paused" ]
# b takes the moved messages but does not answer yet: they wait in its
# window and queue when emgd is killed.
kill -STOP "$SINK_PID_b"
check "emgctl drain a: the group's 290 move to b, a's own 50 stay" \
  [ "$(admin_ctl drain a)" = "a drained: 290 moved, 50 stay" ]
check "a's queue holds its 50, b's the moved ones beyond its window (280)" \
  wait_until 300 queues_are 50/280
check "the move is counted as rerouted" \
  [ "$(admin_call /api/status | jq .totals.rerouted)" = 290 ]
drain_refused() { ! admin_ctl drain in >/dev/null 2>&1; }
check "emgctl drain of a server connector: refused" drain_refused
credit_left() { admin_call /api/accounts/load | jq -r .credit_left; }
check "the account's credit: 1000 less the 350 taken ($(credit_left))" [ "$(credit_left)" = 650 ]

# A crash now: the journal has the moved messages on b.
kill_emgd d
kill -CONT "$SINK_PID_a" "$SINK_PID_b"
start_emgd d2 "$TMP/d.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
check "after the crash the credit is still 650: the 290 moved were not charged again ($(credit_left))" \
  [ "$(credit_left)" = 650 ]
check "after the crash a is still paused (a pause is kept across restarts): emgctl resume a" \
  [ "$(admin_call /api/connectors | jq -r '.connectors[] | select(.name == "a") | .paused')/$(admin_ctl resume a)" = "true/a resumed" ]
check "after the crash every one of the 300 reached a sink" \
  wait_until 200 bash -c "[ \$(cat '$TMP/a.record' '$TMP/b.record' | grep -P '\t4912' | grep -o 'emgload #[0-9]*' | sort -u | wc -l) = 300 ]"
check "the 290 moved went to b (b has $(distinct b 4912) distinct)" at_least b 4912 290
check "a got only the 10 it had in its window before the pause ($(distinct a 4912))" \
  [ "$(distinct a 4912)" -le 10 ]
check "a's own 50 reached a" wait_until 300 at_least a 4910 50
check "none of a's own went to b" [ "$(distinct b 4910)" = 0 ]
stop_emgd d2
stop_sink a
stop_sink b
finish
