#!/usr/bin/env bash
# pause_restart.sh BUILD - a pause outlives a restart, and a stop while
# paused says what it kept. With persist on, 100 messages wait behind a
# paused SMSC connector; SIGTERM does not wait for them, logs at INFO that
# the journal keeps them (no WARN about messages in flight, none about the
# unbind we asked for); the next start says the connector is still paused
# and sends none of them until the operator resumes it, then each exactly
# once. The file of paused connectors: a name no longer configured dropped,
# a line that is no name an error with the file and line (the named ones
# stay paused), a file that cannot be read stops the start. With persist
# off the pause is kept too, and the stop says at WARN what it lost; with
# no spool_dir to write it in, the pause says at WARN it is not kept.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --user emg --password secret
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=pause-restart-token-123
PAUSE_FILE="$TMP/spool/paused-connectors"
write_conf() {  # write_conf FILE PERSIST SPOOL
  cat > "$1" <<CONF
general: { node_id = 4; persist = $2; spool_dir = "$3"; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
connectors = (
$(conf_server in smpp "$SMPP_IN" 1)
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 1;
    system_id = "emg"; password = "secret"; window = 10; reconnect_min = 100; reconnect_max = 300; }
);
routes = ( { to = "out"; } );
CONF
}
write_conf "$TMP/p.conf" true "$TMP/spool"

paused_in_api() {  # paused_in_api: out's "paused" as the admin API shows it
  admin_call /api/connectors | jq -r '.connectors[] | select(.name == "out") | .paused'
}
queued_out() { admin_call /api/queues | jq -r '.queues[] | select(.connector == "out") | .queued'; }
queued_is() { [ "$(queued_out)" = "$1" ]; }
# warn_lines FILE [REGEX]: the WARN and ERROR lines of an emgd log (from
# the first line like REGEX on, when given).
warn_lines() { sed -n "/${2:-.}/,\$p" "$1" | grep -E ' (WARN|ERROR) ' || true; }
# seconds_between FILE REGEX1 REGEX2: seconds from the first line like REGEX1
# to the first like REGEX2, by their time stamps (the log's own clock, not
# this script's, which a busy machine slows).
seconds_between() {
  local a b
  a=$(grep -Em1 -- "$2" "$1" | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | head -1)
  b=$(grep -Em1 -- "$3" "$1" | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | head -1)
  [ -n "$a" ] && [ -n "$b" ] || { echo "no time stamps for '$2' or '$3' in $1" >&2; echo 99; return; }
  echo $(( ($(date -u -d "1970-01-01 $b" +%s) - $(date -u -d "1970-01-01 $a" +%s) + 86400) % 86400 ))
}

# paused_with_waiting NAME CONF PAUSE_FILE LOAD PREFIX N LABEL: start emgd
# NAME, pause out (the pause written to PAUSE_FILE), send N messages to
# PREFIX with emgload LOAD; they are acked and wait in out's queue.
paused_with_waiting() {
  local name=$1 conf=$2 file=$3 load=$4 prefix=$5 n=$6 label=$7
  start_emgd "$name" "$conf"
  wait_port "$SMPP_IN"
  wait_port "$ADMIN_PORT"
  wait_bound "$name" out 1
  check "${label}emgctl pause out" [ "$(admin_ctl pause out)" = "out paused" ]
  check "${label}the pause is written to $(basename "$(dirname "$file")")/paused-connectors" grep -qx out "$file"
  smpp_load "$load" "$prefix:10" "$n"
  check "${label}$n submits acked while paused" [ "$(jget "$TMP/$load.json" .acked)" = "$n" ]
  check "${label}the $n wait in out's queue" wait_until 300 queued_is "$n"
}

# --- 1. Paused, 100 messages waiting, SIGTERM.
paused_with_waiting a "$TMP/p.conf" "$PAUSE_FILE" first 4917 100 ""
check "the SMSC got none of them" [ "$(record_count s)" = 0 ]
stop_emgd a
check "the stop logs at INFO that the journal keeps the 100, all behind paused connectors" \
  grep -Eq ' INFO .*stopped: 100 messages kept in the journal for the next start \(100 behind paused connectors\)$' \
  "$TMP/a.log"
check "no WARN that messages were still in flight" bash -c "! grep -q 'still in flight' '$TMP/a.log'"
check "the unbind we asked for is INFO 'unbound from HOST (stopping)'" \
  grep -Eq " INFO .*instance 0: unbound from 127\.0\.0\.1:$SINK_PORT_s \(stopping\)$" "$TMP/a.log"
check "no 'connection ... lost: unbound' on the stop" bash -c "! grep -q 'lost: unbound' '$TMP/a.log'"
check "no WARN or ERROR line from the SIGTERM on (got: $(warn_lines "$TMP/a.log" 'SIGTERM: stopping' | head -3))" \
  [ -z "$(warn_lines "$TMP/a.log" 'SIGTERM: stopping')" ]
stop_s=$(seconds_between "$TMP/a.log" 'SIGTERM: stopping' 'emgd stopped')
check "the stop did not wait for the paused messages: ${stop_s} s by the log, the drain waits 10" \
  between "$stop_s" 0 5

