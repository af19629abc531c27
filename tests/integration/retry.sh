#!/usr/bin/env bash
# retry.sh BUILD - a client connector's retry policy against SMSCs that
# refuse: a permanent error rerouted to the next connector of the group
# (every message delivered there, every receipt back); a throttling SMSC
# given up on after the attempts allowed, each message failing with a
# receipt to its origin; an error code whose own action is to fail at once;
# an HTTP provider that answers "not now": sent again after the back-off,
# not at once.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink a smpp --user emg --password secret --reject-rate 1
start_sink b smpp --user emg --password secret --dlr-delay 0-100
start_sink t smpp --user emg --password secret --fail-rate 1
# The HTTP provider: 503 twice, then 200.
HTTP_CATCH_STATUS=503,503,200 HTTP_CATCH_TIMES="$TMP/provider.times" \
  perl "$(dirname "$0")/http_catch.pl" "$TMP/provider.port" "$TMP/provider" 3 &
STARTED_PIDS+=($!)
wait_file "$TMP/provider.port"
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=retry-test-token-1234
client() {  # client NAME SINK [more keys]: an SMPP client connector to a sink (no comma after)
  echo "{ name = \"$1\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:$2\"; window = 10;"
  echo "  system_id = \"emg\"; password = \"secret\"; reconnect_min = 100; ${3:-} }"
}
cat > "$TMP/r.conf" <<CONF
general: { node_id = 4; persist = false; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
connectors = (
$(conf_server in smpp "$SMPP_IN" 1)
  $(client a "$SINK_PORT_a" 'retry = { permanent = "reroute"; };'),
  $(client b "$SINK_PORT_b"),
  $(client t "$SINK_PORT_t" 'retry = { attempts = 3; backoff_first = 20; backoff_max = 100; };'),
  $(client u "$SINK_PORT_t" 'retry = { errors = ( { code = 0x58; action = "fail"; } ); };'),
  { name = "h"; protocol = "http"; mode = "client"; url = "http://127.0.0.1:$(cat "$TMP/provider.port")/send?to=%p";
    instances = 1; window = 1; connections = 1; retry = { backoff_first = 300; backoff_max = 300; }; }
);
routes = (
  { dst_prefix = "4912"; to = [ "a", "b" ]; },
  { dst_prefix = "4920"; to = "t"; },
  { dst_prefix = "4930"; to = "u"; },
  { dst_prefix = "4940"; to = "h"; }
);
CONF
load() { smpp_load "$@" --dlr --wait-dlr 20; }   # with receipts, waiting for them
total() { admin_call /api/status | jq -r ".totals.$1"; }   # total KEY: a count of /api/status
start_emgd r "$TMP/r.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
sleep 0.5

# 1. a refuses every submit for good; its policy reroutes to b.
load reroute 4912:13 200
check "reroute: all 200 acked, 200 receipts, all delivered" \
  [ "$(jget "$TMP/reroute.json" '[.acked, .receipts, .receipts_delivered] | map(tostring) | join(" ")')" = "200 200 200" ]
check "reroute: b got each of the 200 once" record_has_each_seq_once "$TMP/b.record" 200
check "reroute: a accepted none" [ "$(grep -c . "$TMP/a.record" || true)" = 0 ]
check "reroute: 200 counted as rerouted, none failed" [ "$(total rerouted)/$(total failed)" = "200/0" ]

# 2. t throttles every submit; after 3 refusals a message fails, and its
#    origin hears it with a receipt.
load attempts 4920:13 20
check "attempts: all 20 acked, 20 receipts, none delivered" \
  [ "$(jget "$TMP/attempts.json" '[.acked, .receipts, .receipts_delivered] | map(tostring) | join(" ")')" = "20 20 0" ]
check "attempts: 20 failed after 2 retries each (retried $(total retried))" \
  [ "$(total failed)/$(total retried)" = "20/40" ]

# 3. u's policy fails ESME_RTHROTTLED (0x58) at once: no retry.
load code 4930:13 10
check "error code 0x58 fails at once: 10 receipts, none delivered" \
  [ "$(jget "$TMP/code.json" '[.acked, .receipts, .receipts_delivered] | map(tostring) | join(" ")')" = "10 10 0" ]
check "error code 0x58: 10 more failed, no more retries" [ "$(total failed)/$(total retried)" = "30/40" ]
# 4. The provider says 503 twice: the message goes again each time, after
#    the back-off (300 ms), and is taken the third time.
smpp_load http 4940:13 1   # an HTTP provider sends no receipts
check "HTTP provider: the message acked" [ "$(jget "$TMP/http.json" .acked)" = 1 ]
three_tries() { [ "$(cat "$TMP/provider.times" 2>/dev/null | wc -l)" = 3 ]; }
check "HTTP provider: asked three times" wait_until 300 three_tries
gaps=$(awk 'NR > 1 { printf "%s%d", sep, $1 - last; sep = " " } { last = $1 }' "$TMP/provider.times")
check "HTTP provider: each try after the back-off, not at once (gaps: $gaps ms)" \
  awk -v g="$gaps" 'BEGIN { n = split(g, a, " "); ok = n == 2; for (i = 1; i <= n; i++) ok = ok && a[i] >= 250; exit !ok }'
stop_emgd r
stop_sink a
stop_sink b
stop_sink t
finish
