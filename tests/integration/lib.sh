# lib.sh - shared by the integration tests: temporary directories, starting
# the real programs on free loopback ports, and stopping everything started.
# Source it; set BIN to the build directory holding emgload/emgsink/emgd.
# SPDX-License-Identifier: Apache-2.0

set -euo pipefail

: "${BIN:?BIN must name the build directory}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/emg-it.XXXXXX")
STARTED_PIDS=()
EMGD_NAMES=()
FAILURES=0
PASSES=0

cleanup() {
  local pid
  for pid in "${STARTED_PIDS[@]:-}"; do
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ "${KEEP_TMP:-}" = 1 ] || [ "$FAILURES" -gt 0 ]; then
    echo "test files kept in $TMP"
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT

# Waits (bounded: 30 s by default, which only a hang outlasts) until FILE
# exists and is not empty.
wait_file() {
  local file=$1 tries=${2:-600}
  while [ ! -s "$file" ] && [ "$tries" -gt 0 ]; do
    sleep 0.05
    tries=$((tries - 1))
  done
  [ -s "$file" ] || { echo "timed out waiting for $file" >&2; return 1; }
}

# logged FILE REGEX [SECONDS]: waits (bounded, default 30 s) until a line of
# FILE matches the extended REGEX: emgd writes its log from a thread of
# its own, a moment after the event. The bound is a hang guard: a line that
# is there returns at once, and a slow, busy machine may take seconds.
logged() {
  local file=$1 regex=$2 tries=$(( ${3:-30} * 20 ))
  until grep -Eq -- "$regex" "$file" 2>/dev/null; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || { echo "no line like '$regex' in $file" >&2; return 1; }
    sleep 0.05
  done
}

# start_sink NAME PROTOCOL [emgsink options...]: starts emgsink on a free
# port; sets SINK_PID_<NAME> and SINK_PORT_<NAME>. Record and summary files
# go to $TMP/NAME.record and $TMP/NAME.summary.json.
start_sink() {
  local name=$1 proto=$2 port=${SINK_FIXED_PORT:-0}
  shift 2
  rm -f "$TMP/$name.port"
  "$BIN/emgsink" --protocol "$proto" --listen "127.0.0.1:$port" --port-file "$TMP/$name.port" \
    --record "$TMP/$name.record" --summary "$TMP/$name.summary.json" --quiet "$@" \
    2>"$TMP/$name.stderr" &
  local pid=$!
  STARTED_PIDS+=("$pid")
  wait_file "$TMP/$name.port"
  printf -v "SINK_PID_$name" '%s' "$pid"
  printf -v "SINK_PORT_$name" '%s' "$(cat "$TMP/$name.port")"
}

# stop_sink NAME: SIGTERM, then wait for its summary.
stop_sink() {
  local name=$1 pidvar="SINK_PID_$1"
  kill -TERM "${!pidvar}" 2>/dev/null || true
  local tries=600
  while kill -0 "${!pidvar}" 2>/dev/null && [ "$tries" -gt 0 ]; do
    sleep 0.05
    tries=$((tries - 1))
  done
  wait_file "$TMP/$name.summary.json"
}

# skip REASON: this test cannot run here; ctest reports it skipped (77),
# and scripts/run-tests.sh fails when a test it must run was skipped.
skip() {
  echo "SKIPPED: $*"
  exit 77
}

# check DESCRIPTION COMMAND...: runs the command; counts and prints the outcome.
check() {
  local what=$1
  shift
  if "$@"; then
    PASSES=$((PASSES + 1))
    echo "ok   - $what"
  else
    FAILURES=$((FAILURES + 1))
    echo "FAIL - $what"
  fi
}

# between VALUE MIN MAX: MIN <= VALUE <= MAX (integers).
between() {
  [ "$1" -ge "$2" ] && [ "$1" -le "$3" ] || { echo "$1 is not within $2..$3" >&2; return 1; }
}

# jget FILE FILTER: one value from a JSON file.
jget() {
  jq -r "$2" "$1"
}

