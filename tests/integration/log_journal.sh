#!/usr/bin/env bash
# log_journal.sh BUILD - log_file = "journal": emgd's lines reach the
# systemd journal, each with its priority (a warning as a warning, info as
# info), under the identifier emgd. Where no journald runs (a container
# without systemd), one is started for the test and stopped after it.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
command -v journalctl >/dev/null || skip "journalctl (systemd) is not installed"
journald=""
# A socket may be left from a journald that is gone: ask it.
if ! echo probe | systemd-cat -t emg-probe 2>/dev/null; then
  [ "$(id -u)" = 0 ] || skip "no journald runs, and starting one needs root"
  made_run_dir=$([ -d /run/systemd/journal ] || echo 1)
  /lib/systemd/systemd-journald 2>"$TMP/journald.stderr" &
  journald=$!
  STARTED_PIDS+=("$journald")
  for _ in $(seq 600); do echo probe | systemd-cat -t emg-probe 2>/dev/null && break; sleep 0.05; done
fi
check "a journald listens" bash -c "echo probe | systemd-cat -t emg-probe"

mark="emg-journal-test-$$-$RANDOM"
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 1; persist = false; log_file = "journal"; };
connectors = ( { name = "$mark"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:1"; system_id = "x";
                 reconnect_min = 200; } );
routes = ( { to = "$mark"; } );
CONF
start_emgd g "$TMP/emgd.conf"
# The client connector cannot connect: a warning each try (waited for:
# bounded at 30 s, a hang guard).
tries=300
until journalctl -q -t emgd -p warning --no-pager 2>/dev/null | grep -q "$mark.*connection to 127.0.0.1:1 lost" || [ $tries = 0 ]; do
  sleep 0.1; tries=$((tries - 1))
done
stop_emgd g
journalctl -q -t emgd --no-pager -o json 2>/dev/null | grep "$mark" > "$TMP/journal.json" || true
check "the connector's warning is in the journal as a warning (priority 4)" \
  bash -c "jq -r 'select(.MESSAGE | test(\"lost\")) | .PRIORITY' '$TMP/journal.json' | grep -qx 4"
check "... its start line as info (priority 6), without emgd's own time stamp" \
  bash -c "jq -r 'select(.MESSAGE | test(\"connecting to\")) | \"\(.PRIORITY) \(.MESSAGE)\"' '$TMP/journal.json' | grep -q '^6 emg.conn.$mark: connecting to'"
check "nothing of it went to stderr" bash -c "! grep -q '$mark' '$TMP/g.log'"
if [ -n "$journald" ]; then
  kill -TERM "$journald" 2>/dev/null || true
  wait "$journald" 2>/dev/null || true
  [ -n "$made_run_dir" ] && rm -rf /run/systemd/journal
fi
finish
