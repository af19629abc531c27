#!/usr/bin/env bash
# refusals.sh BUILD - messages refused on their way in are counted by
# reason in every view: three accounts on one SMPP connector are refused
# for their max_rate ("capped"), their credit ("broke") and a recipient no
# route takes ("lost"); each count, exactly what emgload was refused, shows
# under its reason in emgctl status, in emgctl connectors (the narrow
# REFUSED column, --wide by reason, --json), in /metrics (the totals and
# per connector), in the periodic status line of the log, and in the
# console (the JSON it reads, and the page drawn in a headless Chromium).
# Then, idle, emgd writes no status line every 10 s. Finally emgctl takes
# its token from --token-file, with nothing on its command line.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=refusals-admin-token-0123456789
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 40; persist = false; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
accounts = (
  { name = "capped"; password = "pw"; max_rate = 5.0; },
  { name = "broke"; password = "pw"; credit = 3; },
  { name = "lost"; password = "pw"; }
);
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$SMPP_IN"; instances = 3;
    window = 50; },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 1;
    system_id = "emg"; password = "secret"; }
);
routes = ( { dst_prefix = "49"; to = "out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$SMPP_IN"
wait_port "$ADMIN_PORT"
load() {  # load ACCOUNT JSON [emgload options]
  local account=$1 json=$2
  shift 2
  "$BIN/emgload" --protocol smpp --connect "127.0.0.1:$SMPP_IN" --user "$account" --password pw \
    --connections 1 --json --quiet --give-up 30 "$@" > "$TMP/$json" || true
}
# 60 at once into 5 a second; 10 for a credit of 3; 8 to France, where no route goes.
load capped capped.json --window 60 --count 60 --to 4917100:13
load broke broke.json --window 1 --count 10 --to 4917100:13
load lost lost.json --window 8 --count 8 --to 3361000:11
rate=$(jget "$TMP/capped.json" .refused)
credit=$(jget "$TMP/broke.json" .refused)
route=$(jget "$TMP/lost.json" .refused)
total=$((rate + credit + route))
check "emgload: capped refused for its rate ($rate of 60), broke 7 of 10 for credit ($credit), lost 8 of 8 ($route)" \
  bash -c "[ '$rate' -ge 20 ] && [ '$credit' = 7 ] && [ '$route' = 8 ]"

# emgctl status: the total and each reason that happened, none other.
admin_ctl status > "$TMP/status.txt"
row() {  # row FILE LABEL: the number after LABEL at a line's start (blanks before it allowed)
  awk -v l="$2" '{ sub(/^ +/, "") } $1 == l { print $2; exit }' "$1"
}
check "emgctl status: refused $total, by reason rate $rate, credit $credit, no_route $route ($(grep -A4 '^refused' "$TMP/status.txt" | tr -s ' \n' ' '))" \
  bash -c "[ '$(row "$TMP/status.txt" refused)' = $total ] && [ '$(row "$TMP/status.txt" rate)' = $rate ] &&
           [ '$(row "$TMP/status.txt" credit)' = $credit ] && [ '$(row "$TMP/status.txt" no_route)' = $route ]"
check "emgctl status: no line for the reasons that did not happen" \
  bash -c "! grep -Eq '^ +(queue_full|journal|plugin|too_long|account_limit|other) ' '$TMP/status.txt'"
admin_ctl --wide status > "$TMP/status-wide.txt"
check "emgctl --wide status: every reason, those that did not happen at 0" \
  bash -c "[ '$(row "$TMP/status-wide.txt" journal)' = 0 ] && [ '$(row "$TMP/status-wide.txt" rate)' = $rate ]"
admin_ctl --json status > "$TMP/status.json"
check "emgctl --json status: refused_messages $total and refused_by; the totals keep their keys" \
  bash -c "[ \"\$(jq -c '[.refused_messages, .refused_by.rate, .refused_by.credit, .refused_by.no_route, .refused_by.queue_full, .totals.refused_no_route, .totals.refused_rate, .totals.refused_credit, .totals.refused_queue_full]' '$TMP/status.json')\" = '[$total,$rate,$credit,$route,0,$route,$rate,$credit,0]' ]"

# emgctl connectors: the narrow table has REFUSED; --wide and --json by reason.
admin_ctl connectors > "$TMP/connectors.txt"
col() {  # col FILE ROW HEADER: the cell of column HEADER in the row whose first cell is ROW
  awk -v r="$2" -v h="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == h) c = i }
                            $1 == r && c { print $(c + ($1 == "total" ? -1 : 0)); exit }' "$1"
}
check "emgctl connectors (narrow): a REFUSED column, $total for smpp-in, 0 for out ($(head -1 "$TMP/connectors.txt"))" \
  bash -c "grep -q ' REFUSED ' '$TMP/connectors.txt' && [ \"\$(awk '\$1 == \"smpp-in\"' '$TMP/connectors.txt' | grep -c ' $total ')\" = 1 ]"
check "emgctl connectors (narrow): fits 80 columns" \
  bash -c "[ \$(awk '{ if (length > m) m = length } END { print m }' '$TMP/connectors.txt') -le 80 ]"
admin_ctl --wide connectors > "$TMP/connectors-wide.txt"
by_reason() {  # by_reason FILE CONNECTOR REASON: from the REFUSED BY REASON table
  awk -v n="$2" -v r="$3" '/^REFUSED BY REASON/ { for (i = 1; i <= NF; i++) if ($i == r) c = i - 2; on = 1; next }
                           on && $1 == n && c { print $(c); exit }' "$1"
}
check "emgctl --wide connectors: smpp-in refused by reason (rate $rate, credit $credit, no_route $route)" \
  bash -c "[ '$(by_reason "$TMP/connectors-wide.txt" smpp-in rate)' = $rate ] &&
           [ '$(by_reason "$TMP/connectors-wide.txt" smpp-in credit)' = $credit ] &&
           [ '$(by_reason "$TMP/connectors-wide.txt" smpp-in no_route)' = $route ]"
admin_ctl --json connectors > "$TMP/connectors.json"
check "emgctl --json connectors: refused_messages and refused_by for smpp-in; refused (every error answer) kept" \
  bash -c "[ \"\$(jq -c '.connectors[] | select(.name == \"smpp-in\") | [.refused_messages, .refused_by.rate, .refused_by.credit, .refused_by.no_route, .refused_by.journal, (.refused | type)]' '$TMP/connectors.json')\" = '[$total,$rate,$credit,$route,0,\"number\"]' ]"

# /metrics: the totals by reason, every reason present, and per connector.
admin_call /metrics > "$TMP/metrics.txt"
metric() {  # metric FILE SAMPLE: the value of the sample named exactly so
  awk -v s="$2" '$1 == s { print $2 }' "$1"
}
check "/metrics: emg_messages_refused_total by reason (rate, credit, no_route; queue_full 0)" \
  bash -c "[ '$(metric "$TMP/metrics.txt" 'emg_messages_refused_total{reason="rate"}')' = $rate ] &&
           [ '$(metric "$TMP/metrics.txt" 'emg_messages_refused_total{reason="credit"}')' = $credit ] &&
           [ '$(metric "$TMP/metrics.txt" 'emg_messages_refused_total{reason="no_route"}')' = $route ] &&
           [ '$(metric "$TMP/metrics.txt" 'emg_messages_refused_total{reason="queue_full"}')' = 0 ]"
check "/metrics: every reason of the totals present (10)" \
  bash -c "[ \$(grep -c '^emg_messages_refused_total{reason=' '$TMP/metrics.txt') = 10 ]"
check "/metrics: emg_connector_messages_refused_total per connector and reason" \
  bash -c "[ '$(metric "$TMP/metrics.txt" 'emg_connector_messages_refused_total{connector="smpp-in",reason="rate"}')' = $rate ] &&
           [ '$(metric "$TMP/metrics.txt" 'emg_connector_messages_refused_total{connector="smpp-in",reason="no_route"}')' = $route ] &&
           [ '$(metric "$TMP/metrics.txt" 'emg_connector_messages_refused_total{connector="out",reason="rate"}')' = 0 ]"

# The status line: within a look or two (10 s each), the refusals by reason.
line="refused $total \\(rate $rate, credit $credit, no_route $route\\)"
rc=0
logged "$TMP/g.log" "status: .*, in flight 0, $line" 40 || rc=$?
check "the status line: '$(grep -o 'refused [0-9]* ([^)]*)' "$TMP/g.log" | tail -1)' (want: ${line//\\/})" [ $rc = 0 ]

# Idle: once the line said it all, no line every 10 s (at most one an hour).
# 25 s idle would have given two more lines before.
before=$(grep -c 'status: received' "$TMP/g.log")
sleep 25
after=$(grep -c 'status: received' "$TMP/g.log")
check "idle for 25 s: no status line logged ($before lines before, $after after)" [ "$before" = "$after" ]

# The console: the JSON its page reads, and the page itself in a browser.
admin_call /api/status > "$TMP/api-status.json"
check "the console's data (/api/status): refused_messages $total, refused_by.rate $rate" \
  bash -c "[ \"\$(jq -c '[.refused_messages, .refused_by.rate]' '$TMP/api-status.json')\" = '[$total,$rate]' ]"
rc=0
if /usr/bin/python3 -c 'import selenium' 2>/dev/null && [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "http://127.0.0.1:$ADMIN_PORT" "$ADMIN_TOKEN" "$rate" "$credit" "$route" \
    > "$TMP/browser.txt" 2>&1 <<'PY' || rc=$?
import sys
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
import console_lib
from console_lib import check, until
url, token, rate, credit, route = sys.argv[1:6]
total = int(rate) + int(credit) + int(route)
driver = console_lib.browser()
try:
    driver.get(url + "/")
    WebDriverWait(driver, 30).until(ec.visibility_of_element_located((By.ID, "login")))
    check("the login form says where the token is",
          "/etc/emg/admin.token" in driver.find_element(By.ID, "login").text and
          "general.admin" not in driver.find_element(By.ID, "login").text)
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login-button").click()
    WebDriverWait(driver, 30).until(ec.visibility_of_element_located((By.ID, "console")))
    js = driver.execute_script
    cells = lambda table, key: js("const r = document.querySelector('#%s tr[data-key=\\'%s\\']');"
                                  " return r ? [...r.cells].map(c => c.textContent) : null" % (table, key))
    got = until(lambda: cells("refused", "rate"))
    check("the page: refusals by reason, rate %s for all and smpp-in (%s)" % (rate, got),
          until(lambda: cells("refused", "rate") == ["rate", rate, rate]))
    check("... credit %s, no_route %s, total %d" % (credit, route, total),
          cells("refused", "credit") == ["credit", credit, credit] and
          cells("refused", "no_route") == ["no_route", route, route] and
          cells("refused", "total") == ["total", str(total), str(total)])
    head = js("return [...document.querySelectorAll('#connectors tr')[0].cells].map(c => c.textContent)")
    refused = js("const r = document.querySelector('#connectors tr[data-key=\\'smpp-in\\']');"
                 " return r ? r.cells[%d].textContent : null" % head.index("refused"))
    check("the page: the connectors' refused column, %d for smpp-in (%s)" % (total, refused), refused == str(total))
    health = cells("health", "refused")
    check("the overview: a refused row naming the reasons (%s)" % health,
          health is not None and health[1] == "warn" and ("rate %s" % rate) in health[2])
finally:
    driver.quit()
sys.exit(1 if console_lib.failed else 0)
PY
  cat "$TMP/browser.txt"
  check "the console in a browser shows the refusals by reason (exit $rc)" [ $rc = 0 ]
else
  echo "(no Selenium or Chromium here: the page's drawing is not checked in a browser)"
fi

# emgctl's token from a file (nothing on its command line), and a clear error for a missing one.
printf '%s\n' "$ADMIN_TOKEN" > "$TMP/token"
check "emgctl --token-file FILE: the token read from it, its newline trimmed" \
  bash -c "env -u EMGCTL_TOKEN '$BIN/emgctl' --url 'http://127.0.0.1:$ADMIN_PORT' --token-file '$TMP/token' --json status | jq -e '.refused_messages == $total' > /dev/null"
check "EMGCTL_TOKEN_FILE: the same" \
  bash -c "env -u EMGCTL_TOKEN EMGCTL_TOKEN_FILE='$TMP/token' '$BIN/emgctl' --url 'http://127.0.0.1:$ADMIN_PORT' --json status | jq -e '.refused_messages == $total' > /dev/null"
rc=0
env -u EMGCTL_TOKEN "$BIN/emgctl" --url "http://127.0.0.1:$ADMIN_PORT" --token-file "$TMP/none" status \
  > /dev/null 2> "$TMP/none.err" || rc=$?
check "a token file that is not there: exit 5, naming it ($(cat "$TMP/none.err"))" \
  bash -c "[ $rc = 5 ] && grep -q '$TMP/none' '$TMP/none.err'"
rc=0
env -u EMGCTL_TOKEN "$BIN/emgctl" --token x --token-file "$TMP/token" status > /dev/null 2> "$TMP/both.err" || rc=$?
check "--token and --token-file together: exit 5 ($(cat "$TMP/both.err"))" [ $rc = 5 ]

before=$(grep -c 'status: received' "$TMP/g.log")
stop_emgd g
check "the stop: one status line more, with the refusals" \
  bash -c "[ \$(grep -c 'status: received' '$TMP/g.log') = $((before + 1)) ] &&
           grep 'status: received' '$TMP/g.log' | tail -1 | grep -Eq '$line'"
stop_sink s
finish