# Every sequence number 0..N-1 appears exactly once in a sink record file.
record_has_each_seq_once() {
  local record=$1 n=$2
  local got
  got=$(grep -o 'emgload #[0-9]*' "$record" | sort | uniq -c | awk -v n="$n" '
    { seq = substr($3, 2) + 0; if ($1 != 1) dup++; if (seq >= 0 && seq < n) seen++ }
    END { printf "%d %d", seen + 0, dup + 0 }')
  [ "$got" = "$n 0" ] || { echo "record $record: (distinct seen, duplicated) = ($got), want ($n 0)" >&2; return 1; }
}

# The reports sanitizers and emgd's own crash handler leave on stderr:
# "==PID==ERROR: AddressSanitizer", "SUMMARY: UndefinedBehaviorSanitizer",
# UBSan's "FILE:LINE:COL: runtime error: ", LeakSanitizer's summary.
SANITIZER_PATTERN='==[0-9]+==(ERROR|WARNING): [A-Za-z]+Sanitizer|SUMMARY: [A-Za-z]+Sanitizer|: runtime error: |ThreadSanitizer'

# no_sanitizer_report FILE: true when FILE holds no sanitizer report (the
# first lines of one are printed when it does).
no_sanitizer_report() {
  local file=$1
  [ -f "$file" ] || return 0
  if grep -Eq "$SANITIZER_PATTERN" "$file"; then
    echo "sanitizer report in $file:" >&2
    grep -E -m 5 -A 8 "$SANITIZER_PATTERN" "$file" >&2 || true
    return 1
  fi
}

# stop_emgd NAME [SECONDS]: SIGTERM to the emgd started as NAME; a check
# that it exited with status 0 within SECONDS (default 20), and one that its
# log has no sanitizer report. An emgd that aborts fails the test.
stop_emgd() {
  local name=$1 secs=${2:-20} pidvar="EMGD_PID_$1" rc=0
  stop_pid "${!pidvar}" "$secs" || rc=$?
  check "emgd $name stopped cleanly (exit status $rc)" [ "$rc" = 0 ]
  check "emgd $name: no sanitizer report in its log" no_sanitizer_report "$TMP/$name.log"
  printf -v "EMGD_STOPPED_$name" '%s' 1
}

# kill_emgd NAME: SIGKILL, as a crash would (the test's own doing, so its
# exit status is not checked; its log still is, at finish).
kill_emgd() {
  local pidvar="EMGD_PID_$1"
  kill -KILL "${!pidvar}" 2>/dev/null || true
  wait "${!pidvar}" 2>/dev/null || true
  printf -v "EMGD_STOPPED_$1" '%s' 1
}

# finish: stops every emgd still running (checking its exit status), scans
# what every program started wrote to stderr for sanitizer reports, prints
# the counts and fails when any check failed.
finish() {
  local name stopped file
  for name in "${EMGD_NAMES[@]:-}"; do
    [ -n "$name" ] || continue
    stopped="EMGD_STOPPED_$name"
    [ -n "${!stopped:-}" ] || stop_emgd "$name"
  done
  for file in "$TMP"/*.log "$TMP"/*.stderr; do
    [ -f "$file" ] || continue
    no_sanitizer_report "$file" || { FAILURES=$((FAILURES + 1)); echo "FAIL - no sanitizer report in $file"; }
  done
  echo "$PASSES passed, $FAILURES failed"
  [ "$FAILURES" -eq 0 ]
}

# A free TCP port on 127.0.0.1: bound and released, so another test may
# still take it first, but chosen below the kernel's ephemeral range
# (ip_local_port_range): the source port of an outgoing connection, which
# any test makes by the thousand, never lands on it, not even while an
# emgd the test restarts is between its two binds.
free_port() {
  perl -MIO::Socket::INET -e '
    my ($lo, $hi) = (10000, 32767);
    if (open(my $f, "<", "/proc/sys/net/ipv4/ip_local_port_range")) {
      my ($first) = split " ", scalar <$f>;
      $hi = $first - 1 if $first && $first - 1 > $lo + 1000;
    }
    for (1 .. 500) {
      my $port = $lo + int(rand($hi - $lo + 1));
      my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => $port) or next;
      print "$port\n";
      exit 0;
    }
    die "no free port in $lo..$hi\n";'
}

# Waits (bounded) until something accepts connections on 127.0.0.1:PORT.
wait_port() {
  local port=$1 tries=${2:-600}
  while [ "$tries" -gt 0 ]; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.05
    tries=$((tries - 1))
  done
  echo "nothing listens on port $port" >&2
  # Whatever emgd said about it (a port taken meanwhile, a failed start).
  local name
  for name in "${EMGD_NAMES[@]}"; do
    [ -f "$TMP/$name.log" ] && { echo "--- the end of $name.log:" >&2; tail -n 5 "$TMP/$name.log" >&2; }
  done
  return 1
}

# conf_server NAME PROTOCOL PORT INSTANCES [SETTINGS]: a server connector
# entry on 127.0.0.1:PORT with the tests' account (load / secret), and any
# further SETTINGS ("key = value; ..."), for a configuration's connectors list.
conf_server() {
  printf '  { name = "%s"; protocol = "%s"; mode = "server"; listen = "127.0.0.1:%s"; instances = %s;\n' "$1" "$2" "$3" "$4"
  printf '    %susers = ( { name = "load"; password = "secret"; } ); },\n' "${5:+$5 }"
}

# conf_to_sink PORT: the list's last connector, "out" (SMPP to a sink on
# 127.0.0.1:PORT), the list's end, and a route of everything to it.
conf_to_sink() {
  printf '  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:%s"; instances = 1;\n' "$1"
  printf '    system_id = "emg"; password = "secret"; }\n);\nroutes = ( { to = "out"; } );\n'
}

# start_emgd NAME CONFIG: starts emgd in the foreground with its log in
# $TMP/NAME.log; sets EMGD_PID_<NAME>. EMGD_PREFIX, when set, is a command
# that runs it (e.g. "prlimit --nofile=64:64", which execs it: the PID is
# emgd's).
start_emgd() {
  local name=$1 conf=$2
  ${EMGD_PREFIX:-} "$BIN/emgd" -c "$conf" --foreground 2>"$TMP/$name.log" &
  local pid=$!
  STARTED_PIDS+=("$pid")
  EMGD_NAMES+=("$name")
  printf -v "EMGD_PID_$name" '%s' "$pid"
  printf -v "EMGD_STOPPED_$name" '%s' ""
}

# stop_pid PID SECONDS: SIGTERM and wait; returns the exit status, or 124
# when it did not exit within SECONDS (it is then killed).
stop_pid() {
  local pid=$1 secs=${2:-20} tries
  kill -TERM "$pid" 2>/dev/null || return 0
  tries=$((secs * 20))
  while kill -0 "$pid" 2>/dev/null && [ "$tries" -gt 0 ]; do
    sleep 0.05
    tries=$((tries - 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 124
  fi
  local rc=0
  wait "$pid" || rc=$?
  return $rc
}

# Every sequence number 0..N-1 appears at least once in a sink record file
# (after crashes a message may appear twice: see crash.sh).
record_seen_all() {
  local record=$1 n=$2 seen
  seen=$(grep -o 'emgload #[0-9]*' "$record" | sort -u | wc -l)
  [ "$seen" = "$n" ] || { echo "record $record: $seen distinct of $n" >&2; return 1; }
}

# The admin API of the emgd under test, once ADMIN_PORT and ADMIN_TOKEN are
# set: admin_ctl ARGS runs emgctl against it, admin_call PATH [curl options]
# prints its answer.
admin_ctl() {
  "$BIN/emgctl" --url "http://127.0.0.1:$ADMIN_PORT" --token "$ADMIN_TOKEN" "$@"
}
admin_call() {
  local path=$1
  shift
  curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$@" "http://127.0.0.1:$ADMIN_PORT$path"
}

# smpp_load NAME TO COUNT [emgload options]: COUNT SMPP submits to the
# addresses TO (PREFIX:LEN) into port SMPP_IN as load/secret, one
# connection, window 20 (options given override); the summary in
# $TMP/NAME.json.
smpp_load() {
  local name=$1 to=$2 count=$3
  shift 3
  "$BIN/emgload" --protocol smpp --connect "127.0.0.1:$SMPP_IN" --user load --password secret \
    --connections 1 --window 20 --count "$count" --to "$to" --json --quiet --give-up 30 "$@" \
    > "$TMP/$name.json" || true
}

# record_count NAME: the messages sink NAME recorded (0 before its first).
record_count() {
  cat "$TMP/$1.record" 2>/dev/null | awk 'END { print NR }'
}

# wait_until TRIES CMD...: runs CMD every 0.1 s until it succeeds, at most
# TRIES times; fails when it never did.
wait_until() {
  local tries=$1
  shift
  until "$@"; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || return 1
    sleep 0.1
  done
}

# bound_count NAME CONNECTOR: the instances of client connector CONNECTOR
# that emgd NAME's log says bound (each counted once).
bound_count() {
  grep -oE "emg\.conn\.$2: instance [0-9]+ bound \(" "$TMP/$1.log" 2>/dev/null | sort -u | wc -l
}

# bound_at_least NAME CONNECTOR COUNT: whether COUNT instances bound.
bound_at_least() { [ "$(bound_count "$1" "$2")" -ge "$3" ]; }

# wait_bound NAME CONNECTOR COUNT: waits until COUNT instances of emgd
# NAME's client connector CONNECTOR bound, where a sleep would guess how long
# a busy machine takes; bounded (30 s), which only a hang outlasts.
wait_bound() {
  wait_until 300 bound_at_least "$@" ||
    { echo "emgd $1: $(bound_count "$1" "$2") of $3 instances of $2 bound" >&2; return 1; }
}
