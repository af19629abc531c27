#!/usr/bin/env bash
# package.sh BUILD - the Debian package as an operator meets it: built from
# this tree (scripts/build-deb.sh, lintian without errors), installed with
# dpkg -i; its files, their modes and owners (the configuration and the
# token root:emg 0640, the logs emg:adm 0640 in a setgid emg:adm folder,
# binaries and documents root's), every document the installed documents
# cite installed, the examples' paths writable under the unit's sandbox,
# logrotate asking for a reopen (SIGUSR1), not a reload; the unit verified by
# systemd-analyze; emgd started by the unit's own ExecStart line as the user
# emg (systemd need not run here); an account added with emgctl and the
# token the package generated; traffic with receipts through it from
# emgload to emgsink; its log rotated with the shipped logrotate file and
# written on in the new file; a clean stop; and a purge that leaves only
# what Debian policy keeps (the system user).
# Then doc/first-day.md, followed command by command on a fresh copy of the
# tree (tests/integration/doc_walk.py): build, install, configure, traffic
# with receipts, a customer over its max_rate (its refusals by reason in
# emgload, emgctl status, connectors, accounts and the log's status line),
# rotation (a reopen, no reload), a stop with the SMSC connector paused (its
# messages kept, said at INFO, and not waited for), a start that keeps it
# paused, the resume that sends them, a wrong password (emgload's one line,
# the address blocked after 10, the admin API still answering emgctl), and
# the purge, each command printing what the document shows. On a machine without systemd (a container) the walk's systemctl is
# a stand-in that does what the unit says for emg.service (ExecStart as
# User=emg with its UMask, ExecReload, SIGTERM and TimeoutStopSec).
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
check "the package ships emgd.conf 0640: never readable by all, even before the postinst" \
  bash -c "dpkg-deb -c '$deb' | grep -qE '^-rw-r----- root/root .* \./etc/emg/emgd\.conf\$'"

# ---- install ----
check "dpkg -i installs it" dpkg -i "$deb"
for f in /usr/sbin/emgd /usr/bin/emgctl /usr/bin/emgload /usr/bin/emgsink; do
  check "$f installed, executable" test -x "$f"
done
for f in /etc/emg/emgd.conf /lib/systemd/system/emg.service /etc/logrotate.d/emg \
         /usr/share/man/man8/emgd.8.gz /usr/share/man/man5/emgd.conf.5.gz /usr/share/man/man1/emgctl.1.gz \
         /usr/share/emg/sql/001_init.sql /usr/share/doc/emg/copyright /usr/share/doc/emg/examples/smpp-in.conf \
         /usr/share/doc/emg/doc/configuration.md /usr/share/doc/emg/doc/first-day.md; do
  check "$f installed" test -s "$f"
done
check "the plugins in lib/emg/plugins" bash -c "ls /usr/lib/*/emg/plugins/blacklist.so"
check "/etc/emg/emgd.conf is a conffile" bash -c "dpkg-query -W -f='\${Conffiles}' emg | grep -q /etc/emg/emgd.conf"
check "man emgd works" bash -c "man emgd 2>/dev/null | grep -q 'emg enterprise messaging gateway daemon'"
uid=$(id -u emg 2>/dev/null || echo none)
check "the system user emg exists (uid $uid), without a login shell" \
  bash -c "[ '$uid' != none ] && [ '$uid' -lt 1000 ] && getent passwd emg | grep -qE ':(/usr/sbin/nologin|/bin/false)$'"

# owner:group mode of PATH is WANT
mode_is() {
  local got
  got=$(stat -c '%U:%G %a' "$1" 2>&1)
  [ "$got" = "$2" ] || { echo "$1: $got, want $2" >&2; return 1; }
}
check "/etc/emg/emgd.conf (SMSC passwords): root:emg 640" mode_is /etc/emg/emgd.conf "root:emg 640"
token=$(cat /etc/emg/admin.token)
check "the admin token was made at install: root:emg 640, ${#token} characters" \
  bash -c "[ \"\$(stat -c '%U:%G %a' /etc/emg/admin.token)\" = 'root:emg 640' ] && [ ${#token} -ge 32 ]"
check "/var/lib/emg: emg:emg 750" mode_is /var/lib/emg "emg:emg 750"
check "/var/lib/emg/spool: emg:emg 750" mode_is /var/lib/emg/spool "emg:emg 750"
check "/var/log/emg: emg:adm 2750 (setgid: the logs emgd creates are adm's too)" mode_is /var/log/emg "emg:adm 2750"
check "/var/log/emg/emgd.log made by the postinst: emg:adm 640, as logrotate creates it" \
  mode_is /var/log/emg/emgd.log "emg:adm 640"