# --- 2. The next start: still paused, nothing sent until the resume.
start_emgd b "$TMP/p.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
check "the start says out is still paused, with its 100 waiting and how to resume" \
  logged "$TMP/b.log" ' INFO .*connector out paused \(kept from before the stop\): 100 messages waiting; resume with emgctl resume out$'
check "the admin API says out is paused" [ "$(paused_in_api)" = true ]
check "its queue holds the 100 again" wait_until 300 queued_is 100
wait_bound b out 1
# Bound for a while, the window open: a pause lost at start would send now.
sleep 1.5
check "the SMSC got none of them while paused (got $(record_count s))" [ "$(record_count s)" = 0 ]
check "emgctl resume out" [ "$(admin_ctl resume out)" = "out resumed" ]
check "the file no longer names out" bash -c "! grep -qx out '$PAUSE_FILE'"
check "after the resume the SMSC got all 100" wait_until 300 bash -c "[ \$(grep -o 'emgload #[0-9]*' '$TMP/s.record' | sort -u | wc -l) = 100 ]"
sleep 0.5
check "... each exactly once" record_has_each_seq_once "$TMP/s.record" 100
stop_emgd b
check "a stop with nothing waiting says so" logged "$TMP/b.log" ' INFO .*stopped: no messages left in flight$'
check "resumed before the stop: its unbind INFO too, no WARN" \
  [ -z "$(warn_lines "$TMP/b.log" 'SIGTERM: stopping')" ]

# --- 3. The file as an operator may leave it: a connector gone from the
#     configuration, a garbled line. The named connector stays paused.
printf 'out\nghost\nnot a name!\n' > "$PAUSE_FILE"
start_emgd c "$TMP/p.conf"
wait_port "$ADMIN_PORT"
check "a garbled line: an ERROR with the file and line" \
  logged "$TMP/c.log" " ERROR .*$PAUSE_FILE:3: not a connector name"
check "a connector no longer configured: logged with its line, dropped" \
  logged "$TMP/c.log" " WARN .*$PAUSE_FILE:2: connector ghost was paused before the stop but is no longer in the configuration"
check "out, on a readable line, is paused (nothing resumed on a guess)" [ "$(paused_in_api)" = true ]
check "emgctl resume out" [ "$(admin_ctl resume out)" = "out resumed" ]
check "the resume rewrote the file: neither out, ghost nor the garbled line" \
  bash -c "! grep -Eq '^(out|ghost|not a name!)\$' '$PAUSE_FILE'"
stop_emgd c

# --- 4. A file that cannot be read: no start (which connectors were held is unknown).
rm -f "$PAUSE_FILE"
mkdir "$PAUSE_FILE"
start_emgd d "$TMP/p.conf"
rc=0
wait_until 300 bash -c "! kill -0 $EMGD_PID_d 2>/dev/null" || rc=1
check "an unreadable file of paused connectors stops the start" [ "$rc" = 0 ]
wait "$EMGD_PID_d" 2>/dev/null && rc=0 || rc=$?
check "... with exit status 1 ($rc)" [ "$rc" = 1 ]
printf -v EMGD_STOPPED_d '%s' 1
check "... and says why, naming the file" \
  logged "$TMP/d.log" " ERROR .*paused connectors: $PAUSE_FILE: not a regular file; not starting"
rmdir "$PAUSE_FILE"

# --- 5. Persist off: the pause is kept all the same (in spool_dir), and
#     the stop says at WARN that the waiting messages are lost.
write_conf "$TMP/q.conf" false "$TMP/spool-off"
paused_with_waiting e "$TMP/q.conf" "$TMP/spool-off/paused-connectors" second 4918 20 "persist off: "
stop_emgd e
check "persist off: the stop says at WARN that the 20 are lost, persist being off" \
  grep -Eq ' WARN .*stopped: 20 messages lost \(20 behind paused connectors\): persist is off' "$TMP/e.log"
check "persist off: no WARN that messages were still in flight" bash -c "! grep -q 'still in flight' '$TMP/e.log'"
start_emgd f "$TMP/q.conf"
wait_port "$ADMIN_PORT"
check "persist off: still paused after the restart" \
  logged "$TMP/f.log" ' INFO .*connector out paused \(kept from before the stop\): 0 messages waiting; resume with emgctl resume out$'
check "persist off: the admin API says paused" [ "$(paused_in_api)" = true ]
stop_emgd f
check "none of the lost 20 reached the SMSC" [ "$(grep -c $'\t4918' "$TMP/s.record" || true)" = 0 ]

# --- 6. Persist off and a spool_dir that cannot be made: the pause holds
#     now, and says at WARN (not ERROR) that it is not kept.
write_conf "$TMP/n.conf" false "$TMP/no-such-folder/spool"
start_emgd g "$TMP/n.conf"
wait_port "$ADMIN_PORT"
check "persist off, no spool_dir: emgctl pause out" [ "$(admin_ctl pause out)" = "out paused" ]
check "... paused now" [ "$(paused_in_api)" = true ]
check "... a WARN says the pause is not kept for the next start" \
  logged "$TMP/g.log" ' WARN .*paused by the operator, not kept for the next start \(persist off, and spool_dir cannot be written: '
check "... and no ERROR" bash -c "! grep -q ' ERROR ' '$TMP/g.log'"
stop_emgd g
stop_sink s
finish
