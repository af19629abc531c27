#!/usr/bin/env bash
# package.sh BUILD - the Debian package as an operator meets it: built from
# this tree (scripts/build-deb.sh, lintian without errors), installed with
# dpkg -i; its files, its user and their permissions; the unit verified by
# systemd-analyze; emgd started by the unit's own ExecStart line as the user
# emg (systemd need not run here); an account added with emgctl and the
# token the package generated; traffic with receipts through it from
# emgload to emgsink; its log rotated with the shipped logrotate file and
# written on in the new file; a clean stop; and a purge that leaves only
# what Debian policy keeps (the system user).
# It installs on this machine: run it on a test machine, as root.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "installs a package: needs root"
command -v dpkg-buildpackage >/dev/null || skip "dpkg-dev is not installed"

# The shipped configuration's ports must be free.
for port in 3000 2775 8480; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then skip "port $port is taken"; fi
done
dpkg-query -W -f='${Status}' emg 2>/dev/null | grep -q installed && dpkg --purge emg >/dev/null

# ---- build ----
check "the package builds (scripts/build-deb.sh), lintian reports no errors" \
  "$SRC/scripts/build-deb.sh" "$TMP/dist"
deb=$(ls "$TMP"/dist/emg_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { finish; exit 1; }
cp "$TMP/dist/lintian.txt" "$TMP/lintian.txt"

# ---- install ----
check "dpkg -i installs it" dpkg -i "$deb"
for f in /usr/sbin/emgd /usr/bin/emgctl /usr/bin/emgload /usr/bin/emgsink; do
  check "$f installed, executable" test -x "$f"
done
for f in /etc/emg/emgd.conf /lib/systemd/system/emg.service /etc/logrotate.d/emg \
         /usr/share/man/man8/emgd.8.gz /usr/share/man/man5/emgd.conf.5.gz /usr/share/man/man1/emgctl.1.gz \
         /usr/share/emg/sql/001_init.sql /usr/share/doc/emg/copyright /usr/share/doc/emg/examples/smpp-in.conf; do
  check "$f installed" test -s "$f"
done
check "the plugins in lib/emg/plugins" bash -c "ls /usr/lib/*/emg/plugins/blacklist.so"
check "/etc/emg/emgd.conf is a conffile" bash -c "dpkg-query -W -f='\${Conffiles}' emg | grep -q /etc/emg/emgd.conf"
check "man emgd works" bash -c "man emgd 2>/dev/null | grep -q 'emg enterprise messaging gateway daemon'"
uid=$(id -u emg 2>/dev/null || echo none)
check "the system user emg exists (uid $uid), without a login shell" \
  bash -c "[ '$uid' != none ] && [ '$uid' -lt 1000 ] && getent passwd emg | grep -qE ':(/usr/sbin/nologin|/bin/false)$'"
check "/var/lib/emg and its spool belong to emg, mode 750" \
  bash -c "[ \"\$(stat -c '%U:%G %a' /var/lib/emg)\" = 'emg:emg 750' ] && [ \"\$(stat -c '%U %a' /var/lib/emg/spool)\" = 'emg 750' ]"
check "/var/log/emg belongs to emg" bash -c "[ \"\$(stat -c '%U %a' /var/log/emg)\" = 'emg 750' ]"
token=$(cat /etc/emg/admin.token)
check "the admin token was made at install: root:emg 640, ${#token} characters" \
  bash -c "[ \"\$(stat -c '%U:%G %a' /etc/emg/admin.token)\" = 'root:emg 640' ] && [ ${#token} -ge 32 ]"
check "the shipped configuration checks out, read as emg" \
  setpriv --reuid=emg --regid=emg --init-groups /usr/sbin/emgd --check-config
check "... and it keeps persist on, the spool in /var/lib/emg, the admin API on loopback" \
  bash -c "grep -q 'persist = true' /etc/emg/emgd.conf && grep -q 'spool_dir = \"/var/lib/emg/spool\"' /etc/emg/emgd.conf && grep -q 'listen = \"127.0.0.1:8480\"' /etc/emg/emgd.conf"
systemd-analyze verify /lib/systemd/system/emg.service > "$TMP/verify.txt" 2>&1
check "systemd-analyze verify: nothing to say ($(wc -l < "$TMP/verify.txt") lines)" [ ! -s "$TMP/verify.txt" ]
systemd-analyze security --offline=true /lib/systemd/system/emg.service > "$TMP/security.txt" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for emg.service: \([0-9.]*\).*/\1/p' "$TMP/security.txt")
check "systemd-analyze security: exposure ${exposure:-?} (at most 2.0)" \
  awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 2.0) }'

