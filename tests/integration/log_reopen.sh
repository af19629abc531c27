#!/usr/bin/env bash
# log_reopen.sh BUILD - log rotation is not a reload. After logrotate's way
# (the files moved away), SIGUSR1 opens the log and the access log again by
# their names, and the new files get the next lines; a change made to the
# configuration meanwhile is not read (no reload counted, none logged, the
# account it adds absent). SIGHUP then reloads it, and reopens the logs too.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --user emg --password secret
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=log-reopen-token-1234
write_conf() {  # write_conf ACCOUNTS
  cat > "$TMP/r.conf" <<CONF
general: { node_id = 6; persist = false; log_file = "$TMP/emgd.log"; access_log = "$TMP/access.log"; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$SMPP_IN"; instances = 1; },
$(conf_to_sink "$SINK_PORT_s")
accounts = ( $1 );
CONF
}
write_conf '{ name = "load"; password = "secret"; connectors = [ "in" ]; }'
start_emgd r "$TMP/r.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
wait_until 300 grep -q "emg.conn.out: instance 0 bound" "$TMP/emgd.log" || true

reloads() { admin_call /metrics | awk '$1 == "emg_reloads_total" { print $2 }'; }
account_status() { admin_call /api/accounts/late -o /dev/null -w '%{http_code}'; }
lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
has_lines() { [ "$(lines "$1")" -ge "$2" ]; }

smpp_load first 4917:10 5
check "5 messages before the rotation, 5 access log lines" wait_until 300 has_lines "$TMP/access.log" 5
check "no reload yet" [ "$(reloads)" = 0 ]
check "account late is not there yet" [ "$(account_status)" = 404 ]

# An edit under way when logrotate runs: a new account.
write_conf '{ name = "load"; password = "secret"; connectors = [ "in" ]; },
  { name = "late"; password = "secret2"; connectors = [ "in" ]; }'

# logrotate with USR1: the files moved away, then the signal.
mv "$TMP/emgd.log" "$TMP/emgd.log.1"
mv "$TMP/access.log" "$TMP/access.log.1"
kill -USR1 "$EMGD_PID_r"
check "SIGUSR1: a new log file, which says it was reopened" \
  logged "$TMP/emgd.log" ' INFO .*SIGUSR1: log files reopened$'
check "... that line is not in the moved one" bash -c "! grep -q 'SIGUSR1' '$TMP/emgd.log.1'"
check "SIGUSR1 did not reload: the reload count is still 0" [ "$(reloads)" = 0 ]
check "... no reload logged in either file" bash -c "! grep -qE 'reloaded|reload refused|reload: ' '$TMP/emgd.log' '$TMP/emgd.log.1'"
check "... the configuration change is not in place: account late absent" [ "$(account_status)" = 404 ]
check "emgctl pause: its line goes to the new log" [ "$(admin_ctl pause out)" = "out paused" ]
check "... there" logged "$TMP/emgd.log" 'emg.conn.out: paused by the operator'
check "emgctl resume" [ "$(admin_ctl resume out)" = "out resumed" ]
smpp_load second 4917:10 3
check "the access log reopened too: the next 3 lines in the new file" wait_until 300 has_lines "$TMP/access.log" 3
check "... the moved one kept its 5" [ "$(lines "$TMP/access.log.1")" = 5 ]

# SIGHUP: the reload, and the logs reopened as before.
mv "$TMP/emgd.log" "$TMP/emgd.log.2"
kill -HUP "$EMGD_PID_r"
check "SIGHUP: the reload is logged, in a new log file" logged "$TMP/emgd.log" ' INFO .*reloaded .*r\.conf: '
check "SIGHUP: the reload is counted" wait_until 100 bash -c "[ \"\$(curl -s -H 'Authorization: Bearer $ADMIN_TOKEN' http://127.0.0.1:$ADMIN_PORT/metrics | awk '\$1 == \"emg_reloads_total\" { print \$2 }')\" = 1 ]"
check "SIGHUP: the change is in place: account late exists" [ "$(account_status)" = 200 ]
stop_emgd r
stop_sink s
finish
