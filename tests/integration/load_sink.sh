#!/usr/bin/env bash
# load_sink.sh PROTOCOL - emgload against emgsink over PROTOCOL (smpp, ucp or cimd2):
# every message acked and recorded once with its text, every receipt back;
# fail and undeliv rates counted the same on both sides; emgsink killed and
# restarted mid-run without emgload losing a message.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
PROTO=$2
source "$(dirname "$0")/lib.sh"

N=3000

# 1. Everything acked, recorded once, receipts back.
start_sink a "$PROTO" --dlr-delay 0-300
rc=0
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$SINK_PORT_a" --connections 4 --window 20 \
  --count $N --dlr --wait-dlr 10 --json --quiet --give-up 20 > "$TMP/a.json" || rc=$?
stop_sink a
check "emgload exits 0 when all went through" [ $rc = 0 ]
check "all $N acked" [ "$(jget "$TMP/a.json" .acked)" = $N ]
check "none refused or unanswered" [ "$(jget "$TMP/a.json" '.refused + .unanswered')" = 0 ]
check "all $N receipts back, none unknown" [ "$(jget "$TMP/a.json" '.receipts, .receipts_unknown' | tr '\n' ' ')" = "$N 0 " ]
check "record holds each sequence number once" record_has_each_seq_once "$TMP/a.record" $N
check "record texts are the full 145 characters" \
  [ "$(awk -F'\t' 'length($3) != 145' "$TMP/a.record" | wc -l)" = 0 ]
check "sink counts match: accepted $N, receipts acked $N" \
  [ "$(jget "$TMP/a.summary.json" '.accepted, .receipts_acked' | tr '\n' ' ')" = "$N $N " ]
check "4 binds" [ "$(jget "$TMP/a.summary.json" .binds)" = 4 ]

# 2. UCS2 text survives.
start_sink u "$PROTO" --dlr-delay 0-0
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$SINK_PORT_u" --count 50 --encoding ucs2 \
  --length 60 --json --quiet --give-up 20 > "$TMP/u.json" || true
stop_sink u
check "ucs2: 50 acked" [ "$(jget "$TMP/u.json" .acked)" = 50 ]
check "ucs2: Cyrillic text recorded" grep -q "Привет, мир" "$TMP/u.record"

# 3. Rate and duration: --rate holds the pace over all connections; --duration ends on time.
#    Never faster than the rate, on any machine; no slower than this machine
#    allows, which the same 2000 unpaced show first (a slow or busy machine
#    takes longer for both: the bound on the paced run moves with it).
start_sink r "$PROTO" --user acme --password s3cret
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$SINK_PORT_r" --user acme --password s3cret \
  --connections 3 --window 50 --count 2000 --json --quiet --give-up 20 > "$TMP/r0.json" || true
flat_ms=$(jget "$TMP/r0.json" '.elapsed_s * 1000 | floor' 2>/dev/null || true)
[[ "$flat_ms" =~ ^[0-9]+$ ]] || flat_ms=0
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$SINK_PORT_r" --user acme --password s3cret \
  --connections 3 --window 50 --count 2000 --rate 2000 --json --quiet --give-up 20 > "$TMP/r.json" || true
check "rate 2000/s for 2000 messages takes about a second (unpaced here: $flat_ms ms)" \
  between "$(jget "$TMP/r.json" '.elapsed_s * 1000 | floor')" 850 $((1400 + 2 * flat_ms))
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$SINK_PORT_r" --user acme --password s3cret \
  --duration 1 --rate 500 --json --quiet --give-up 20 > "$TMP/d.json" || true
# At most the rate allows in the second (and so not the default --count of
# 1000); at least a few, far below what any machine sends in a second.
check "duration 1 s at 500/s sends about 500, no more ($(jget "$TMP/d.json" .acked))" \
  between "$(jget "$TMP/d.json" .acked)" 100 600
rc=0
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$SINK_PORT_r" --user acme --password wrong \
  --count 10 --json --quiet --give-up 2 > "$TMP/w.json" || rc=$?
stop_sink r
check "wrong password: nothing acked, exit status 1" [ "$(jget "$TMP/w.json" .acked)/$rc" = "0/1" ]
check "wrong password: the sink counted refused binds" [ "$(jget "$TMP/r.summary.json" .binds_refused)" -ge 1 ]

# 4. Fail and undeliv rates: what the sink refused is what emgload saw refused.
start_sink f "$PROTO" --dlr-delay 0-100 --fail-rate 0.1 --undeliv-rate 0.2
rc=0
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$SINK_PORT_f" --connections 2 --window 10 \
  --count $N --dlr --wait-dlr 10 --json --quiet --give-up 20 > "$TMP/f.json" || rc=$?
stop_sink f
check "emgload exits 1 when something was refused" [ $rc = 1 ]
refused=$(jget "$TMP/f.json" .refused)
check "fail rate: refused counted the same by both ($refused)" \
  [ "$refused" = "$(jget "$TMP/f.summary.json" .refused)" ]
check "fail rate: about 10 % refused (200..400 of $N)" between "$refused" 200 400
check "fail rate: acked + refused = $N" [ "$(jget "$TMP/f.json" '.acked + .refused')" = $N ]
undeliv=$(jget "$TMP/f.json" .receipts_undeliverable)
check "undeliv rate: counted the same by both ($undeliv)" \
  [ "$undeliv" = "$(jget "$TMP/f.summary.json" .receipts_undeliverable)" ]
acked=$(jget "$TMP/f.json" .acked)
check "undeliv rate: about 20 % of receipts" between "$undeliv" $((acked * 14 / 100)) $((acked * 26 / 100))

# 5. emgsink killed mid-run and restarted on the same port: every message acked.
# It is stopped first, so that the windows are full of unanswered submits when
# it dies: those must be sent again.
start_sink k1 "$PROTO"
port=$SINK_PORT_k1
"$BIN/emgload" --protocol "$PROTO" --connect "127.0.0.1:$port" --connections 3 --window 20 \
  --count 20000 --rate 8000 --timeout 2000 --json --quiet --give-up 20 > "$TMP/k.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")
# Mid-run (a thousand in of the 20000), however long a busy machine took to get there.
k1_has_some() { [ "$(record_count k1)" -ge 1000 ]; }
wait_until 300 k1_has_some || true
kill -STOP "$SINK_PID_k1"
sleep 0.3
kill -KILL "$SINK_PID_k1"
wait "$SINK_PID_k1" 2>/dev/null || true
sleep 0.5
SINK_FIXED_PORT=$port start_sink k2 "$PROTO"
wait "$load_pid" || true
stop_sink k2
check "after a sink crash: all 20000 acked" [ "$(jget "$TMP/k.json" .acked)" = 20000 ]
check "after a sink crash: outstanding messages were resubmitted" [ "$(jget "$TMP/k.json" .resubmits)" -gt 0 ]
check "after a sink crash: nothing refused or unanswered" [ "$(jget "$TMP/k.json" '.refused + .unanswered')" = 0 ]

finish
