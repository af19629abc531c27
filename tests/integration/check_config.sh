#!/usr/bin/env bash
# check_config.sh BUILD - `emgd --check-config` as a packager's script or an
# operator's editor hook relies on it: exit 0 for a good file, 1 for a bad
# one, every error named with the file, the line and the key; a bad file is
# never started on.
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

cat > "$TMP/good.conf" <<'CONF'
general: { node_id = 1; persist = false; };
connectors = (
  { name = "a"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:1"; system_id = "x"; password = "y"; }
);
routes = ( { to = "a"; } );
CONF
# check_bad NAME WHAT EXPECTED_LINE...: the file $TMP/NAME.conf is refused
# with exit status 1 and every expected line in what emgd says.
check_bad() {
  local name=$1 what=$2 rc=0 line
  shift 2
  "$BIN/emgd" -c "$TMP/$name.conf" --check-config > "$TMP/$name.out" 2>&1 || rc=$?
  check "$what: exit status 1 ($rc)" [ "$rc" = 1 ]
  for line in "$@"; do
    check "$what: says '$line'" grep -qF -- "$line" "$TMP/$name.out"
  done
}

rc=0; "$BIN/emgd" -c "$TMP/good.conf" --check-config > "$TMP/good.out" 2>&1 || rc=$?
check "a good file: exit status 0 ($rc)" [ "$rc" = 0 ]

sed 's/^routes = ( { to = "a"; } );/routes = ( { to = "a"; } ;/' "$TMP/good.conf" > "$TMP/syntax.conf"
check_bad syntax "a syntax error" "$TMP/syntax.conf:5: syntax error"

sed 's/node_id = 1;/node_id = 99999; frobnicate = 3;/' "$TMP/good.conf" > "$TMP/values.conf"
check_bad values "a value out of range and an unknown key" \
  "$TMP/values.conf:1: general.node_id: must be 1..65535" \
  "$TMP/values.conf:1: general.frobnicate: unknown key 'frobnicate'" \
  "$TMP/values.conf: 2 errors"

sed 's/to = "a"/to = "nosuch"/' "$TMP/good.conf" > "$TMP/route.conf"
check_bad route "a route to a connector that is not there" \
  "$TMP/route.conf:5: routes.[0].to: no connector is named 'nosuch'"

check_bad missing "a file that is not there" "$TMP/missing.conf: cannot read: No such file or directory"

# Without --check-config, a bad file stops emgd at once with the same words.
rc=0; timeout 10 "$BIN/emgd" -c "$TMP/values.conf" --foreground > "$TMP/start.out" 2>&1 || rc=$?
check "emgd refuses to start on a bad file: exit status 1 ($rc)" [ "$rc" = 1 ]
check "emgd refuses to start on a bad file: names the key" grep -qF "general.node_id: must be 1..65535" "$TMP/start.out"

# A good file that cannot be served (its port taken): emgd exits 1 and its
# log says why, although the log is written by a thread of its own.
busy=$(free_port)
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => shift) or die; sleep 30' "$busy" &
holder=$!
STARTED_PIDS+=("$holder")
wait_port "$busy"
sed "s|^connectors = (|connectors = (\n  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:$busy\"; users = ( { name = \"u\"; password = \"p\"; } ); },|" \
  "$TMP/good.conf" > "$TMP/busy.conf"
rc=0; timeout 10 "$BIN/emgd" -c "$TMP/busy.conf" --foreground > "$TMP/busy.out" 2>&1 || rc=$?
kill "$holder" 2>/dev/null || true
check "a port already taken: exit status 1 ($rc)" [ "$rc" = 1 ]
check "a port already taken: the log says so" grep -qF "connector in: listen on 127.0.0.1:$busy: Address already in use" "$TMP/busy.out"
finish
