#!/usr/bin/env bash
# accounts.sh BUILD - the accounts of the configuration at the edge: a
# password kept as a yescrypt hash, allow_ip, max_binds, disabled and
# expired accounts, an account of another connector; each bind refused
# says why, in the protocol (SMPP ESME_RINVSYSID, ESME_RINVPASWD,
# ESME_RBINDFAIL) and in the log, and the refusals are counted by reason in
# /api/status and /metrics.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

TOKEN=accounts-admin-token-0123456789
start_sink s smpp --undeliv-rate 0.2
smpp=$(free_port)
ucp=$(free_port)
admin=$(free_port)
# "h0rse!42" (an SMPP password has 8 characters at most), hashed by
# mkpasswd -m yescrypt
HASH='$y$j9T$.hPiBczy.7XMpFAwo3OWe0$qTpLhKuz.tZO8l.Ihre20b9LOoF6OSr6vCBHz.in7tD'
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 35; persist = false; };
admin: { listen = "127.0.0.1:$admin"; token = "$TOKEN"; };
accounts = (
  { name = "acme"; password_hash = "$HASH"; connectors = [ "smpp-in" ];
    allow_ip = [ "127.0.0.1/32", "::1" ]; max_binds = 2; },
  { name = "off"; password = "pw"; enabled = false; },
  { name = "old"; password = "pw"; expires = "2020-01-01"; },
  { name = "ucponly"; password = "pw"; connectors = [ "ucp-in" ]; }
);
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp"; instances = 4; },
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 2; },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
wait_port "$ucp"
wait_port "$admin"
binds() { python3 "$(dirname "$0")/smpp_client.py" statuses "127.0.0.1:$smpp" "$@"; }

got=$(binds acme "h0rse!42" 3)
check "acme (a yescrypt hash) binds twice of three at once: max_binds 2 ($got)" [ "$got" = "0x00 0x00 0x0d" ]
got=$(binds acme "h0rse!42" 2)
check "... and twice again once those sessions ended: their binds were given back ($got)" [ "$got" = "0x00 0x00" ]
got=$(binds acme "h0rse!42" 1 127.0.0.2)
check "acme from 127.0.0.2, outside allow_ip: ESME_RBINDFAIL ($got)" [ "$got" = 0x0d ]
got=$(binds acme "h0rse!43" 1)
check "a wrong password: ESME_RINVPASWD ($got)" [ "$got" = 0x0e ]
got=$(binds nobody pw 1)
check "an unknown account: ESME_RINVSYSID ($got)" [ "$got" = 0x0f ]
got=$(binds ucponly pw 1)
check "an account of another connector is unknown here: ESME_RINVSYSID ($got)" [ "$got" = 0x0f ]
got=$(binds off pw 1)
check "a disabled account: ESME_RBINDFAIL ($got)" [ "$got" = 0x0d ]
got=$(binds old pw 1)
check "an expired account: ESME_RBINDFAIL ($got)" [ "$got" = 0x0d ]
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user ucponly --password pw \
  --count 50 --dlr --json --quiet --give-up 20 > "$TMP/ucp.json" || true
check "ucponly sends over ucp-in, its own connector ($(jget "$TMP/ucp.json" .acked) of 50 acked, their receipts back)" \
  [ "$(jget "$TMP/ucp.json" .acked)" = 50 -a "$(jget "$TMP/ucp.json" .receipts)" = 50 ]

curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$admin/api/status" > "$TMP/status.json"
check "/api/status counts the refusals by reason ($(jq -c .refusals "$TMP/status.json"))" \
  [ "$(jq -c '.refusals | [.unknown, .password, .disabled, .expired, .address, .max_binds, .no_instance]' \
        "$TMP/status.json")" = "[2,1,1,1,1,1,0]" ]
curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$admin/api/accounts" > "$TMP/accounts.json"
check "/api/accounts lists the four accounts, ucponly with its 50 submits and acme with no session left" \
  [ "$(jq -c '[.accounts[] | [.name, .submitted, .binds, .max_binds]]' "$TMP/accounts.json")" = \
    '[["acme",0,0,2],["off",0,0,0],["old",0,0,0],["ucponly",50,0,0]]' ]
undelivered=$(jq '.accounts[3].receipts.undelivered' "$TMP/accounts.json")
# The sink makes a fifth of its receipts UNDELIV: about 10 of 50 (none at all: 1 in 70,000).
check "ucponly's receipts: delivered and undelivered counted apart (undelivered $undelivered)" \
  bash -c "[ \$(jq '.accounts[3].receipts | .delivered + .undelivered' '$TMP/accounts.json') = 50 ] &&
           [ \$(jq '.accounts[0].receipts.delivered' '$TMP/accounts.json') = 0 ] &&
           [ $undelivered -gt 0 -a $undelivered -lt 30 ]"
"$BIN/emgctl" --url "http://127.0.0.1:$admin" --token "$TOKEN" accounts > "$TMP/accounts.txt"
check "emgctl accounts: a table that fits 80 columns, acme's sessions against max_binds" \
  bash -c "[ \$(awk '{ print length }' '$TMP/accounts.txt' | sort -n | tail -1) -le 80 ] &&
           grep -Eq '^acme +enabled +0/2 ' '$TMP/accounts.txt' && grep -Eq '^old +expired ' '$TMP/accounts.txt' && grep -Eq '^ucponly +enabled +0 +[0-9]+/- +unlimited +50 ' '$TMP/accounts.txt'"
check "emgctl --wide accounts: ucponly's share of receipts delivered" bash -c "
  '$BIN/emgctl' --url http://127.0.0.1:$admin --token $TOKEN --wide accounts |
    grep -Eq '^ucponly .* $(awk -v u="$undelivered" 'BEGIN { printf "%.1f", 100 * (50 - u) / 50 }') % of 50\$'"
curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$admin/metrics" > "$TMP/metrics.txt"
check "/metrics counts per account" grep -qx 'emg_account_submitted_total{account="ucponly"} 50' "$TMP/metrics.txt"
check "... and its refusals per reason" \
  bash -c "grep -qx 'emg_account_refused_total{account=\"acme\",reason=\"sender\"} 0' '$TMP/metrics.txt' &&
           grep -qx 'emg_account_binds{account=\"acme\"} 0' '$TMP/metrics.txt'"
check "... and its receipts by outcome" \
  grep -qx "emg_account_receipts_total{account=\"ucponly\",state=\"undelivered\"} $undelivered" "$TMP/metrics.txt"
check "/metrics has them as emg_logins_refused_total" \
  grep -qx 'emg_logins_refused_total{reason="address"} 1' "$TMP/metrics.txt"
stop_emgd g
stop_sink s
for why in "max_binds reached" "address not allowed (allow_ip)" "wrong password" "unknown account" \
           "account disabled" "account expired"; do
  check "the log says why: $why" grep -q "bind from 127.0.0.[12]:[0-9]* as '[a-z]*' refused: $why" "$TMP/g.log"
done
check "no password in the log" bash -c "! grep -q 'h0rse' '$TMP/g.log'"
finish
