#!/usr/bin/env bash
# crash.sh BUILD [KILLS] [COUNT] - with persist on, emgd is killed with
# SIGKILL at random moments under load and restarted each time. At the end
# every message emgload saw acked reached the SMSC and its receipt came
# back; duplicates at the sink (acks lost in a crash, so emgload sent again)
# are counted and reported. bench/crash.sh runs it bigger (10 kills, 200,000).
# Segments of 1 MiB, so that the kills also land while segments are
# rotated, deleted, compacted and their files reused.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
KILLS=${2:-3}
COUNT=${3:-20000}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --dlr-delay 0-1000
ucp=$(free_port)
mkdir -p "$TMP/spool"
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 12; persist = true; spool_dir = "$TMP/spool"; id_window = 100; journal_segment_mb = 1; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 4;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 4;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; }
);
routes = ( { to = "smpp-out"; } );
CONF
start_emgd g0 "$TMP/emgd.conf"
wait_port "$ucp"
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 4 --window 20 --count "$COUNT" --rate 4000 --dlr --wait-dlr 30 --timeout 3000 \
  --missing "$TMP/missing" --json --quiet --give-up 60 > "$TMP/load.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")
for k in $(seq 1 "$KILLS"); do
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.8 + (r % 100) / 100 }')"
  kill_emgd "g$((k - 1))"
  start_emgd "g$k" "$TMP/emgd.conf"
  wait_port "$ucp"
done
wait "$load_pid" || true
for _ in $(seq 600); do grep -q "in flight 0," "$TMP/g$KILLS.log" 2>/dev/null && break; sleep 0.1; done
stop_emgd "g$KILLS" 20
stop_sink s

acked=$(jget "$TMP/load.json" .acked)
check "all $COUNT acked in the end (resubmitted after each crash: $(jget "$TMP/load.json" .resubmits))" [ "$acked" = "$COUNT" ]
check "every acked message reached the SMSC" record_seen_all "$TMP/s.record" "$COUNT"
dups=$(grep -o 'emgload #[0-9]*' "$TMP/s.record" | sort | uniq -d | wc -l)
echo "duplicates at the SMSC after $KILLS crashes: $dups (acks lost in a crash make emgload send again)"
check "duplicates stay within the in-flight windows of the crashes ($dups <= $((KILLS * 4 * 20 * 2)))" \
  [ "$dups" -le $((KILLS * 4 * 20 * 2)) ]
check "every acked message's receipt came back ($(jget "$TMP/load.json" .receipts) of $COUNT)" \
  [ "$(jget "$TMP/load.json" .receipts)" = "$COUNT" ]
check "each restart recovered from the journal" [ "$(grep -l 'journal: ' "$TMP"/g[1-9]*.log | wc -l)" = "$KILLS" ]
grep -h "segments deleted" "$TMP/g$KILLS.log" || true

# One recipient, 40 messages a second: each gets the next SCTS second, so
# its stamps run a second further ahead of the clock with each message. A
# kill after a minute's worth of them: the next process must still start
# past all of them, or two messages share (AdC, SCTS) and their receipts mix.
start_sink h smpp --dlr-delay 5000-5000
sed -i -e "s|127.0.0.1:$SINK_PORT_s|127.0.0.1:$SINK_PORT_h|" "$TMP/emgd.conf"
start_emgd h0 "$TMP/emgd.conf"
wait_port "$ucp"
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --to 4915550001234:13 --count 120 --rate 40 --dlr --wait-dlr 20 --timeout 3000 \
  --json --quiet --give-up 30 > "$TMP/hot.json" &
hot_pid=$!
STARTED_PIDS+=("$hot_pid")
sleep 1.6
kill_emgd h0
start_emgd h1 "$TMP/emgd.conf"
wait "$hot_pid" || true
stop_emgd h1 20
stop_sink h
# A message whose ack the kill cut off is sent again by emgload, and the
# first copy's receipt is then one emgload does not know: at most one per
# resubmit. Mixed-up references show as duplicate receipts and missing ones.
check "one recipient's stamps far ahead of the clock over a kill: 120 acked, 120 receipts, none mixed up" \
  [ "$(jget "$TMP/hot.json" '[.acked, .receipts, .duplicate_acks, .receipts_duplicate, (.receipts_unknown <= .resubmits)] | map(tostring) | join(" ")')" = "120 120 0 0 true" ]
finish
