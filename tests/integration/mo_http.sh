#!/usr/bin/env bash
# mo_http.sh BUILD - messages from handsets (MO) pushed to an application
# over HTTP, as Kannel's sms-service get-url: an SMSC (emgsink --mo) sends
# 300 MOs; emgd (persist on) routes them to an HTTP client connector whose
# URL carries Kannel's escapes. The application is down for the first 20 s,
# and emgd is killed with SIGKILL meanwhile and started again: every MO
# reaches the application, and none twice beyond the documented bound (the
# MOs the SMSC had to send again because their acknowledgement was lost).
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

N=300
start_sink s smpp --mo $N --mo-rate 25 --mo-from 4917012345 --mo-to 5555
app=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 42; persist = true; spool_dir = "$TMP/spool"; };
connectors = (
  { name = "smsc"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    system_id = "emg"; password = "secret"; },
  { name = "app"; protocol = "http"; mode = "client"; connections = 2; window = 2;
    url = "http://127.0.0.1:$app/mo?phone=%p&to=%P&text=%b&kw=%k&n=%s&smsc=%i"; }
);
routes = ( { from = "smsc"; to = "app"; } );
CONF
mkdir -p "$TMP/spool"
start_emgd g "$TMP/emgd.conf"
started=$(date +%s)

# The MOs come at 25 a second; about a third of them are in, the application
# still down, when emgd is killed.
sleep 5
kill_emgd g
check "emgd killed with MOs journaled, the application down" logged "$TMP/g.log" "did not answer" 1
start_emgd g2 "$TMP/emgd.conf"

# The application comes up 20 s after the first MOs.
sleep $(( 20 - ($(date +%s) - started) > 0 ? 20 - ($(date +%s) - started) : 0 ))
perl "$(dirname "$0")/http_catch.pl" "$TMP/app.port" "$TMP/app" 100000 "$app" &
STARTED_PIDS+=($!)
wait_file "$TMP/app.port"
for _ in $(seq 400); do
  [ "$(grep -o 'text=mo%20[0-9]*' "$TMP/app" 2>/dev/null | sort -u | wc -l)" -ge $N ] && break
  sleep 0.1
done
stop_emgd g2 20
stop_sink s

got=$(grep -c '^GET /mo?' "$TMP/app" || true)
distinct=$(grep -o 'text=mo%20[0-9]*' "$TMP/app" | sort -u | wc -l)
resent=$(jget "$TMP/s.summary.json" .mo_resent)
check "the SMSC's $N MOs were all acknowledged by emgd ($(jget "$TMP/s.summary.json" .mo_acked))" \
  [ "$(jget "$TMP/s.summary.json" .mo_acked)" = $N ]
check "every MO reached the application: $distinct distinct of $N" [ "$distinct" = $N ]
check "none twice beyond what the SMSC sent again: $((got - distinct)) twice, $resent sent again" \
  [ $((got - distinct)) -le "$resent" ]
first=$(grep -m1 '^GET /mo?' "$TMP/app")
check "Kannel's escapes for an MO: %p the handset (+ international, as Kannel), %P the number it sent to, %k %s its words, %i the SMSC" \
  grep -Eq '^GET /mo\?phone=%2B4917012345&to=5555&text=mo%20[0-9]+&kw=mo&n=[0-9]+&smsc=smsc ' <<< "$first"
check "emgd retried while the application was down (logged)" grep -q "did not answer" "$TMP/g2.log"
finish
