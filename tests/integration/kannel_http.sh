#!/usr/bin/env bash
# kannel_http.sh BUILD - the rest of Kannel's HTTP side: sendsms's smsc
# parameter sends a message out on the SMSC connector it names (and one
# naming none is refused with Kannel's answer); an MO pushed to an
# application as a JSON POST, whose answer goes back to the handset as a
# reply SMS on the connector the MO came in on (Kannel's get-url reply).
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink a smpp --mo 3 --mo-rate 5 --mo-from 4917012345 --mo-to 5555
start_sink b smpp
web=$(free_port)
app=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 43; persist = false; };
connectors = (
  { name = "web"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$web";
    users = ( { name = "app"; password = "secret"; } ); },
  { name = "smsc-a"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_a";
    system_id = "emg"; password = "secret"; },
  { name = "smsc-b"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_b";
    system_id = "emg"; password = "secret"; },
  { name = "app"; protocol = "http"; mode = "client"; method = "post_json"; reply_sms = true;
    url = "http://127.0.0.1:$app/mo";
    body = "{\"from\":\"%p\",\"to\":\"%P\",\"text\":\"%b\",\"smsc\":\"%i\"}"; }
);
routes = ( { from = "smsc-a"; to = "app"; }, { from = "web"; to = "smsc-a"; } );
CONF
HTTP_CATCH_REPLY="Thanks, got it: ünïcode ok" perl "$(dirname "$0")/http_catch.pl" "$TMP/app.port" "$TMP/app" 3 "$app" &
STARTED_PIDS+=($!)
start_emgd g "$TMP/emgd.conf"
wait_port "$web"

sendsms() {
  curl -s -o "$TMP/answer" -w '%{http_code}' \
    "http://127.0.0.1:$web/cgi-bin/sendsms?username=app&password=secret&from=4912345&to=$1&text=$2$3"
}
code=$(sendsms 4915550001 routed "")
check "a sendsms without smsc takes the route (smsc-a): $code $(cat "$TMP/answer")" [ "$code" = 202 ]
code=$(sendsms 4915550002 forced "&smsc=smsc-b")
check "smsc=smsc-b is accepted ($code $(cat "$TMP/answer"))" [ "$code" = 202 ]
code=$(sendsms 4915550003 nowhere "&smsc=no-such")
check "smsc naming no SMSC connector is refused as Kannel does ($code: $(cat "$TMP/answer"))" \
  grep -q "Not routable. Do not try again." "$TMP/answer"
check "... and logged" logged "$TMP/g.log" "no SMSC connector named 'no-such'"

# The MOs: 3 at 5 a second from sink a, pushed to the application, answered.
for _ in $(seq 300); do
  [ "$(grep -c 'Thanks, got it' "$TMP/a.record" 2>/dev/null || true)" -ge 3 ] && break
  sleep 0.1
done
stop_emgd g 10
stop_sink a
stop_sink b

check "smsc-b got the message that named it, and only that one" \
  bash -c "grep -q '4915550002.*forced' '$TMP/b.record' && [ \$(wc -l < '$TMP/b.record') = 1 ]"
check "smsc-a got the routed one" grep -q '4915550001.*routed' "$TMP/a.record"
check "the refused one went nowhere" bash -c "! grep -q 4915550003 '$TMP/a.record' '$TMP/b.record'"
first=$(grep -m1 '^POST /mo' -A1 "$TMP/app" | tail -1)
check "an MO pushed as a JSON POST: $first" \
  grep -Eq '^\{"from":"\+4917012345","to":"5555","text":"mo [0-9]+","smsc":"smsc-a"\}$' <<< "$first"
check "every MO answered by the application got its reply on smsc-a: $(grep -c 'Thanks' "$TMP/a.record") of 3" \
  [ "$(grep -c $'^5555\t4917012345\tThanks, got it: ünïcode ok\t' "$TMP/a.record")" = 3 ]
finish
