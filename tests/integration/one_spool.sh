#!/usr/bin/env bash
# one_spool.sh BUILD - one emgd per spool: a second emgd started on the
# spool of a running one refuses to start, naming the PID that holds it,
# before it reads or writes anything there (the spool's files are the same
# to the byte, checked by checksum); --check-config says so as a note;
# once the first has stopped, the next one starts and delivers what the
# first left queued.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

smsc=$(free_port)
ucp=$(free_port)
mkdir -p "$TMP/spool"
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 15; persist = true; spool_dir = "$TMP/spool"; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$smsc"; instances = 1;
    system_id = "emg"; password = "secret"; reconnect_min = 100; }
);
routes = ( { to = "smpp-out"; } );
CONF
# The SMSC is not there yet: 500 messages wait in the first emgd's journal.
start_emgd a "$TMP/emgd.conf"
wait_port "$ucp"
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --count 500 --json --quiet --give-up 20 > "$TMP/load.json" || true
check "the first emgd acked 500 into its journal" [ "$(jget "$TMP/load.json" .acked)" = 500 ]

spool_sum() { (cd "$TMP/spool" && find . -type f -printf '%p %s\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
# Stopped meanwhile, so that nothing it does itself changes the files.
kill -STOP "$EMGD_PID_a"
spool_sum > "$TMP/before.sum"
rc=0; timeout 20 "$BIN/emgd" -c "$TMP/emgd.conf" --foreground 2> "$TMP/b.log" || rc=$?
spool_sum > "$TMP/after.sum"
kill -CONT "$EMGD_PID_a"
check "a second emgd on the same spool exits with status 1 ($rc)" [ "$rc" = 1 ]
check "... saying which emgd holds it" \
  grep -q "spool_dir $TMP/spool is in use by another emgd (PID $EMGD_PID_a): not starting" "$TMP/b.log"
check "... without changing a byte of the spool" cmp -s "$TMP/before.sum" "$TMP/after.sum"
check "... and without replaying it" bash -c "! grep -q 'journal' '$TMP/b.log'"
out=$("$BIN/emgd" -c "$TMP/emgd.conf" --check-config 2>&1) && rc=0 || rc=$?
check "--check-config: the file is good (status $rc), with a note that the spool is held" \
  bash -c "[ $rc = 0 ] && grep -q 'note: spool_dir .* is in use by another emgd (PID $EMGD_PID_a)' <<< '$out'"
check "the first emgd still runs" kill -0 "$EMGD_PID_a"
stop_emgd a

# Its lock goes with it: the next emgd starts and sends the 500.
SINK_FIXED_PORT=$smsc start_sink s smpp
start_emgd c "$TMP/emgd.conf"
for _ in $(seq 1200); do [ "$(wc -l < "$TMP/s.record")" -ge 500 ] && break; sleep 0.05; done
stop_emgd c
stop_sink s
check "the next emgd started on the spool and delivered the 500 the first had kept" \
  record_has_each_seq_once "$TMP/s.record" 500
finish
