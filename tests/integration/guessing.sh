#!/usr/bin/env bash
# guessing.sh BUILD - a brake on password guessing: 1,000 wrong SMPP
# passwords from one address, each on a connection of its own. After
# auth_max_failures of them its logins are refused unheard (the right
# password too) for auth_block_time, on every connector, and logged once;
# a client from another address binds meanwhile, at once; /metrics
# counts the refusals; once the block ends, the address is served again.
# The same for an account whose password is a yescrypt hash (five
# hashings, not 1,000), HTTP Basic credentials, Kannel's sendsms and the
# admin token.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
ucp=$(free_port)
admin_port=$(free_port)
web=$(free_port)
{
  echo 'general: { node_id = 16; persist = false; auth_max_failures = 5; auth_failure_window = 60; auth_block_time = 20; };'
  echo "admin: { listen = \"127.0.0.1:$admin_port\"; token = \"guessing-test-token\"; };"
  # "h0rse!42" as yescrypt (mkpasswd -m yescrypt): about 25 ms to check here
  echo 'accounts = ( { name = "vault"; password_hash = "$y$j9T$.hPiBczy.7XMpFAwo3OWe0$qTpLhKuz.tZO8l.Ihre20b9LOoF6OSr6vCBHz.in7tD"; } );'
  echo 'connectors = ('
  conf_server web http "$web" 1
  conf_server smpp-in smpp "$smpp" 4
  conf_server ucp-in ucp "$ucp" 2
  conf_to_sink "$SINK_PORT_s"
} > "$TMP/emgd.conf"
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
wait_port "$ucp"
client() { python3 "$(dirname "$0")/smpp_client.py" "$@"; }

read -r ok refused secs slowest < <(client bind "127.0.0.1:$smpp" load guess 1000)
check "1,000 guesses from 127.0.0.1: none bound ($ok bound, $refused refused, in $secs s)" \
  [ "$ok/$refused" = "0/1000" ]
evaluated=$(grep -c "bind from 127.0.0.1:[0-9]* as 'load' refused: wrong password" "$TMP/g.log" || true)
check "... only the first 5 had their password looked at ($evaluated)" [ "$evaluated" = 5 ]
check "... and the block was logged once" \
  [ "$(grep -c '5 failed logins from 127.0.0.1 within 60 s (the last a bind): its logins are refused for 20 s' "$TMP/g.log")" = 1 ]
read -r ok refused secs slowest < <(client bind "127.0.0.1:$smpp" load secret 1)
check "while blocked, the right password from 127.0.0.1 is refused too" [ "$ok/$refused" = "0/1" ]
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret --count 1 \
  --json --quiet --give-up 3 > "$TMP/ucp-blocked.json" 2>/dev/null || true
check "... on UCP as well" [ "$(jget "$TMP/ucp-blocked.json" .acked)" = 0 ]
read -r ok refused secs slowest < <(client bind "127.0.0.1:$smpp" load secret 1 127.0.0.2)
check "another address (127.0.0.2) binds meanwhile, not kept waiting ($secs s)" \
  bash -c "[ '$ok/$refused' = 1/0 ] && awk -v s='$secs' 'BEGIN { exit !(s < 3) }'"
# An account whose password is a yescrypt hash: 1,000 guesses from
# 127.0.0.7 cost five hashings, not 1,000 (25 s), while the right password
# from 127.0.0.8 binds meanwhile.
read -r ok refused secs slowest < <(client bind "127.0.0.1:$smpp" vault guess 1000 127.0.0.7)
check "1,000 guesses at a hashed password from 127.0.0.7: none bound, all answered in $secs s (< 20)" \
  bash -c "[ '$ok/$refused' = 0/1000 ] && awk -v s='$secs' 'BEGIN { exit !(s < 20) }'"