check "... and logrotate's create line says the same" grep -qE '^\s*create 0640 emg adm$' /etc/logrotate.d/emg
for f in /usr/sbin/emgd /usr/bin/emgctl /usr/bin/emgload /usr/bin/emgsink; do
  check "$f: root:root 755" mode_is "$f" "root:root 755"
done
odd=$(find /usr/share/doc/emg /usr/share/man/man*/emg* /usr/share/emg /lib/systemd/system/emg.service /etc/logrotate.d/emg \
  -type f \( -not -user root -o -not -group root -o -not -perm 0644 \) -printf '%p %u:%g %m\n' 2>&1)
check "documents, man pages, the unit, logrotate's file: root:root 644 (${odd:-all})" [ -z "$odd" ]

# The postinst keeps them so on upgrade: a configure over an installation
# whose configuration was left 0644 and whose log was emg:emg fixes both.
chmod 0644 /etc/emg/emgd.conf
chown emg:emg /var/log/emg/emgd.log /var/log/emg
chmod 0750 /var/log/emg
install -o emg -g emg -m 0644 /dev/null /var/log/emg/emgd.log.3.gz
check "dpkg-reconfigure runs the postinst again" dpkg-reconfigure -fnoninteractive emg
check "... which gives emgd.conf back to root:emg 640" mode_is /etc/emg/emgd.conf "root:emg 640"
check "... and the log to emg:adm 640" mode_is /var/log/emg/emgd.log "emg:adm 640"
check "... in emg:adm 2750" mode_is /var/log/emg "emg:adm 2750"
check "... and an old rotated log to emg:adm 640" mode_is /var/log/emg/emgd.log.3.gz "emg:adm 640"
rm -f /var/log/emg/emgd.log.3.gz
check "... and keeps the token as it was" [ "$(cat /etc/emg/admin.token)" = "$token" ]

# logrotate asks for a reopen (SIGUSR1), never a reload (SIGHUP, systemctl
# reload): a reload would put a half-edited emgd.conf in place every night.
post=$(sed -n '/postrotate/,/endscript/p' /etc/logrotate.d/emg | grep -v '^\s*#')
check "logrotate sends SIGUSR1 through systemd" grep -q 'systemctl kill -s USR1 --kill-who=main emg.service' <<<"$post"
check "... or with pkill, when systemd does not run" grep -q 'pkill -USR1 -u emg -x emgd' <<<"$post"
check "... and never HUP or reload" bash -c "! grep -qiE 'HUP|reload' <<<\"\$1\"" _ "$post"
check "the unit's reload stays SIGHUP (configuration read again)" \
  grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' /lib/systemd/system/emg.service

