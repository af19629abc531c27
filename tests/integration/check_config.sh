#!/usr/bin/env bash
# check_config.sh BUILD - `emgd --check-config` as a packager's script or an
# operator's editor hook relies on it: exit 0 for a good file, 1 for a bad
# one, every error named with the file, the line and the key; a bad file is
# never started on.
# SPDX-License-Identifier: Apache-2.0
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

# The admin token: 16 characters or more, not an example's placeholder,
# given or read from token_file (trailing newline stripped).
admin_conf() {  # admin_conf NAME ADMIN_KEYS: good.conf with an admin section
  { cat "$TMP/good.conf"; echo "admin: { listen = \"127.0.0.1:0\"; $2 };"; } > "$TMP/$1.conf"
}
admin_conf short 'token = "too-short-token";'
check_bad short "a short admin token" \
  "$TMP/short.conf:6: admin.token: the token has 15 characters: at least 16 are needed"
check "... and the token is not repeated" bash -c "! grep -q too-short-token '$TMP/short.out'"
example=$(sed -n 's/.*token = "\([^"]*\)".*/\1/p' "$(dirname "$0")/../../etc/examples/smpp-in.conf")
admin_conf example "token = \"$example\";"
check_bad example "the example configuration's token ($example)" \
  "$TMP/example.conf:6: admin.token: the token is the example configuration's placeholder"
printf 'a-token-from-a-file\n' > "$TMP/admin.token"
admin_conf file "token_file = \"$TMP/admin.token\";"
rc=0; "$BIN/emgd" -c "$TMP/file.conf" --check-config > "$TMP/file.out" 2>&1 || rc=$?
check "a token_file of 19 characters and a newline: exit status 0 ($rc)" [ "$rc" = 0 ]
printf 'short\n' > "$TMP/short.token"
admin_conf short_file "token_file = \"$TMP/short.token\";"
check_bad short_file "a token_file with a short token" \
  "$TMP/short_file.conf:6: admin.token_file: the token in $TMP/short.token has 5 characters"
admin_conf no_file "token_file = \"$TMP/none.token\";"
check_bad no_file "a token_file that is not there" \
  "$TMP/no_file.conf:6: admin.token_file: cannot read $TMP/none.token: No such file or directory"
admin_conf both "token = \"a-token-from-a-file\"; token_file = \"$TMP/admin.token\";"
check_bad both "both token and token_file" "$TMP/both.conf:6: admin.token: token and token_file exclude each other"
admin_conf neither ''
check_bad neither "neither token nor token_file" "$TMP/neither.conf:6: admin.token: missing"

# Without --check-config, a bad file stops emgd at once with the same words.
rc=0; timeout 30 "$BIN/emgd" -c "$TMP/values.conf" --foreground > "$TMP/start.out" 2>&1 || rc=$?
check "emgd refuses to start on a bad file: exit status 1 ($rc)" [ "$rc" = 1 ]
check "emgd refuses to start on a bad file: names the key" grep -qF "general.node_id: must be 1..65535" "$TMP/start.out"
rc=0; timeout 30 "$BIN/emgd" -c "$TMP/short.conf" --foreground > "$TMP/start-short.out" 2>&1 || rc=$?
check "emgd refuses to start with a short admin token: exit status 1 ($rc)" [ "$rc" = 1 ]

# A good file that cannot be served (its port taken): emgd exits 1 and its
# log says why, although the log is written by a thread of its own.
busy=$(free_port)
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => shift) or die; sleep 30' "$busy" &
holder=$!
STARTED_PIDS+=("$holder")
wait_port "$busy"
sed "s|^connectors = (|connectors = (\n  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:$busy\"; users = ( { name = \"u\"; password = \"p\"; } ); },|" \
  "$TMP/good.conf" > "$TMP/busy.conf"
rc=0; timeout 30 "$BIN/emgd" -c "$TMP/busy.conf" --foreground > "$TMP/busy.out" 2>&1 || rc=$?
kill "$holder" 2>/dev/null || true
check "a port already taken: exit status 1 ($rc)" [ "$rc" = 1 ]
check "a port already taken: the log says so" grep -qF "connector in: listen on 127.0.0.1:$busy: Address already in use" "$TMP/busy.out"
# Files are found from the configuration's folder, wherever emgd starts;
# a log that cannot be opened and a spool of another user stop it, saying why.
mkdir -p "$TMP/rel/conf"
emgd=$(cd "$BIN" && pwd)/emgd
cat > "$TMP/rel/conf/emgd.conf" <<CONF
general: { node_id = 1; persist = true; spool_dir = "../spool"; log_file = "../logs/emgd.log"; };
connectors = ( { name = "a"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:1"; system_id = "x"; } );
routes = ( { to = "a"; } );
CONF
rc=0; (cd / && timeout 30 "$emgd" -c "$TMP/rel/conf/emgd.conf" > "$TMP/nolog.out" 2>&1) || rc=$?
check "a missing log folder: exit status 1 ($rc)" [ "$rc" = 1 ]
check "... with the file, taken from the configuration's folder, and the reason" \
  grep -qF "cannot open the log $TMP/rel/conf/../logs/emgd.log: No such file or directory" "$TMP/nolog.out"
mkdir -p "$TMP/rel/logs" "$TMP/rel/spool"
chown nobody "$TMP/rel/spool"
rc=0; (cd / && timeout 30 "$emgd" -c "$TMP/rel/conf/emgd.conf" > /dev/null 2>&1) || rc=$?
check "a spool of another user: exit status 1 ($rc)" [ "$rc" = 1 ]
check "... naming both users" grep -q "spool belongs to user nobody (uid [0-9]*), emgd runs as root" "$TMP/rel/logs/emgd.log"
chown root "$TMP/rel/spool"
(cd / && exec "$emgd" -c "$TMP/rel/conf/emgd.conf" 2> "$TMP/rel.stderr") &
rel=$!
STARTED_PIDS+=("$rel")
logged "$TMP/rel/logs/emgd.log" "emgd .* started" || true
check "started from /, the spool is the configuration's ../spool" test -f "$TMP/rel/spool/emgd.lock"
mv "$TMP/rel/logs/emgd.log" "$TMP/rel/logs/emgd.log.1"
kill -HUP "$rel"
check "SIGHUP: emgd writes on in a new log file" logged "$TMP/rel/logs/emgd.log" "reloaded"
rc=0; stop_pid "$rel" 20 || rc=$?
check "... and stops cleanly (exit status $rc)" [ "$rc" = 0 ]

finish
