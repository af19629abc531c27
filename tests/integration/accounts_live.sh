#!/usr/bin/env bash
# accounts_live.sh BUILD - accounts changed while emgd runs: an account
# added with emgctl binds at once; its credit runs out exactly (parts of a
# long message counted each; SMPP ESME_RSUBMITFAIL, HTTP 402) and survives
# a SIGKILL; disabled, its session is unbound and binds are refused;
# changes live in general.accounts_file (hashed, never a cleartext
# password) and survive a restart; its password changed, the old one (just
# proven) is refused at once; a hand edit of that file is put in place by a
# reload; an account of emgd.conf is refused, naming the file.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

TOKEN=accounts-live-token-0123456789
start_sink s smpp
smpp=$(free_port)
http=$(free_port)
admin=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 36; persist = true; spool_dir = "$TMP/spool"; accounts_file = "accounts.conf"; };
admin: { listen = "127.0.0.1:$admin"; token = "$TOKEN"; };
accounts = ( { name = "static"; password = "pw"; connectors = [ "smpp-in" ]; } );
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp"; instances = 4; },
  { name = "http-in"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$http"; },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
wait_port "$admin"
ctl() { "$BIN/emgctl" --url "http://127.0.0.1:$admin" --token "$TOKEN" "$@"; }
client() { python3 "$(dirname "$0")/smpp_client.py" "$@"; }
binds() { client statuses "127.0.0.1:$smpp" "$@"; }
account() { curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$admin/api/accounts/$1"; }

# Added live: binds at once, stored hashed.
ctl account add live --password pw123 --connector smpp-in --credit 5 > "$TMP/add.txt"
check "emgctl account add: done ($(cat "$TMP/add.txt"))" grep -q '^account live: enabled, 0 sessions, credit 5 left' "$TMP/add.txt"
got=$(binds live pw123 1)
check "the account added binds at once, no restart ($got)" [ "$got" = 0x00 ]
check "general.accounts_file holds it, hashed: no cleartext password" \
  bash -c "grep -q 'name = \"live\"' '$TMP/accounts.conf' && grep -qF 'password_hash = \"\$y\$' '$TMP/accounts.conf' &&
           ! grep -q pw123 '$TMP/accounts.conf'"

# Credit: 5 parts. Two messages of two parts each, then one of two is
# refused (one part left), one of one part goes, and the next is refused.
got="$(client submit "127.0.0.1:$smpp" live pw123 300) $(client submit "127.0.0.1:$smpp" live pw123 300)"
got="$got $(client submit "127.0.0.1:$smpp" live pw123 300) $(client submit "127.0.0.1:$smpp" live pw123 100)"
got="$got $(client submit "127.0.0.1:$smpp" live pw123 100)"
check "credit 5: 2+2 parts taken, 2 more refused with 1 left, 1 taken, then none (ESME_RSUBMITFAIL) ($got)" \
  [ "$got" = "0x00000000 0x00000000 0x00000045 0x00000000 0x00000045" ]
account live > "$TMP/live.json"
check "/api/accounts/live: no credit left, 2 refusals for credit ($(jq -c '[.credit_left, .refused.credit]' "$TMP/live.json"))" \
  [ "$(jq -c '[.credit_left, .refused.credit]' "$TMP/live.json")" = "[0,2]" ]

# HTTP: 402 when the credit is used up.
ctl account add web --password webpw --connector http-in --credit 1 > /dev/null
wait_port "$http"
sendsms() {
  curl -s -o /dev/null -w '%{http_code}' \
    "http://127.0.0.1:$http/cgi-bin/sendsms?username=web&password=webpw&from=4917000&to=4917100001&text=hi"
}
got="$(sendsms) $(sendsms)"
check "HTTP: the one part of credit taken (202), then 402 ($got)" [ "$got" = "202 402" ]

# Credit survives a SIGKILL: every acked part stays taken.
ctl account credit live --credit 1000 > "$TMP/credit.txt"
check "emgctl account credit sets it ($(cat "$TMP/credit.txt"))" grep -q 'live: 1000 credit left' "$TMP/credit.txt"
ctl account credit live --credit +500 > "$TMP/credit.txt"
check "... and adds to it ($(cat "$TMP/credit.txt"))" grep -q 'live: 1500 credit left' "$TMP/credit.txt"
"$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp" --user live --password pw123 --connections 2 \
  --count 800 --length 100 --json --quiet --give-up 20 > "$TMP/load.json" || true
check "800 one-part messages acked ($(jget "$TMP/load.json" .acked))" [ "$(jget "$TMP/load.json" .acked)" = 800 ]
check "700 left before the crash" [ "$(account live | jq .credit_left)" = 700 ]
kill_emgd g
start_emgd g "$TMP/emgd.conf"
wait_port "$admin"
left=$(account live | jq .credit_left)
check "after SIGKILL and a restart: 700 left, as acked ($left)" [ "$left" = 700 ]
check "... the log says the journal set it" grep -q "credit of 2 accounts as the journal left it" "$TMP/g.log"

# Disabled: the session is unbound, binds refused; enabled: binds again.
client hold "127.0.0.1:$smpp" live pw123 10 > "$TMP/hold.txt" &
holder=$!
for _ in $(seq 300); do grep -q bound "$TMP/hold.txt" && break; sleep 0.1; done
ctl account disable live > /dev/null
wait "$holder"
check "disabling unbinds its session ($(tr '\n' ' ' < "$TMP/hold.txt"))" [ "$(tail -1 "$TMP/hold.txt")" = unbind ]
check "... and says why in the log" grep -q "unbinding 'live' (127.0.0.1:[0-9]*): account disabled" "$TMP/g.log"
got=$(binds live pw123 1)
check "a disabled account's bind is refused: ESME_RBINDFAIL ($got)" [ "$got" = 0x0d ]
ctl account enable live > /dev/null
ctl account set live --max-binds 1 > /dev/null
got=$(binds live pw123 2)
check "enabled again, max_binds 1 changed live: one of two binds ($got)" [ "$got" = "0x00 0x0d" ]

# Changes survive a restart.
stop_emgd g
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
wait_port "$admin"
account live > "$TMP/live.json"
check "after a restart: enabled, max_binds 1, credit 700 left ($(jq -c '[.enabled, .max_binds, .credit_left]' "$TMP/live.json"))" \
  [ "$(jq -c '[.enabled, .max_binds, .credit_left]' "$TMP/live.json")" = "[true,1,700]" ]
got=$(binds live pw123 1)
check "... and it binds ($got)" [ "$got" = 0x00 ]

# A password changed live: the old one, just proven by a bind (and so
# spared the hashing for a while), is refused at once; the new one binds.
ctl account set live --password pw456 > "$TMP/password.txt"
got="$(binds live pw123 1) $(binds live pw456 1) $(binds live pw123 1)"
check "emgctl account set --password: the old password refused at once, the new one binds (ESME_RINVPASWD, OK: $got)" \
  [ "$got" = "0x0e 0x00 0x0e" ]

# An account of emgd.conf is changed there.
ctl account set static --max-binds 3 > "$TMP/static.txt" && rc=0 || rc=$?
check "emgctl account set on an account of emgd.conf: refused, naming the file (exit $rc)" \
  bash -c "[ $rc = 1 ] && grep -q 'refused: account static is defined in $TMP/emgd.conf (line 3)' '$TMP/static.txt'"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PATCH -H "Authorization: Bearer $TOKEN" \
  -d '{"max_binds": "x"}' "http://127.0.0.1:$admin/api/accounts/live")
check "a bad field: 400 ($code)" [ "$code" = 400 ]
code=$(curl -s -o "$TMP/bad.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
  -d '{"name": "x", "password": "p", "allow_ip": ["10.0.0.300/8"]}' "http://127.0.0.1:$admin/api/accounts")
check "a bad allow_ip: 400 naming it ($code $(jq -r .error "$TMP/bad.json"))" \
  bash -c "[ $code = 400 ] && jq -r .error '$TMP/bad.json' | grep -q '^allow_ip: '"

# A hand edit of the accounts file, put in place by a reload.
HASH='$y$j9T$.hPiBczy.7XMpFAwo3OWe0$qTpLhKuz.tZO8l.Ihre20b9LOoF6OSr6vCBHz.in7tD'   # "h0rse!42"
sed -i "s|^accounts = (|accounts = (\n  { name = \"hand\"; password_hash = \"$HASH\"; connectors = [ \"smpp-in\" ]; },|" \
  "$TMP/accounts.conf"
ctl reload > /dev/null
got=$(binds hand 'h0rse!42' 1)
check "an account written into the file by hand binds after a reload ($got)" [ "$got" = 0x00 ]

# Deleted: unknown at once, gone from the file.
ctl account delete live > /dev/null
got=$(binds live pw123 1)
check "a deleted account is unknown: ESME_RINVSYSID ($got)" [ "$got" = 0x0f ]
check "... and gone from the file" bash -c "! grep -q 'name = \"live\"' '$TMP/accounts.conf'"
finish
