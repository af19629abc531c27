#!/usr/bin/env bash
# status_page.sh BUILD - the operator's console (emgd's embedded page) in
# headless Chromium driven by Selenium (tests/integration/console.py): log
# in with the token, see the connectors of this configuration, watch the
# chart move with a time axis while emgload runs, pause smpp-out from the
# page and see its queue hold, resume it, find a message by its SMSC id, and
# a page of another origin refused when it posts a pause with the
# operator's cookie; the overview's health, an account added, given credit,
# disabled and deleted from the page, a queued message found by its
# recipient and dropped, the configuration reloaded. Screenshots are kept
# in BUILD/artifacts/console-*.png.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --user emg --password secret --dlr-delay 0-300
ucp=$(free_port); smpp=$(free_port); admin=$(free_port); evil=$(free_port)
TOKEN=page-token-0123456789
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 11; persist = true; spool_dir = "$TMP/spool"; accounts_file = "accounts.conf"; };
admin: { listen = "127.0.0.1:$admin"; token = "$TOKEN"; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp"; instances = 1;
    users = ( { name = "probe"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 2;
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "smpp-out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$ucp"
wait_port "$admin"

# One message whose SMSC id the page will be asked for.
perl "$(dirname "$0")/smpp_probe.pl" "$smpp" send probe secret 4917000001 4917100001 "find me" > "$TMP/probe.out"
id=$(sed -n 's/^message_id=//p' "$TMP/probe.out")
delivered() {
  curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$admin/api/messages/$id" > "$TMP/msg.json" &&
    [ "$(jq -r .state "$TMP/msg.json")" = delivered ]
}
check "a message $id sent and delivered" wait_until 300 delivered
smsc_id=$(jq -r '.events[] | select(.event == "sent") | .detail' "$TMP/msg.json")

# Traffic for the chart and the pause, through the whole browser session.
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --duration 40 --rate 1000 --json --quiet --give-up 60 > "$TMP/load.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")

# A page of another origin (same host, another port) that posts a pause.
mkdir -p "$TMP/evil"
cat > "$TMP/evil/index.html" <<HTML
<!DOCTYPE html><html><body><form id="f" method="POST" action="http://127.0.0.1:$admin/api/connectors/smpp-out/pause"></form>
<script>document.getElementById('f').submit();</script></body></html>
HTML
(cd "$TMP/evil" && exec /usr/bin/python3 -m http.server --bind 127.0.0.1 "$evil" > "$TMP/evil.log" 2>&1) &
STARTED_PIDS+=("$!")
wait_port "$evil"
sleep 2

mkdir -p "$BIN/artifacts"
rc=0
/usr/bin/python3 "$(dirname "$0")/console.py" "http://127.0.0.1:$admin" "$TOKEN" "$BIN/artifacts" "$smsc_id" "$id" \
  "http://127.0.0.1:$evil/" "127.0.0.1:$smpp" > "$TMP/console.out" 2>&1 || rc=$?
cat "$TMP/console.out"
check "the console in the browser: every step as the operator expects (console.py exit $rc)" [ $rc = 0 ]
check "screenshots kept" bash -c "for f in connectors chart paused search connector account dropped; do [ -s '$BIN/artifacts/console-'\$f.png ] || exit 1; done"
check "the cross-origin post was refused by emgd, and logged" grep -q "POST /api/connectors/smpp-out/pause from .* refused: not from the console's own page" "$TMP/g.log"
check "the account the page added was kept in general.accounts_file, then removed" \
  bash -c "[ -f '$TMP/accounts.conf' ] && ! grep -q 'web1' '$TMP/accounts.conf'"
check "the page's script and no other, in no other site's frame (Content-Security-Policy)" bash -c "
  curl -sI http://127.0.0.1:$admin/ | grep -qi \"^content-security-policy: default-src 'self';.*frame-ancestors 'none'\" &&
  [ \"\$(curl -s -o /dev/null -w '%{http_code} %{content_type}' http://127.0.0.1:$admin/status.js)\" = '200 text/javascript; charset=utf-8' ] &&
  ! grep -qiE '<script>|https?://' <(curl -s http://127.0.0.1:$admin/)"
kill "$load_pid" 2>/dev/null || true
wait "$load_pid" 2>/dev/null || true
stop_emgd g
stop_sink s
finish
