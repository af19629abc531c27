#!/usr/bin/env bash
# http_nonreader.sh BUILD - backpressure on the HTTP server connector: a
# client pipelines 1,000,000 small requests on one connection (33 MB) and
# never reads an answer. emgd stops reading from it once 256 KiB of answers
# are unsent, so the client's sending stalls (the kernel's buffers full)
# long before it has sent them all, emgd's RSS stays within 64 MB of what
# it was before (sampled every 0.1 s), and another client's submit over the
# same connector is answered 202 while the first is stalled.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

REQUESTS=1000000
RSS_MARGIN_KB=$((64 * 1024))       # the bound checked
RSS_KILL_KB=$((512 * 1024))        # the client stops beyond this (a failing emgd)

# Under AddressSanitizer freed memory waits in a quarantine (256 MB by
# default) before it is used again, and each answer allocates: bounded
# here so that RSS still shows what is held, not what waits to be reused.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
start_sink out smpp
web=$(free_port)
cat > "$TMP/h.conf" <<CONF
general: { node_id = 6; persist = false; };
connectors = (
$(conf_server web http "$web" 1)
$(conf_to_sink "$SINK_PORT_out")
CONF
start_emgd h "$TMP/h.conf"
wait_port "$web"
sleep 0.5

# The client: pipelines GETs of a page that does not exist (each answered
# at once, 404) without ever reading; stops when all are sent, when no byte
# has gone for 3 s (stalled), when emgd closes the connection, or when
# emgd's RSS passes base + RSS_KILL_KB. Prints a JSON summary; its peak is
# emgd's RSS sampled every 0.1 s meanwhile. While stalled, it leaves the
# file FLAG for the other client's turn, and waits for FLAG.done.
python3 - "$web" "$EMGD_PID_h" "$REQUESTS" "$RSS_KILL_KB" "$TMP/stalled" > "$TMP/flood.json" <<'PY' &
import json, os, select, socket, sys, time
port, pid, total, kill_kb, flag = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def rss_kb():
    try:
        with open("/proc/%s/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
base = peak = rss_kb()
req = b"GET /nope HTTP/1.1\r\nHost: emg\r\n\r\n"
data = req * total
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # never read: small
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)  # what is sent is what emgd's side holds
s.setblocking(False)
sent, outcome, start = 0, "all sent", time.monotonic()
last_progress = next_sample = start
while sent < len(data):
    now = time.monotonic()
    if now >= next_sample:
        peak = max(peak, rss_kb())
        next_sample = now + 0.1
        if peak > base + kill_kb:
            outcome = "emgd RSS past the kill limit"
            break
    if now - last_progress >= 3:
        outcome = "stalled"
        break
    if now - start >= 120:
        outcome = "still sending after 120 s"
        break
    select.select([], [s], [], 0.1)
    try:
        n = s.send(data[sent:sent + 65536])
    except BlockingIOError:
        continue
    except OSError:
        outcome = "closed by emgd"
        break
    if n > 0:
        sent += n
        last_progress = time.monotonic()
if outcome == "stalled":
    open(flag, "w").write("stalled")
    end = time.monotonic() + 60
    while not os.path.exists(flag + ".done") and time.monotonic() < end:
        peak = max(peak, rss_kb())
        time.sleep(0.1)
print(json.dumps({"outcome": outcome, "requests_sent": sent // len(req), "base_kb": base, "peak_kb": peak,
                  "secs": round(time.monotonic() - start, 1)}))
PY
flood=$!
STARTED_PIDS+=("$flood")

# The other client, once the first is stalled (or the flood is over).
stalled_or_over() { [ -e "$TMP/stalled" ] || ! kill -0 "$flood" 2>/dev/null; }
wait_until 1500 stalled_or_over || true
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -u load:secret -H 'Content-Type: application/json' \
  -d '{"from":"4912345","to":"4915550001","text":"meanwhile"}' "http://127.0.0.1:$web/api/v1/messages")
touch "$TMP/stalled.done"
wait "$flood" 2>/dev/null || true

echo "flood: $(cat "$TMP/flood.json" 2>/dev/null)"
outcome=$(jq -r .outcome "$TMP/flood.json" 2>/dev/null)
sent=$(jq -r .requests_sent "$TMP/flood.json" 2>/dev/null)
base=$(jq -r .base_kb "$TMP/flood.json" 2>/dev/null)
peak=$(jq -r .peak_kb "$TMP/flood.json" 2>/dev/null)
check "a client pipelining $REQUESTS requests it never reads is stopped: $outcome after ${sent:-?} requests" \
  bash -c "[ '$outcome' = stalled ] || [ '$outcome' = 'closed by emgd' ]"
check "... well before it has sent them all" between "${sent:-$REQUESTS}" 0 $((REQUESTS / 2))
check "emgd RSS meanwhile (${peak:-?} kB) within ${RSS_MARGIN_KB} kB of before (${base:-?} kB)" \
  between "${peak:-0}" 1 $(( ${base:-0} + RSS_MARGIN_KB ))
check "another client's submit is answered 202 while it is stalled ($code)" [ "$code" = 202 ]
check "emgd is still up" kill -0 "$EMGD_PID_h"
stop_emgd h
stop_sink out
finish