# Every document an installed document cites is installed, found as in the
# tree (tests/doc_refs.sh's rules, the tree being /usr/share/doc/emg): a word
# ending in .md, relative to the citing file's folder, to the root, or to
# doc/ for a bare name; and every relative Markdown link [..](path) from the
# citing file's folder. Citations of the test suite (tests/...) name files of
# the source tree, as citations of source files do: not shipped.
doc_citations_resolve() {
  local root=/usr/share/doc/emg bad=0 n=0 file rel word line dir
  while IFS= read -r -d '' file; do
    rel=${file#"$root"/}
    dir=$(dirname "$file")
    while IFS=: read -r line word; do
      case $word in /* | *:* | *'$'* | *'~'* | tests/*) continue ;; esac
      while [[ $word == *. ]]; do word=${word%.}; done
      [[ ${word%.md} =~ [A-Za-z0-9_-]$ ]] || continue
      n=$((n + 1))
      [ -e "$dir/$word" ] || [ -e "$root/$word" ] || { [[ $word != */* ]] && [ -e "$root/doc/$word" ]; } ||
        { echo "$rel:$line: cites $word, which the package does not install" >&2; bad=$((bad + 1)); }
    done < <(grep -noE '[A-Za-z0-9_.~$:/-]*\.md\b' "$file" | sort -u)
    while IFS=: read -r line word; do
      word=${word#*](}; word=${word%)}; word=${word%%#*}
      case $word in '' | /* | *:*) continue ;; esac
      n=$((n + 1))
      [ -e "$dir/$word" ] || { echo "$rel:$line: links to $word, which the package does not install" >&2; bad=$((bad + 1)); }
    done < <(grep -noE '\]\([^) ]+\)' "$file" | sort -u)
  done < <(find "$root" -name '*.md' -print0)
  echo "$n citations and links checked" >&2
  [ "$bad" = 0 ] && [ "$n" -gt 50 ]
}
check "every document the installed documents cite or link to is installed" doc_citations_resolve

# What the service may write: StateDirectory= (under /var/lib) and
# ReadWritePaths=; ProtectSystem=strict makes the rest read-only. Every path
# the installed configuration and the examples write to must be under one.
writable=$(sed -n -e 's|^StateDirectory=|/var/lib/|p' -e 's|^ReadWritePaths=||p' /lib/systemd/system/emg.service | tr ' ' '\n')
check "the unit may write /var/lib/emg and /var/log/emg" \
  bash -c "grep -qx /var/lib/emg <<<\"\$1\" && grep -qx /var/log/emg <<<\"\$1\"" _ "$writable"
paths_writable() {
  local file=$1 path bad=0 n=0 w ok
  while IFS= read -r path; do
    n=$((n + 1))
    [[ $path == /* ]] || { echo "$file: $path is relative (to /etc/emg or the examples' folder)" >&2; bad=1; continue; }
    ok=0
    for w in $writable; do [[ $path == "$w" || $path == "$w"/* ]] && ok=1; done
    [ "$ok" = 1 ] || { echo "$file: $path is not writable under the unit's sandbox ($writable)" >&2; bad=1; }
  done < <(grep -v '^\s*#' "$file" | grep -oE '(spool_dir|log_file|access_log|accounts_file|appender name)\s*=\s*"[^"]*"' |
           sed -E 's/.*"([^"]*)"/\1/' | grep -vx journal)
  [ "$bad" = 0 ] && [ "$n" -gt 0 ]
}
for f in /etc/emg/emgd.conf /usr/share/doc/emg/examples/*; do
  check "$f: the paths emgd writes are ones the unit lets it write" paths_writable "$f"
done

check "the shipped configuration checks out, read as emg" \
  setpriv --reuid=emg --regid=emg --init-groups /usr/sbin/emgd --check-config
check "... and it keeps persist on, the spool in /var/lib/emg, the admin API on loopback" \
  bash -c "grep -q 'persist = true' /etc/emg/emgd.conf && grep -q 'spool_dir = \"/var/lib/emg/spool\"' /etc/emg/emgd.conf && grep -q 'listen = \"127.0.0.1:8480\"' /etc/emg/emgd.conf"
check "... and no comment shows the token on a command line (ps would show it)" \
  bash -c "! grep -E -- '--token +[^-]|\\\$\\(cat' /etc/emg/emgd.conf /usr/share/doc/emg/examples/*.conf"
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
# emgd makes its log itself when there is none: in the setgid folder, it is
# emg:adm 0640 as well.
rm -f /var/log/emg/emgd.log
# setpriv execs: the PID is emgd's. The unit's UMask.
(umask 0027 && exec setpriv --reuid=emg --regid=emg --init-groups $exec_start 2>"$TMP/emgd.stderr") &
emgd=$!
STARTED_PIDS+=("$emgd")
wait_port 3000
wait_port 8480
check "emgd runs as emg" bash -c "[ \"\$(ps -o user= -p $emgd)\" = emg ]"
check "the log emgd made itself: emg:adm 640" mode_is /var/log/emg/emgd.log "emg:adm 640"
# The token in the environment, not on the command line.
ctl() { EMGCTL_TOKEN=$token /usr/bin/emgctl "$@"; }
check "emgctl with the installed token adds an account" ctl account add shop --password Sh0p-pw
sleep 0.5
/usr/bin/emgload --protocol ucp --connect 127.0.0.1:3000 --user shop --password Sh0p-pw --connections 4 \
  --window 20 --count 5000 --dlr --json --quiet > "$TMP/load.json" || true
check "5000 messages through the installed emgd, acked" [ "$(jget "$TMP/load.json" .acked)" = 5000 ]
check "... and their 5000 receipts back" [ "$(jget "$TMP/load.json" .receipts)" = 5000 ]
check "the account is kept in /var/lib/emg/accounts.conf, owned by emg" \
  bash -c "grep -q 'shop' /var/lib/emg/accounts.conf && [ \"\$(stat -c %U /var/lib/emg/accounts.conf)\" = emg ]"
check "the log is /var/log/emg/emgd.log" logged /var/log/emg/emgd.log 'emgd 0.* started'

# ---- logrotate ----
# A half-finished edit of emgd.conf at rotation time: the rotation must not
# put it in place (a reload would: the log would say "reloaded").
cp -p /etc/emg/emgd.conf "$TMP/emgd.conf.saved"
printf 'routes = ( { to = "half-edited"; } );\n' >> /etc/emg/emgd.conf
logrotate -s "$TMP/logrotate.state" -f /etc/logrotate.d/emg
check "logrotate moved the log aside" test -s /var/log/emg/emgd.log.1
check "... and emgd writes on in the new file (reopened on SIGUSR1)" \
  logged /var/log/emg/emgd.log "SIGUSR1: log files reopened"
check "... which logrotate created emg:adm 640" mode_is /var/log/emg/emgd.log "emg:adm 640"
check "... emgd still runs" kill -0 "$emgd"
check "... and the configuration was not read again" \
  bash -c "! grep -qiE 'reload|half-edited' /var/log/emg/emgd.log /var/log/emg/emgd.log.1"
cp -p "$TMP/emgd.conf.saved" /etc/emg/emgd.conf
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

# ---- doc/first-day.md, command by command ----
# On a fresh copy of the tree (the walk builds it with scripts/build-deb.sh
# into its dist/), with emgctl and the others from the package it installs.
mkdir "$TMP/walk" "$TMP/walk/emg" "$TMP/bin"
tar -C "$SRC" --exclude=./.git --exclude='./build*' --exclude=./dist --exclude=./var -cf - . |
  tar -C "$TMP/walk/emg" -xf -
if [ ! -d /run/systemd/system ]; then
  # systemctl for emg.service where systemd does not run: what the unit says,
  # read from the installed unit file; the commands the walk uses, each
  # printing what systemctl prints.
  cat > "$TMP/bin/systemctl" <<'SHIM'
#!/usr/bin/env bash
set -euo pipefail
unit=/lib/systemd/system/emg.service
pidfile=${EMG_SHIM_PIDFILE:?}
key() { sed -n "s/^$1=//p" "$unit" | tail -1; }
running() { [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
start() {
  running && return 0
  local user umask exec
  user=$(key User) umask=$(key UMask) exec=$(key ExecStart)
  # Type=notify: started once the admin API answers (emgd says READY=1 then).
  (umask "$umask" && exec setsid setpriv --reuid="$user" --regid="$user" --init-groups $exec \
     </dev/null >/dev/null 2>&1) &
  echo $! > "$pidfile"
  local tries=600
  until (exec 3<>/dev/tcp/127.0.0.1/8480) 2>/dev/null; do
    running && [ "$tries" -gt 0 ] || {
      echo "Job for emg.service failed because the control process exited with error code." >&2; exit 1; }
    tries=$((tries - 1)); sleep 0.05
  done
}
stop() {
  running || return 0
  local pid tries
  pid=$(cat "$pidfile") tries=$(( ${TIMEOUT_STOP:-60} * 20 ))
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null && [ "$tries" -gt 0 ]; do sleep 0.05; tries=$((tries - 1)); done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}
# Anything else (the package's scripts' preset, enable, daemon-reload) is
# systemctl's own, which works without systemd running.
[ "$#" = 2 ] && [ "${2%.service}" = emg ] || exec /usr/bin/systemctl "$@"
case $1 in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  reload)
    running || { echo "emg.service is not active, cannot reload." >&2; exit 1; }
    kill -HUP "$(cat "$pidfile")" ;;
  is-active) if running; then echo active; else echo inactive; exit 3; fi ;;
  *) exec /usr/bin/systemctl "$@" ;;
esac
SHIM
  chmod 755 "$TMP/bin/systemctl"
  export EMG_SHIM_PIDFILE=$TMP/emgd.shim.pid
fi
# Whatever the walk leaves running when it fails: its emgd, its emgsink.
walk_cleanup() {
  [ -s "$TMP/emgd.shim.pid" ] && kill -KILL "$(cat "$TMP/emgd.shim.pid")" 2>/dev/null
  dpkg-query -W -f='${Status}' emg 2>/dev/null | grep -q installed && dpkg --purge emg >/dev/null 2>&1
  return 0
}
trap 'walk_cleanup; cleanup' EXIT
check "doc/first-day.md, followed command by command, prints what it shows" \
  env PATH="$TMP/bin:$PATH" python3 "$SRC/tests/integration/doc_walk.py" "$SRC/doc/first-day.md" \
  --cwd "$TMP/walk/emg" --timeout 300 --log "$TMP/first-day.log"
# The walk's stop with smpp-out paused: the messages behind it cannot leave,
# so the stop does not wait for them (it would for up to 10 s for messages
# that can). From "SIGTERM: stopping" to "stopped: ... kept": well under 5 s.
stop_wait() {
  python3 - "$1" <<'PY'
import re, sys
from datetime import datetime
stamp = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) INFO  emg\.main: "
start = None
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(stamp + r"SIGTERM: stopping", line)
    if m:
        start = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f")
    m = re.match(stamp + r"stopped: \d+ messages kept in the journal", line)
    if m and start:
        took = (datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f") - start).total_seconds()
        print(f"{took:.3f}")
        sys.exit(0)
sys.exit(1)
PY
}
took=$(stop_wait "$TMP/first-day.log" 2>&1) || took=none
check "... and its stop with a connector paused did not wait for its queue (${took} s from SIGTERM)" \
  awk -v t="$took" 'BEGIN { exit !(t != "none" && t + 0 < 5) }'
finish
