#!/usr/bin/env bash
# access_log.sh BUILD - general.access_log: one line per message in its
# final state (delivered by its receipt, refused by the SMSC), with its
# account, connectors, addresses and SMSC id; rotated by logrotate's way
# (the file moved, then SIGHUP): the next lines go to a new file.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --user emg --password secret --dlr-delay 0-200 --reject-rate 0.1
UCP_IN=$(free_port)
cat > "$TMP/a.conf" <<CONF
general: { node_id = 7; persist = false; access_log = "$TMP/access.log"; };
connectors = (
$(conf_server in ucp "$UCP_IN" 2)
$(conf_to_sink "$SINK_PORT_s")
CONF
start_emgd a "$TMP/a.conf"
wait_port "$UCP_IN"
load() {  # load NAME COUNT
  "$BIN/emgload" --protocol ucp --connect "127.0.0.1:$UCP_IN" --user load --password secret \
    --count "$2" --dlr --wait-dlr 15 --json --quiet --give-up 30 > "$TMP/$1.json" || true
}
lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
has_lines() { [ "$(lines "$1")" -ge "$2" ]; }
load first 500
check "one line a message in its final state (500)" wait_until 300 has_lines "$TMP/access.log" 500
sleep 1.2
check "... and no more" [ "$(lines "$TMP/access.log")" = 500 ]
delivered=$(grep -c ' state=delivered ' "$TMP/access.log")
rejected=$(grep -c ' state=rejected ' "$TMP/access.log")
check "delivered ($delivered) and rejected ($rejected) add up; the rejections are the SMSC's" \
  [ $((delivered + rejected)) = 500 -a "$rejected" -gt 0 ]
check "each line: time, id, account, connectors, addresses, part, state, SMSC id, error" \
  [ "$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z id=[0-9]+ account=load in=in out=out from=[0-9]+ to=[0-9]+ part=1/1 state=(delivered smsc_id=[0-9]+|rejected smsc_id=-) error=[0-9]+$' "$TMP/access.log")" = 500 ]
check "every message once: 500 distinct ids" [ "$(grep -o ' id=[0-9]* ' "$TMP/access.log" | sort -u | wc -l)" = 500 ]

# logrotate: the file moved away, SIGHUP, the next lines in a new file.
mv "$TMP/access.log" "$TMP/access.log.1"
kill -HUP "$EMGD_PID_a"
wait_until 300 test -e "$TMP/access.log" || true   # reopened (created) on the SIGHUP
load second 100
check "after the rotation, a new file with the next 100" wait_until 300 has_lines "$TMP/access.log" 100
check "... the rotated one kept its 500" [ "$(lines "$TMP/access.log.1")" = 500 ]
stop_emgd a
stop_sink s
finish