hashed=$(grep -c "bind from 127.0.0.7:[0-9]* as 'vault' refused: wrong password" "$TMP/g.log" || true)
check "... only 5 of them hashed ($hashed)" [ "$hashed" = 5 ]
read -r ok refused secs slowest < <(client bind "127.0.0.1:$smpp" vault 'h0rse!42' 1 127.0.0.8)
check "the right password from 127.0.0.8 binds meanwhile ($ok/$refused in $secs s)" \
  bash -c "[ '$ok/$refused' = 1/0 ] && awk -v s='$secs' 'BEGIN { exit !(s < 3) }'"
# HTTP: 20 wrong Basic credentials from 127.0.0.3, then the right ones from
# there and from 127.0.0.4; Kannel's sendsms from 127.0.0.3 as well.
send() {  # send FROM USER:PASSWORD: the JSON API's status
  curl -s -o /dev/null -w '%{http_code}' --interface "$1" -u "$2" -H 'Content-Type: application/json' \
    -d '{"from": "4917000000001", "to": "4917100000001", "text": "hello"}' "http://127.0.0.1:$web/api/v1/messages"
}
for _ in $(seq 20); do send 127.0.0.3 load:guess > /dev/null; done
check "HTTP: after 20 wrong credentials, the right ones from 127.0.0.3 are refused too ($(send 127.0.0.3 load:secret))" \
  [ "$(send 127.0.0.3 load:secret)" = 401 ]
check "... and Kannel's sendsms from there as well" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.3 \
       "http://127.0.0.1:$web/cgi-bin/sendsms?username=load&password=secret&from=4917000000001&to=4917100000001&text=hi")" = 403 ]
check "HTTP: 127.0.0.4 is served meanwhile ($(send 127.0.0.4 load:secret))" [ "$(send 127.0.0.4 load:secret)" = 202 ]
# The admin token: 10 wrong ones from 127.0.0.5.
ask() {  # ask FROM TOKEN: the admin API's status for /api/status
  curl -s -o /dev/null -w '%{http_code}' --interface "$1" -H "Authorization: Bearer $2" "http://127.0.0.1:$admin_port/api/status"
}
codes=$(for _ in $(seq 10); do ask 127.0.0.5 a-wrong-token-guess; echo; done | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
check "admin API: 10 wrong tokens from 127.0.0.5: 5 refused as wrong, then 5 as too many ($codes)" [ "$codes" = "401:5 429:5 " ]
check "admin API: the right token from 127.0.0.5 waits for the block too" [ "$(ask 127.0.0.5 guessing-test-token)" = 429 ]
check "admin API: 127.0.0.6 is served meanwhile" [ "$(ask 127.0.0.6 guessing-test-token)" = 200 ]
blocked=$(curl -s --interface 127.0.0.6 -H 'Authorization: Bearer guessing-test-token' "http://127.0.0.1:$admin_port/metrics" |
  awk '$1 == "emg_logins_blocked_total" { print $2 }')
check "/metrics counts the logins refused unheard ($blocked >= 2005)" [ "${blocked:-0}" -ge 2005 ]

binds_again() {
  read -r ok refused secs slowest < <(client bind "127.0.0.1:$smpp" load secret 1)
  [ "$ok/$refused" = "1/0" ]
}
# The block (20 s, long enough for all the above on a slow machine: the
# checks made while blocked must not outlast it) ends; bounded at 60 s or so.
check "after the block, 127.0.0.1 binds again" wait_until 400 binds_again
stop_emgd g
stop_sink s
check "... and the log says how many were refused meanwhile" \
  grep -q "logins from 127.0.0.1 allowed again: [0-9]* refused while it was blocked" "$TMP/g.log"
check "the log has no line for each refused guess ($(wc -l < "$TMP/g.log") lines in all)" [ "$(wc -l < "$TMP/g.log")" -lt 100 ]
check "each address's block was logged once (127.0.0.3 by HTTP, 127.0.0.5 by the admin API)" \
  bash -c "grep -q 'from 127.0.0.3 within 60 s (the last an HTTP request)' '$TMP/g.log' &&
           grep -q 'from 127.0.0.5 within 60 s (the last an admin request)' '$TMP/g.log'"
finish
