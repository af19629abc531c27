#!/usr/bin/env bash
# squatter.sh BUILD - connections that never bind cannot keep a server
# connector's instances from other clients: a squatter at 127.0.0.1 keeps 20
# connections open that send nothing, reconnecting as fast as each is
# closed; once its connections have had a second to bind, a client at
# 127.0.0.2 binds 30 times, all within a second, each taking the instance
# of a squatting connection that had not bound.
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
{
  echo 'general: { node_id = 18; persist = false; };'
  echo 'connectors = ('
  conf_server smpp-in smpp "$smpp" 4
  conf_to_sink "$SINK_PORT_s"
} > "$TMP/emgd.conf"
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"

python3 - "$smpp" "$TMP/squatting" <<'PY' &
import os, selectors, socket, sys, time
port, flag = int(sys.argv[1]), sys.argv[2]
sel = selectors.DefaultSelector()
def open_one():
    s = socket.socket(); s.setblocking(False); s.connect_ex(("127.0.0.1", port))
    sel.register(s, selectors.EVENT_READ)
for _ in range(20):
    open_one()
open(flag, "w").write("on")
reopened, deadline = 0, time.monotonic() + 30
while os.path.exists(flag) and time.monotonic() < deadline:
    for key, _ in sel.select(0.05):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:   # closed by emgd: straight back in
            sel.unregister(key.fileobj); key.fileobj.close(); open_one(); reopened += 1
open(flag + ".count", "w").write(str(reopened))
PY
squatter=$!
STARTED_PIDS+=("$squatter")
wait_file "$TMP/squatting"
sleep 1.5
read -r ok refused secs < <(python3 "$(dirname "$0")/smpp_client.py" bind "127.0.0.1:$smpp" load secret 30 127.0.0.2)
rm -f "$TMP/squatting"
wait "$squatter" || true
check "with a squatter at 127.0.0.1, 127.0.0.2 bound 30 times of 30 ($ok; $refused refused) in $secs s" \
  [ "$ok/$refused" = 30/0 ]
check "... all 30 within a second" awk -v s="$secs" 'BEGIN { exit !(s < 1) }'
check "the squatter was closed and came back ($(cat "$TMP/squatting.count" 2>/dev/null) times)" \
  [ "$(cat "$TMP/squatting.count" 2>/dev/null || echo 0)" -gt 0 ]
stop_emgd g
stop_sink s
check "refusals beyond the instances are logged at most once each 10 s, with a count ($(grep -c 'instances are in use' "$TMP/g.log"))" \
  bash -c "[ \$(grep -c 'instances are in use' '$TMP/g.log') -le 2 ] && grep -q 'more refused since the last such line' '$TMP/g.log'"
check "the log said why, once" \
  [ "$(grep -c 'which had not bound within 1000 ms, dropped for one from 127.0.0.2' "$TMP/g.log")" = 1 ]
finish
