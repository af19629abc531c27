#!/usr/bin/env bash
# priority.sh BUILD - messages of a higher priority (SMPP priority_flag 3)
# overtake a queue of 100,000 of priority 0 waiting for a paused SMSC
# connector: the listing shows them first, and once the connector resumes
# they are the first the SMSC gets. Every message is delivered.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

LOW=100000
HIGH=100
start_sink s smpp --user emg --password secret
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=priority-test-token-1
cat > "$TMP/p.conf" <<CONF
general: { node_id = 5; persist = false; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
connectors = (
$(conf_server in smpp "$SMPP_IN" 2)
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 1;
    window = 10; system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
load() { smpp_load "$@" --connections 2 --window 100; }
level_shown() { admin_ctl --wide queue out 0 1 | grep -Eq '^[0-9]+ +message +[0-9]+ +4920[0-9]+ +in/load +3 '; }
start_emgd p "$TMP/p.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
sleep 0.5

check "emgctl pause out" [ "$(admin_ctl pause out)" = "out paused" ]
load low 4910:13 "$LOW" --length 20
load high 4920:13 "$HIGH" --length 20 --priority 3
check "all $LOW low and $HIGH high acked" \
  [ "$(jget "$TMP/low.json" .acked)/$(jget "$TMP/high.json" .acked)" = "$LOW/$HIGH" ]
check "out's queue holds all $((LOW + HIGH))" \
  [ "$(admin_call /api/queues | jq -r '.queues[] | select(.connector == "out") | .queued')" = $((LOW + HIGH)) ]
check "the listing shows the priority-3 messages first" \
  [ "$(admin_call "/api/queues/out/messages?limit=$((HIGH + 1))" | jq -r '[.messages[].priority] | (.[0:'$HIGH'] | unique | map(tostring) | join(",")) + "/" + (.['$HIGH'] | tostring)')" = "3/0" ]
check "emgctl queue shows the level" level_shown
check "emgctl resume out" [ "$(admin_ctl resume out)" = "out resumed" ]
tries=600
while [ "$(record_count s)" -lt $((LOW + HIGH)) ] && [ $tries -gt 0 ]; do
  sleep 0.1
  tries=$((tries - 1))
done
check "the SMSC got all $((LOW + HIGH))" [ "$(record_count s)" = $((LOW + HIGH)) ]
last_high=$(grep -n -P '\t4920' "$TMP/s.record" | tail -1 | cut -d: -f1)
check "the $HIGH priority-3 messages were the first the SMSC got (the last of them at line $last_high)" \
  [ "$last_high" -le "$HIGH" ]
stop_emgd p
stop_sink s
finish
