#!/usr/bin/env bash
# mo_join.sh BUILD - long MOs joined before the application gets them: an
# SMSC (emgsink --mo-parts 3) sends 40 MOs in three concatenated parts each;
# emgd (persist on) pushes them to an application over HTTP, and is killed
# with SIGKILL while parts wait for their siblings. Every MO reaches the
# application whole, as one request with its three texts in order, none in
# parts.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

N=40
start_sink s smpp --mo $N --mo-parts 3 --mo-rate 10 --mo-from 4917012345 --mo-to 5555
app=$(free_port)
perl "$(dirname "$0")/http_catch.pl" "$TMP/app.port" "$TMP/app" 100000 "$app" &
STARTED_PIDS+=($!)
wait_file "$TMP/app.port"
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 43; persist = true; spool_dir = "$TMP/spool"; };
connectors = (
  { name = "smsc"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    system_id = "emg"; password = "secret"; reconnect_min = 100; },
  { name = "app"; protocol = "http"; mode = "client"; connections = 2;
    url = "http://127.0.0.1:$app/mo?phone=%p&text=%b"; }
);
routes = ( { from = "smsc"; to = "app"; } );
CONF
start_emgd g "$TMP/emgd.conf"
whole() { grep -o 'text=mo%20[0-9]*%2F1%20mo%20[0-9]*%2F2%20mo%20[0-9]*%2F3%20 ' "$TMP/app" 2>/dev/null | sort -u | wc -l; }
# The MOs come at 10 a second, their parts together: some wait for their
# siblings when emgd is killed, a moment after the first five reached the
# application (not after a fixed time, which a busy machine may spend binding).
some_whole() { [ "$(whole)" -ge 5 ]; }
wait_until 300 some_whole || true
sleep 0.5
kill_emgd g
start_emgd g2 "$TMP/emgd.conf"
for _ in $(seq 300); do
  [ "$(whole)" -ge $N ] && break
  sleep 0.1
done
check "every MO reached the application whole: $(whole) of $N" [ "$(whole)" = $N ]
check "each whole MO is one message: the parts of one number together" \
  bash -c "! grep -oE 'text=mo%20([0-9]+)%2F1%20mo%20([0-9]+)%2F2%20mo%20([0-9]+)%2F3%20 ' '$TMP/app' |
    awk -F'%20|%2F' '\$2 != \$5 || \$2 != \$8' | grep -q ."
check "no part reached it alone" [ "$(grep -c 'text=mo%20[0-9]*%2F[123]%20 ' "$TMP/app" || true)" = 0 ]
check "the restart found parts to join" logged "$TMP/g2.log" "[1-9][0-9]* parts of long MOs joined or waiting"
stop_emgd g2 20
stop_sink s
check "the SMSC's $((N * 3)) parts were all acknowledged ($(jget "$TMP/s.summary.json" .mo_acked))" \
  [ "$(jget "$TMP/s.summary.json" .mo_acked)" = $((N * 3)) ]
finish
