#!/usr/bin/env bash
# emgload_refusals.sh BUILD - emgload after a refusal, as an operator reads
# it:
#  - a bind (HTTP: a login) refused for its credentials is not tried again
#    in a loop: over SMPP (ESME_RINVPASWD, ESME_RINVSYSID) the one bind, over
#    UCP and CIMD2, whose refusal does not say why, two at most, over HTTP
#    one request (the first goes alone), whatever --connections asks; the
#    gateway counts that many failed logins (emg_binds_refused_total), not a
#    guard's worth. emgload says why in one line, --quiet or not, exits
#    non-zero, and its summary says why the messages went unsent;
#  - messages refused are counted by the protocol's reason in the summary
#    (text and JSON): ESME_RTHROTTLED for an account over its max_rate;
#  - the right password still works, with every connection bound.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
ucp=$(free_port)
cimd2=$(free_port)
web=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=emgload-refusals-token
{
  # A guard that this test's few failures cannot trip: a loop of binds would.
  echo 'general: { node_id = 41; persist = false; auth_max_failures = 1000; };'
  echo "admin: { listen = \"127.0.0.1:$ADMIN_PORT\"; token = \"$ADMIN_TOKEN\"; };"
  echo 'accounts = ( { name = "slow"; password = "pw"; max_rate = 20.0; } );'
  echo 'connectors = ('
  conf_server smpp-in smpp "$smpp" 4
  conf_server ucp-in ucp "$ucp" 4
  conf_server cimd2-in cimd2 "$cimd2" 4
  conf_server web http "$web" 1
  conf_to_sink "$SINK_PORT_s"
} > "$TMP/emgd.conf"
start_emgd g "$TMP/emgd.conf"
for port in "$smpp" "$ucp" "$cimd2" "$web" "$ADMIN_PORT"; do wait_port "$port"; done

refused_binds() {
  admin_call /metrics | awk '$1 == "emg_binds_refused_total" { print $2 }'
}
# refusal NAME PROTOCOL PORT USER PASSWORD MOST [emgload options]: emgload
# with 4 connections and --quiet (a give-up of 20 s, which a loop of
# reconnects would run into); checks its exit status, its one line, its
# summary, and that emgd saw at most MOST refused logins.
refusal() {
  local name=$1 proto=$2 port=$3 user=$4 password=$5 most=$6 rc=0 before after
  shift 6
  before=$(refused_binds)
  "$BIN/emgload" --protocol "$proto" --connect "127.0.0.1:$port" --user "$user" --password "$password" \
    --connections 4 --count 100 --quiet --give-up 20 "$@" > "$TMP/$name.out" 2> "$TMP/$name.err" || rc=$?
  after=$(refused_binds)
  check "$name: emgload exits non-zero (status $rc)" [ "$rc" -ne 0 ]
  check "$name: emgd saw $((after - before)) refused logins (1..$most), not a loop of them" \
    between "$((after - before))" 1 "$most"
  check "$name: one line on stderr says why, with --quiet ($(head -c 200 "$TMP/$name.err"))" \
    bash -c "[ \$(grep -c 'refused by 127.0.0.1:$port' '$TMP/$name.err') = 1 ]"
  check "$name: the summary says why the 100 went unsent ($(grep unsent "$TMP/$name.out"))" \
    grep -Eq '^  unsent +(99|100)  \((no connection could bind|the login was refused)\)$' "$TMP/$name.out"
}

refusal smpp-password smpp "$smpp" load wrong 1
check "smpp-password: the line names ESME_RINVPASWD" \
  grep -q '^emgload: bind refused by 127.0.0.1:[0-9]*: ESME_RINVPASWD (0x0e), an invalid password; not binding again$' \
  "$TMP/smpp-password.err"
check "smpp-password: the summary says the connections stopped, and why" \
  grep -Eq '^  stopped +1  connections, 3 not opened: bind refused by .*ESME_RINVPASWD' "$TMP/smpp-password.out"
refusal smpp-unknown smpp "$smpp" nobody secret 1
check "smpp-unknown: the line names ESME_RINVSYSID" grep -q 'ESME_RINVSYSID (0x0f), an unknown account' "$TMP/smpp-unknown.err"
refusal ucp-password ucp "$ucp" load wrong 2
check "ucp-password: the line names UCP's NACK (EC 07)" grep -q 'EC 07 Authentication failure' "$TMP/ucp-password.err"
refusal cimd2-password cimd2 "$cimd2" load wrong 2
check "cimd2-password: the line names CIMD2's error 100" grep -q 'error 100 Invalid login' "$TMP/cimd2-password.err"
refusal http-json http "$web" load wrong 1 --window 20
check "http-json: the line names the 401" grep -q 'login refused by 127.0.0.1:[0-9]*: HTTP 401' "$TMP/http-json.err"
refusal http-kannel http "$web" load wrong 1 --http-api kannel --window 20
check "http-kannel: the line names the 403" grep -q 'login refused by 127.0.0.1:[0-9]*: HTTP 403' "$TMP/http-kannel.err"
check "the gateway's log has the 5 wrong passwords of the binds (1 SMPP, 2 UCP, 2 CIMD2) and no more" \
  [ "$(grep -c "bind from 127.0.0.1:[0-9]* as 'load' refused: wrong password" "$TMP/g.log")" = 5 ]

# Refusals by reason: an account over its max_rate (20/s) is throttled.
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp" --user slow --password pw --window 50 --count 300 \
  --quiet --give-up 30 > "$TMP/slow.out" 2>&1 || true
refused=$(awk '$1 == "refused" { print $2 }' "$TMP/slow.out")
check "throttled: the summary's refused line keeps its count ($refused > 0) and says why" \
  bash -c "[ '${refused:-0}' -gt 0 ] && grep -Eq '^  refused +$refused  \\($refused ESME_RTHROTTLED \\(0x58\\)\\)$' '$TMP/slow.out'"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp" --user slow --password pw --window 50 --count 300 \
  --json --quiet --give-up 30 > "$TMP/slow.json" 2>/dev/null || true
check "throttled: the JSON summary counts them by reason too" \
  [ "$(jq '.refused == .refusals["ESME_RTHROTTLED (0x58)"] and .refused > 0' "$TMP/slow.json")" = true ]

# The right password: every connection binds, every message acked, status 0.
rc=0
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp" --user load --password secret --connections 4 \
  --count 400 --json --quiet --give-up 30 > "$TMP/good.json" || rc=$?
check "the right password: all 400 acked, exit status 0 ($(jq -c '[.acked, .connections_refused]' "$TMP/good.json"), $rc)" \
  [ "$(jq -c '[.acked, .connections_refused, .refusal]' "$TMP/good.json")/$rc" = "[400,0,null]/0" ]
finish
