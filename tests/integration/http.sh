#!/usr/bin/env bash
# http.sh BUILD - the HTTP connector in a running emgd:
#  - JSON and Kannel-style submits (emgload --protocol http, keep-alive)
#    reach the SMSC, and receipts come back by callback with the right
#    status (some made UNDELIV by the sink);
#  - credentials are checked (401 for the JSON API, Kannel's 403 text);
#  - a bad body is answered 400 naming the field;
#  - an outgoing HTTP connector delivers to a provider's API by URL
#    template: here a second emgd's JSON API.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --dlr-delay 0-300 --undeliv-rate 0.2
web=$(free_port)
prov=$(free_port)

# The provider: a second emgd taking JSON submits, sending to the same sink.
cat > "$TMP/provider.conf" <<CONF
general: { node_id = 32; persist = false; };
connectors = (
  { name = "api"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$prov"; instances = 1;
    users = ( { name = "gw"; password = "pw"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    system_id = "prov"; password = "x"; }
);
routes = ( { to = "smpp-out"; } );
CONF
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 31; persist = true; spool_dir = "$TMP/spool"; };
connectors = (
  { name = "web"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$web"; instances = 2;
    users = ( { name = "app"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; },
  { name = "provider"; protocol = "http"; mode = "client"; window = 4; connections = 4;
    url = "http://127.0.0.1:$prov/api/v1/messages"; method = "post_json";
    body = "{\"from\":\"%P\",\"to\":\"%p\",\"text\":\"%b\"}"; id_field = "messages.0.id";
    system_id = "gw"; password = "pw"; }
);
routes = ( { dst_prefix = "4999"; to = "provider"; }, { to = "smpp-out"; } );
CONF
mkdir -p "$TMP/spool"
check "--check-config accepts the HTTP connectors" "$BIN/emgd" -c "$TMP/emgd.conf" --check-config
start_emgd p "$TMP/provider.conf"
start_emgd g "$TMP/emgd.conf"
wait_port "$web"
wait_port "$prov"
sleep 0.3

load() {   # load NAME API COUNT [options]: with receipts unless NO_DLR=1
  local name=$1 api=$2 count=$3 dlr=(--dlr --wait-dlr 30)
  shift 3
  [ "${NO_DLR:-}" = 1 ] && dlr=()
  "$BIN/emgload" --protocol http --http-api "$api" --connect "127.0.0.1:$web" --user app --password secret \
    --connections 4 --count "$count" "${dlr[@]}" --json --quiet "$@" > "$TMP/$name.json"
}
load json json 3000
check "JSON: 3000 acked" [ "$(jget "$TMP/json.json" .acked)" = 3000 ]
check "JSON: 3000 receipts called back" [ "$(jget "$TMP/json.json" .receipts)" = 3000 ]
load kannel kannel 2000 --from 4917444:13
check "Kannel sendsms: 2000 acked" [ "$(jget "$TMP/kannel.json" .acked)" = 2000 ]
check "Kannel sendsms: 2000 receipts called back" [ "$(jget "$TMP/kannel.json" .receipts)" = 2000 ]
load ucs2 json 500 --encoding ucs2 --length 60 --from 4917555:13
check "UCS2 text: 500 acked, receipts back" \
  [ "$(jget "$TMP/ucs2.json" .acked)" = 500 -a "$(jget "$TMP/ucs2.json" .receipts)" = 500 ]

# Bad credentials and a bad body.
code=$(curl -s -o "$TMP/r401" -w '%{http_code}' -u app:wrong -H 'Content-Type: application/json' \
  -d '{"from":"4912345","to":"4915550001","text":"hi"}' "http://127.0.0.1:$web/api/v1/messages")
check "JSON API with a wrong password: 401 ($code)" [ "$code" = 401 ]
code=$(curl -s -o "$TMP/r403" -w '%{http_code}' \
  "http://127.0.0.1:$web/cgi-bin/sendsms?username=app&password=wrong&to=4915550001&text=hi")
check "sendsms with a wrong password: 403 ($code)" [ "$code" = 403 ]
check "... with Kannel's text" grep -q "Authorization failed for sendsms" "$TMP/r403"
code=$(curl -s -o "$TMP/r400" -w '%{http_code}' -u app:secret -H 'Content-Type: application/json' \
  -d '{"from":"4912345","text":"no recipient"}' "http://127.0.0.1:$web/api/v1/messages")
check "a body without a recipient: 400 ($code)" [ "$code" = 400 ]
check "... naming the field" grep -q '"to"\|to:' "$TMP/r400"
code=$(curl -s -o "$TMP/r202" -w '%{http_code}' \
  "http://127.0.0.1:$web/cgi-bin/sendsms?username=app&password=secret&from=4912345&to=4915550002&text=hello+kannel")
check "a plain sendsms GET: 202 ($code)" [ "$code" = 202 ]
check "... answered as Kannel does" grep -q "0: Accepted for delivery" "$TMP/r202"

# A JSON POST callback, and Kannel's GET dlr-url with its escapes, caught by
# a listener of our own: the status is in each.
perl "$(dirname "$0")/http_catch.pl" "$TMP/catch.port" "$TMP/caught" 2 &
STARTED_PIDS+=($!)
wait_file "$TMP/catch.port"
catch=$(cat "$TMP/catch.port")
code=$(curl -s -o "$TMP/rpost" -w '%{http_code}' -u app:secret -H 'Content-Type: application/json' \
  -d "{\"from\":\"4912345\",\"to\":\"4915550003\",\"text\":\"post me\",\"callback\":\"http://127.0.0.1:$catch/cb\"}" \
  "http://127.0.0.1:$web/api/v1/messages")
check "a JSON submit with a POST callback: 202 ($code)" [ "$code" = 202 ]
post_id=$(jq -r '.messages[0].id' "$TMP/rpost")
curl -s -o /dev/null "http://127.0.0.1:$web/cgi-bin/sendsms?username=app&password=secret&from=4912345&to=4915550004&text=get+me&dlr-mask=3&dlr-url=$(printf 'http://127.0.0.1:%s/dlr?type=%%d&to=%%p&from=%%P&smsc=%%i' "$catch" | jq -sRr @uri)"
for _ in $(seq 300); do [ "$(grep -c '^POST\|^GET' "$TMP/caught" 2>/dev/null)" = 2 ] && break; sleep 0.1; done
check "the POST callback came, as JSON naming the message ($post_id), its state and the connector it went out on" \
  bash -c "grep -q '^POST /cb' '$TMP/caught' && grep -q '\"id\":\"$post_id\"' '$TMP/caught' && grep -Eq '\"status\":\"(DELIVRD|UNDELIV)\"' '$TMP/caught' && grep -q '\"smsc\":\"smpp-out\"' '$TMP/caught'"
check "the GET dlr-url came with its escapes expanded (type 1 or 2, the addresses, %i the connector)" \
  grep -Eq '^GET /dlr\?type=(1|2)&to=4915550004&from=4912345&smsc=smpp-out ' "$TMP/caught"

# Outgoing: through the provider's JSON API (a provider's HTTP API sends no
# receipts this gateway could match: none are asked for).
NO_DLR=1 load out json 300 --to 4999000:13 --from 4917666:13
check "to the provider route: 300 acked" [ "$(jget "$TMP/out.json" .acked)" = 300 ]
for _ in $(seq 300); do [ "$(grep -c "^4917666" "$TMP/s.record")" -ge 300 ] && break; sleep 0.1; done
check "the provider's gateway delivered all 300 to the SMSC" [ "$(grep -c "^4917666" "$TMP/s.record")" = 300 ]

# A receipt whose callback cannot be made yet stays in the journal: after a
# restart it is called back, still naming the connector it came through.
late=$(free_port)
curl -s -o /dev/null "http://127.0.0.1:$web/cgi-bin/sendsms?username=app&password=secret&from=4912345&to=4915550005&text=late&dlr-mask=3&dlr-url=$(printf 'http://127.0.0.1:%s/late?smsc=%%i' "$late" | jq -sRr @uri)"
for _ in $(seq 300); do grep -q "in flight 0," "$TMP/g.log" 2>/dev/null && break; sleep 0.1; done
sleep 1   # its receipt comes back (0-300 ms), and its callback finds nobody
stop_emgd g 20
perl "$(dirname "$0")/http_catch.pl" "$TMP/late.port" "$TMP/late" 1 "$late" &
STARTED_PIDS+=($!)
wait_file "$TMP/late.port"
start_emgd g2 "$TMP/emgd.conf"
for _ in $(seq 600); do [ -s "$TMP/late" ] && break; sleep 0.1; done   # bounded: 60 s, a hang guard
check "a receipt kept over a restart was called back, %i still naming the connector" \
  grep -Eq '^GET /late\?smsc=smpp-out ' "$TMP/late"
stop_emgd g2 20
stop_emgd p 20
stop_sink s
undeliv=$(( $(jget "$TMP/json.json" .receipts_undeliverable) + $(jget "$TMP/kannel.json" .receipts_undeliverable) \
  + $(jget "$TMP/ucs2.json" .receipts_undeliverable) ))
delivered=$(( $(jget "$TMP/json.json" .receipts_delivered) + $(jget "$TMP/kannel.json" .receipts_delivered) \
  + $(jget "$TMP/ucs2.json" .receipts_delivered) ))
check "callbacks carried the right status: $undeliv UNDELIV and $delivered delivered (of 5500)" \
  [ "$undeliv" -gt 500 -a "$undeliv" -lt 1700 -a $((undeliv + delivered)) = 5500 ]
sink_undeliv=$(jget "$TMP/s.summary.json" .receipts_undeliverable)
check "as many UNDELIV as the SMSC sent for them ($sink_undeliv >= $undeliv)" [ "$sink_undeliv" -ge "$undeliv" ]
check "emgd logged no errors" bash -c "! grep -q ' ERROR ' '$TMP/g.log'"
finish
