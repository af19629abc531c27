#!/usr/bin/env bash
# guessing.sh BUILD - a brake on password guessing: 1,000 wrong passwords
# from one address, each on a connection of its own. After
# auth_max_failures of them its logins are refused unheard (the right
# password too) for auth_block_time, on every connector, and logged once;
# a client from another address binds meanwhile within a second; /metrics
# counts the refusals; once the block ends, the address is served again.
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
ucp=$(free_port)
admin_port=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 16; persist = false; auth_max_failures = 5; auth_failure_window = 60; auth_block_time = 6; };
admin: { listen = "127.0.0.1:$admin_port"; token = "guessing-test-token"; };
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp"; instances = 4;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 1;
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
wait_port "$ucp"
client() { python3 "$(dirname "$0")/smpp_client.py" "$@"; }

read -r ok refused secs < <(client bind "127.0.0.1:$smpp" load guess 1000)
check "1,000 guesses from 127.0.0.1: none bound ($ok bound, $refused refused, in $secs s)" \
  [ "$ok/$refused" = "0/1000" ]
evaluated=$(grep -c "bind from 127.0.0.1:[0-9]* as 'load' refused: unknown account or wrong password" "$TMP/g.log" || true)
check "... only the first 5 had their password looked at ($evaluated)" [ "$evaluated" = 5 ]
check "... and the block was logged once" \
  [ "$(grep -c '5 failed logins from 127.0.0.1 within 60 s (the last a bind): its logins are refused for 6 s' "$TMP/g.log")" = 1 ]
read -r ok refused secs < <(client bind "127.0.0.1:$smpp" load secret 1)
check "while blocked, the right password from 127.0.0.1 is refused too" [ "$ok/$refused" = "0/1" ]
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret --count 1 \
  --json --quiet --give-up 3 > "$TMP/ucp-blocked.json" 2>/dev/null || true
check "... on UCP as well" [ "$(jget "$TMP/ucp-blocked.json" .acked)" = 0 ]
read -r ok refused secs < <(client bind "127.0.0.1:$smpp" load secret 1 127.0.0.2)
check "another address (127.0.0.2) binds meanwhile, within a second ($secs s)" \
  bash -c "[ '$ok/$refused' = 1/0 ] && awk -v s='$secs' 'BEGIN { exit !(s < 1) }'"
blocked=$(curl -s -H 'Authorization: Bearer guessing-test-token' "http://127.0.0.1:$admin_port/metrics" |
  awk '$1 == "emg_logins_blocked_total" { print $2 }')
check "/metrics counts the logins refused unheard ($blocked >= 995)" [ "${blocked:-0}" -ge 995 ]

sleep 6.5
read -r ok refused secs < <(client bind "127.0.0.1:$smpp" load secret 1)
check "after the block, 127.0.0.1 binds again" [ "$ok/$refused" = "1/0" ]
stop_emgd g
stop_sink s
check "... and the log says how many were refused meanwhile" \
  grep -q "logins from 127.0.0.1 allowed again: [0-9]* refused while it was blocked" "$TMP/g.log"
check "the log has no line for each refused guess ($(wc -l < "$TMP/g.log") lines in all)" [ "$(wc -l < "$TMP/g.log")" -lt 100 ]
finish