# ---- run it as the unit would, as emg ----
# emgsink on the port the shipped configuration's smpp-out connects to.
"$BIN/emgsink" --protocol smpp --listen 127.0.0.1:2775 --quiet --summary "$TMP/smsc.json" 2>"$TMP/smsc.stderr" &
smsc=$!
STARTED_PIDS+=("$smsc")
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/emg.service)
check "the unit's ExecStart: $exec_start" [ "$exec_start" = "/usr/sbin/emgd -c /etc/emg/emgd.conf" ]
# setpriv execs: the PID is emgd's.
setpriv --reuid=emg --regid=emg --init-groups $exec_start 2>"$TMP/emgd.stderr" &
emgd=$!
STARTED_PIDS+=("$emgd")
wait_port 3000
wait_port 8480
check "emgd runs as emg" bash -c "[ \"\$(ps -o user= -p $emgd)\" = emg ]"
ctl() { /usr/bin/emgctl --token "$token" "$@"; }
check "emgctl with the installed token adds an account" ctl account add shop --password Sh0p-pw
sleep 0.5
/usr/bin/emgload --protocol ucp --connect 127.0.0.1:3000 --user shop --password Sh0p-pw --connections 4 \
  --window 20 --count 5000 --dlr --json --quiet > "$TMP/load.json" || true
check "5000 messages through the installed emgd, acked" [ "$(jget "$TMP/load.json" .acked)" = 5000 ]
check "... and their 5000 receipts back" [ "$(jget "$TMP/load.json" .receipts)" = 5000 ]
check "the account is kept in /var/lib/emg/accounts.conf, owned by emg" \
  bash -c "grep -q 'shop' /var/lib/emg/accounts.conf && [ \"\$(stat -c %U /var/lib/emg/accounts.conf)\" = emg ]"
check "the log is /var/log/emg/emgd.log, owned by emg" \
  bash -c "grep -q 'emgd 0.* started' /var/log/emg/emgd.log && [ \"\$(stat -c %U /var/log/emg/emgd.log)\" = emg ]"

# ---- logrotate ----
logrotate -s "$TMP/logrotate.state" -f /etc/logrotate.d/emg
check "logrotate moved the log aside" test -s /var/log/emg/emgd.log.1
check "... and emgd writes on in the new file (reopened on SIGHUP)" \
  logged /var/log/emg/emgd.log "reloaded /etc/emg/emgd.conf"
/usr/bin/emgload --protocol ucp --connect 127.0.0.1:3000 --user shop --password Sh0p-pw --count 100 --json \
  --quiet > "$TMP/load2.json" || true
check "traffic after the rotation: 100 acked" [ "$(jget "$TMP/load2.json" .acked)" = 100 ]

# ---- stop ----
rc=0; stop_pid "$emgd" 30 || rc=$?
check "emgd stops cleanly on SIGTERM (exit status $rc)" [ "$rc" = 0 ]
check "... and says so in its log" logged /var/log/emg/emgd.log "emgd stopped"
kill -TERM "$smsc" 2>/dev/null || true

# ---- purge ----
check "dpkg --purge removes it" dpkg --purge emg
for path in /etc/emg /var/lib/emg /var/log/emg /usr/sbin/emgd /usr/bin/emgctl /lib/systemd/system/emg.service \
            /etc/logrotate.d/emg /usr/share/doc/emg /usr/share/emg; do
  check "after the purge: $path is gone" test ! -e "$path"
done
check "... the system user emg stays, as Debian policy has it" getent passwd emg
finish
