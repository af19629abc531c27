#!/usr/bin/env bash
# squatter.sh BUILD - connections that never bind cannot keep a server
# connector from other clients. The listener holds every connection until
# its bind proves an account; only then does it get an instance.
#   1. A squatter at 127.0.0.1 keeps 20 connections open that send nothing,
#      reconnecting as fast as each is closed: beyond unbound_per_ip (8) it
#      is closed at once. A client at 127.0.0.2 meanwhile binds 30 times,
#      all within a second.
#   2. Squatters at 127.0.0.3-6 fill all unbound_max (16) slots, each
#      connection reopened at once when closed: each connection from
#      127.0.0.2 closes the oldest slot, and its bind succeeds.
#   3. A connection that trickles its bind a byte at a time is closed at
#      bind_timeout (2 s), not kept open by the trickle.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
{
  echo 'general: { node_id = 18; persist = false; };'
  echo 'connectors = ('
  conf_server smpp-in smpp "$smpp" 4 "bind_timeout = 2000; unbound_per_ip = 8; unbound_max = 16;"
  conf_to_sink "$SINK_PORT_s"
} > "$TMP/emgd.conf"
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"

# squat FLAG CONNECTIONS ADDRESS...: keeps CONNECTIONS open from each
# ADDRESS, sending nothing, each reopened as soon as emgd closes it, until
# FLAG is removed; then writes how many were reopened to FLAG.count.
squat() {
  python3 - "$smpp" "$@" <<'PY' &
import os, selectors, socket, sys, time
port, flag, per = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sel = selectors.DefaultSelector()
def open_one(source):
    s = socket.socket(); s.setblocking(False); s.bind((source, 0)); s.connect_ex(("127.0.0.1", port))
    sel.register(s, selectors.EVENT_READ, source)
for source in sys.argv[4:]:
    for _ in range(per):
        open_one(source)
open(flag, "w").write("on")
reopened, deadline = 0, time.monotonic() + 30
while os.path.exists(flag) and time.monotonic() < deadline:
    for key, _ in sel.select(0.05):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:   # closed by emgd: straight back in
            sel.unregister(key.fileobj); key.fileobj.close(); open_one(key.data); reopened += 1
open(flag + ".count", "w").write(str(reopened))
PY
  STARTED_PIDS+=("$!")
  squatter=$!
}

legit_binds() {
  python3 "$(dirname "$0")/smpp_client.py" bind "127.0.0.1:$smpp" load secret "$1" 127.0.0.2
}

# squat_then_bind NAME BINDS CONNECTIONS ADDRESS...: squatters as squat's,
# given 1.5 s to settle; then BINDS binds from 127.0.0.2; sets ok, refused
# and secs, and leaves the squatters' reopen count in $TMP/NAME.count.
squat_then_bind() {
  local name=$1 binds=$2
  shift 2
  squat "$TMP/$name" "$@"
  wait_file "$TMP/$name"
  sleep 1.5
  read -r ok refused secs < <(legit_binds "$binds")
  rm -f "$TMP/$name"
  wait "$squatter" || true
}

# 1. One address, far past its share.
squat_then_bind squat1 30 20 127.0.0.1
check "with a squatter at 127.0.0.1, 127.0.0.2 bound 30 times of 30 ($ok; $refused refused) in $secs s" \
  [ "$ok/$refused" = 30/0 ]
check "... all 30 within a second" awk -v s="$secs" 'BEGIN { exit !(s < 1) }'
check "the squatter's connections past 8 were closed and came back ($(cat "$TMP/squat1.count" 2>/dev/null) times)" \
  [ "$(cat "$TMP/squat1.count" 2>/dev/null || echo 0)" -gt 0 ]

# 2. Many addresses, every slot taken.
squat_then_bind squat2 10 4 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6
check "with all 16 unbound slots taken by 127.0.0.3-6, 127.0.0.2 bound 10 times of 10 ($ok; $refused refused) in $secs s" \
  [ "$ok/$refused" = 10/0 ]

# 3. A bind trickled a byte each 100 ms.
secs=$(python3 - "$smpp" <<'PY'
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), source_address=("127.0.0.7", 0))
body = b"load\0secret\0\0" + bytes([0x34, 0, 0]) + b"\0"
bind = struct.pack(">IIII", 16 + len(body), 9, 0, 1) + body
start = time.monotonic()
try:
    for i in range(200):
        s.send(bind[i % (len(bind) - 1):][:1])   # never the last byte
        time.sleep(0.1)
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                break
        except BlockingIOError:
            pass
        s.setblocking(True)
except OSError:
    pass
print("%.1f" % (time.monotonic() - start))
PY
)
check "a bind trickled a byte each 100 ms is closed at bind_timeout (after $secs s)" \
  awk -v s="$secs" 'BEGIN { exit !(s >= 1.9 && s < 4) }'

stop_emgd g
stop_sink s
lines=$(grep -c 'connections from its address have not bound yet' "$TMP/g.log")
check "closures for unbound_per_ip are logged at most once each 10 s, with a count ($lines lines)" \
  bash -c "[ $lines -ge 1 ] && [ $lines -le 4 ] && grep -q 'unbound_per_ip; [0-9]* more such since the last such line' '$TMP/g.log'"
check "the log says when all unbound slots are taken" grep -q 'all 16 unbound slots taken (unbound_max); the oldest from another address closed for it' "$TMP/g.log"
bound=$(grep -c 'bound as load' "$TMP/g.log")
check "instances served the 40 binds of 127.0.0.2 only ($bound bound, $(grep 'bound as load' "$TMP/g.log" | grep -vc '127.0.0.2:') from elsewhere)" \
  bash -c "[ $bound = 40 ] && ! grep 'bound as load' '$TMP/g.log' | grep -qv '127.0.0.2:'"
finish
