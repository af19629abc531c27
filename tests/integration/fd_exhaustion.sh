#!/usr/bin/env bash
# fd_exhaustion.sh BUILD - emgd out of file descriptors (here a hard limit
# of 64, far below what its listeners' shares need, filled by idle
# connections to the SMPP listener from ten addresses): it warns at start
# that the shares do not fit, its SMPP listener pauses instead of spinning
# on EMFILE, says so once, and accepts again as soon as descriptors are
# free.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
{
  echo 'general: { node_id = 17; persist = false; };'
  echo 'connectors = ('
  # bind_timeout: the idle connections stay for the whole test
  conf_server smpp-in smpp "$smpp" 2 "bind_timeout = 60000;"
  conf_to_sink "$SINK_PORT_s"
} > "$TMP/emgd.conf"
EMGD_PREFIX="prlimit --nofile=64:64" start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
check "emgd logs its open files limit" logged "$TMP/g.log" 'open files limit 64'
check "... and warns that its listeners' shares do not fit it" \
  grep -q 'descriptors: listeners may hold 130 (smpp-in 130), emgd itself about [0-9]*; open files limit 64: above the limit' "$TMP/g.log"

# 120 idle connections (12 from each of ten addresses, under
# unbound_per_ip) take every free descriptor. Held open by one python
# process, in the background, until told to let go.
python3 - "$smpp" "$TMP/hold" <<'PY' &
import os, socket, sys, time
smpp, flag = int(sys.argv[1]), sys.argv[2]
held = []
for i in range(120):
    s = socket.socket()
    s.setblocking(False)
    s.bind(("127.0.0.%d" % (10 + i % 10), 0))
    s.connect_ex(("127.0.0.1", smpp))
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
wait_file "$TMP/hold" || true

cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$EMGD_PID_g/stat"; }
before=$(cpu)
sleep 3
spent=$(( $(cpu) - before ))
check "out of descriptors for 3 s, emgd spent $spent ms of CPU (no spinning: < 300)" [ "$spent" -lt 300 ]
rm -f "$TMP/hold"
wait "$holder" 2>/dev/null || true
read -r ok refused secs slowest < <(python3 "$(dirname "$0")/smpp_client.py" bind "127.0.0.1:$smpp" load secret 1)
check "once they are gone, an SMPP client binds ($ok/$refused in $secs s)" [ "$ok/$refused" = 1/0 ]
stop_emgd g
stop_sink s
check "the listener said once that it paused" \
  [ "$(grep -c 'listener: cannot accept: Too many open files; accepting paused 100 ms at a time' "$TMP/g.log")" = 1 ]
check "... and that it accepts again" grep -q 'listener: accepting again, after [0-9]* pauses' "$TMP/g.log"
check "the log stayed short ($(wc -c < "$TMP/g.log") bytes)" [ "$(wc -c < "$TMP/g.log")" -lt 100000 ]
finish
