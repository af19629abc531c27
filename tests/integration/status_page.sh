#!/usr/bin/env bash
# status_page.sh BUILD - emgd's embedded status page in headless Chromium:
# it loads, shows the connectors of the running configuration with the
# state of each instance (paused while the operator pauses one) and the
# queues, and its msgs/s chart moves while emgload runs. The screenshot is kept in
# BUILD/artifacts/status-page.png.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --user emg --password secret
ucp=$(free_port); admin=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 11; persist = false; };
admin: { listen = "127.0.0.1:$admin"; token = "page-token-0123456789"; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 2;
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "smpp-out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$ucp"
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --duration 6 --rate 2000 --json --quiet --give-up 30 > "$TMP/load.json" &
load_pid=$!
STARTED_PIDS+=("$load_pid")
sleep 1

# The flags the machine needs for a headless Chromium with no network but loopback.
browse() {
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$TMP/profile-$1" --virtual-time-budget=5000 "${@:2}" 2>>"$TMP/chromium.log"
}
url="http://127.0.0.1:$admin/#token=page-token-0123456789"
browse a --dump-dom "$url" > "$TMP/dom1.html"
browse b --dump-dom "$url" > "$TMP/dom2.html"
mkdir -p "$BIN/artifacts"
browse c --window-size=1400,1100 --screenshot="$BIN/artifacts/status-page.png" "$url" >/dev/null

check "the page is served without the token" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin/")" = 200 ]
check "it shows the running connectors" \
  bash -c "grep -q '<td>ucp-in</td>' '$TMP/dom1.html' && grep -q '<td>smpp-out</td>' '$TMP/dom1.html'"
check "it reached the API with the token (no error shown)" grep -q 'id="error"></div>' "$TMP/dom1.html"
points=$(grep -o 'data-points="[0-9]*"' "$TMP/dom1.html" | grep -o '[0-9]*')
last=$(grep -o 'data-last="[0-9]*"' "$TMP/dom1.html" | grep -o '[0-9]*')
check "the chart has samples ($points) and a rate above zero ($last)" bash -c "[ '${points:-0}' -ge 2 ] && [ '${last:-0}' -gt 0 ]"
r1=$(grep -o '<td>received</td><td>[0-9]*' "$TMP/dom1.html" | grep -o '[0-9]*$')
r2=$(grep -o '<td>received</td><td>[0-9]*' "$TMP/dom2.html" | grep -o '[0-9]*$')
check "the counts move between two loads ($r1 -> $r2)" bash -c "[ '${r2:-0}' -gt '${r1:-0}' ]"
check "a screenshot was kept" [ -s "$BIN/artifacts/status-page.png" ]
instance() {  # instance DOM KEY: the cells of one instance row, as text separated by |
  grep -o "<tr data-key=\"$2\">.*" "$1" | sed 's#</tr>.*##; s#<td[^>]*>#|#g; s#</td>##g; s#<tr[^>]*>##'
}
check "instances: both of smpp-out's bound to the sink as emg (trx)" bash -c "
  [ \"\$(grep -o '<tr data-key=\"smpp-out/[01]\"><td>smpp-out</td><td>[01]</td><td class=\"up\">bound</td><td>127.0.0.1:$SINK_PORT_s</td><td>emg</td><td>trx</td>' '$TMP/dom1.html' | wc -l)\" = 2 ]"
check "instances: ucp-in's two, one bound to emgload as load, one idle" bash -c "
  grep -q '<tr data-key=\"ucp-in/[01]\"><td>ucp-in</td><td>[01]</td><td class=\"up\">bound</td><td>127.0.0.1:[0-9]*</td><td>load</td>' '$TMP/dom1.html' &&
  grep -q '<tr data-key=\"ucp-in/[01]\"><td>ucp-in</td><td>[01]</td><td>idle</td><td>–</td>' '$TMP/dom1.html'"
out0=$(instance "$TMP/dom2.html" smpp-out/0 | cut -d'|' -f10)
out1=$(instance "$TMP/dom2.html" smpp-out/1 | cut -d'|' -f10)
check "instances: counts per instance (smpp-out's messages out: $out0 + $out1)" \
  bash -c "[ $((${out0:-0} + ${out1:-0})) -gt 0 ] && [ '${out0//[0-9]/}${out1//[0-9]/}' = '' ]"
check "queues: a row per connector and one for ucp-in's account" bash -c "
  grep -q '<tr data-key=\"smpp-out\"><td>smpp-out</td><td>–</td><td>[0-9]*</td>' '$TMP/dom1.html' &&
  grep -q '<tr data-key=\"ucp-in/load\"><td>ucp-in</td><td>load</td>' '$TMP/dom1.html'"
acct=$(instance "$TMP/dom2.html" account/load)
check "accounts: a row per account, its state and submits ($acct)" \
  bash -c "echo '$acct' | grep -Eq '^\|load\|enabled\|[0-9]+\|–\|[0-9]+\|–\|unlimited\|[1-9][0-9]*\|0\|0\|0$'"
curl -s -X POST -H 'Authorization: Bearer page-token-0123456789' "http://127.0.0.1:$admin/api/connectors/smpp-out/pause" > /dev/null
browse d --dump-dom "$url" > "$TMP/dom3.html"
curl -s -X POST -H 'Authorization: Bearer page-token-0123456789' "http://127.0.0.1:$admin/api/connectors/smpp-out/resume" > /dev/null
check "paused: smpp-out's instances and its connector row show it, its queue says so" bash -c "
  [ \"\$(grep -o '<tr data-key=\"smpp-out/[01]\"><td>smpp-out</td><td>[01]</td><td class=\"paused\">paused</td>' '$TMP/dom3.html' | wc -l)\" = 2 ] &&
  grep -q '<tr data-key=\"smpp-out\"><td>smpp-out</td><td>smpp</td><td>client</td><td>[^<]*</td><td class=\"paused\">paused</td>' '$TMP/dom3.html' &&
  grep -q '<tr data-key=\"smpp-out\"><td>smpp-out</td><td>–</td><td>[0-9]*</td><td>[^<]*</td><td>yes</td>' '$TMP/dom3.html'"
check "the page has no external assets" bash -c "! grep -Eq '(src|href)=\"(https?:)?//' '$TMP/dom1.html'"
wait "$load_pid" || true
stop_emgd g 20
finish
