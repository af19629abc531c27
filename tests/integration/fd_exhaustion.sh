#!/usr/bin/env bash
# fd_exhaustion.sh BUILD - emgd out of file descriptors (here a hard limit
# of 64, filled by idle HTTP clients): its SMPP listener pauses instead of
# spinning on EMFILE, says so once, and accepts again as soon as
# descriptors are free.
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
web=$(free_port)
{
  echo 'general: { node_id = 17; persist = false; };'
  echo 'connectors = ('
  conf_server smpp-in smpp "$smpp" 2
  conf_server web http "$web" 1
  conf_to_sink "$SINK_PORT_s"
} > "$TMP/emgd.conf"
EMGD_PREFIX="prlimit --nofile=64:64" start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
wait_port "$web"
check "emgd logs its open files limit" bash -c "sleep 0.3; grep -q 'open files limit 64' '$TMP/g.log'"

# 100 idle connections to the HTTP connector take every free descriptor;
# then 20 SMPP clients knock. Held open by one python process, in the
# background, until told to let go.
python3 - "$web" "$smpp" "$TMP/hold" <<'PY' &
import os, socket, sys, time
web, smpp, flag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = []
for port, n in ((web, 100), (smpp, 20)):
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        held.append(s)
        time.sleep(0.005)
open(flag, "w").write("held")
for _ in range(600):
    if not os.path.exists(flag):
        break
    time.sleep(0.05)
PY
holder=$!
STARTED_PIDS+=("$holder")
wait_file "$TMP/hold" 200 || true

cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$EMGD_PID_g/stat"; }
before=$(cpu)
sleep 3
spent=$(( $(cpu) - before ))
check "out of descriptors for 3 s, emgd spent $spent ms of CPU (no spinning: < 300)" [ "$spent" -lt 300 ]
rm -f "$TMP/hold"
wait "$holder" 2>/dev/null || true
read -r ok refused secs < <(python3 "$(dirname "$0")/smpp_client.py" bind "127.0.0.1:$smpp" load secret 1)
check "once they are gone, an SMPP client binds ($ok/$refused in $secs s)" [ "$ok/$refused" = 1/0 ]
stop_emgd g
stop_sink s
check "the listener said once that it paused" \
  [ "$(grep -c 'listener: cannot accept: Too many open files; accepting paused 100 ms at a time' "$TMP/g.log")" = 1 ]
check "... and that it accepts again" grep -q 'listener: accepting again, after [0-9]* pauses' "$TMP/g.log"
check "the log stayed short ($(wc -c < "$TMP/g.log") bytes)" [ "$(wc -c < "$TMP/g.log")" -lt 100000 ]
finish
