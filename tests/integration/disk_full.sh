#!/usr/bin/env bash
# disk_full.sh BUILD - persist on, the journal on a small tmpfs that fills up
# under load: submits are refused with the protocol's error (never acked
# without being stored), and so are the SMSC's receipts, the condition is
# logged, and once space returns the gateway accepts again by itself. Every
# acked message reaches the SMSC, and its receipt the client.
# Needs root (mount).
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

spool="$TMP/spool"
mkdir -p "$spool"
mount -t tmpfs -o size=6m emg-test-spool "$spool" 2>"$TMP/mount.err" ||
  skip "cannot mount a tmpfs for the spool (needs root): $(cat "$TMP/mount.err")"
umount_spool() { umount -l "$spool" 2>/dev/null || true; }
trap 'umount_spool; cleanup' EXIT
# Most of the space taken: what remains holds a few thousand messages.
dd if=/dev/zero of="$spool/filler" bs=1M count=4 status=none

start_sink s smpp --dlr-delay 2000-2000
ucp=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 14; persist = true; spool_dir = "$spool"; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 4;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 2;
    system_id = "emg"; password = "secret"; window = 50; }
);
routes = ( { to = "smpp-out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$ucp"
load() {   # load NAME COUNT FROM [emgload options]: each run its own source prefix, as its sequence numbers restart
  local name=$1 count=$2 from=$3
  shift 3
  "$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
    --connections 2 --window 10 --count "$count" --from "$from:13" --json --quiet --give-up 20 --timeout 5000 \
    "$@" > "$TMP/$name.json"
}

# 0. 1000 messages acked while there is room, with receipts due 2 s later;
#    the SMSC is stopped before they are due, and goes on once the disk
#    is full.
load pending 1000 4917003 --dlr --wait-dlr 60 &
pending_loader=$!
STARTED_PIDS+=("$pending_loader")
for _ in $(seq 400); do [ "$(wc -l < "$TMP/s.record")" -ge 1000 ] && break; sleep 0.05; done
kill -STOP "$SINK_PID_s"

# 1. The disk fills: some submits are refused, none acked without its record.
load full 20000 4917001 || true
full_acked=$(jget "$TMP/full.json" .acked)
full_refused=$(jget "$TMP/full.json" .refused)
check "with the disk full, submits were refused ($full_refused of 20000)" [ "$full_refused" -gt 0 ]
check "before it filled, some were acked ($full_acked)" [ "$full_acked" -gt 0 ]
check "every submit was acked or refused ($full_acked + $full_refused)" [ $((full_acked + full_refused)) = 20000 ]
wait_file "$TMP/g.log"
for _ in $(seq 300); do grep -q "cannot write" "$TMP/g.log" && break; sleep 0.1; done
check "the log says why (no space)" grep -q "journal in $spool cannot write: .*No space left on device" "$TMP/g.log"

# The receipts come while it is full: refused for now (the journal cannot
# keep what they change), and sent again by the SMSC.
kill -CONT "$SINK_PID_s"
sleep 3

# 2. Space comes back: the gateway resumes by itself.
rm -f "$spool/filler"
wait "$pending_loader" || true
check "the receipts refused meanwhile came again: all 1000 reached the client" \
  [ "$(jget "$TMP/pending.json" .acked)" = 1000 -a "$(jget "$TMP/pending.json" .receipts)" = 1000 ]
for _ in $(seq 300); do grep -q "writes again" "$TMP/g.log" && break; sleep 0.1; done
check "the log says it writes again" grep -q "journal in $spool writes again" "$TMP/g.log"
load again 2000 4917002
check "after space returned every submit was acked" [ "$(jget "$TMP/again.json" .acked)" = 2000 ]

# 3. Nothing acked was lost, nothing refused was sent.
for _ in $(seq 600); do grep -q "in flight 0," "$TMP/g.log" 2>/dev/null && break; sleep 0.1; done
stop_emgd g 20
stop_sink s
check "receipts that came while the disk was full were refused for now ($(jget "$TMP/s.summary.json" .receipts_nacked))" \
  [ "$(jget "$TMP/s.summary.json" .receipts_nacked)" -gt 0 ]
# The submits in flight when the disk filled (2 connections x window 10)
# were journaled into the batch that failed: they waited for space, were
# stored and sent then, but emgload had given up on their acks by then.
sent=$(wc -l < "$TMP/s.record")
acked=$((full_acked + 2000 + 1000))
check "every acked message reached the SMSC ($sent >= $acked)" [ "$sent" -ge "$acked" ]
check "beyond those, at most the windows in flight when the disk filled ($((sent - acked)) <= 20)" \
  [ $((sent - acked)) -le 20 ]
dups=$(awk -F'\t' '{ split($3, w, " "); print substr($1, 1, 7), w[2] }' "$TMP/s.record" | sort | uniq -d | wc -l)
check "no message reached the SMSC twice ($dups)" [ "$dups" = 0 ]
finish
