#!/usr/bin/env bash
# reload.sh BUILD - a reload answers item by item (POST /api/reload, emgctl
# reload, SIGHUP): a clean one is 200 with what it put in place; accounts
# beyond general.max_accounts are refused each by name (422, the routes and
# the other accounts in place), also logged on SIGHUP; a certificate file that
# cannot be read refuses the reload whole (409); a changed TLS group of an HTTP
# client connector needs a restart and is refused (409). emgctl prints the
# items and exits non-zero whenever anything was refused.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

PKI=$TMP/pki
mkdir -p "$TMP/spool"
bash "$(dirname "$0")/make_certs.sh" "$PKI"
cp "$PKI/server.pem" "$PKI/live.pem"
SMPP_IN=$(free_port)
ADMIN_PORT=$(free_port)
ADMIN_TOKEN=reload-test-token-0123
PROVIDER=$(free_port)   # nothing listens: the client connector is never used here

# write_conf CA ACCOUNTS: emgd.conf with the HTTP client's tls.ca CA and the
# accounts ACCOUNTS (a list of names).
write_conf() {
  local ca=$1 accounts="" name
  shift
  for name in "$@"; do
    accounts+="  { name = \"$name\"; password = \"secret\"; connectors = [ \"in\" ]; },"$'\n'
  done
  cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 7; max_accounts = 2; spool_dir = "$TMP/spool"; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "$ADMIN_TOKEN"; };
connectors = (
  { name = "in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$SMPP_IN"; instances = 1;
    tls = { cert = "pki/live.pem"; key = "pki/server.key"; }; },
  { name = "provider"; protocol = "http"; mode = "client"; url = "https://localhost:$PROVIDER/send";
    method = "post_json"; body = "{\"to\":\"%p\",\"text\":\"%b\"}"; tls = { ca = "$ca"; }; }
);
accounts = (
${accounts%,$'\n'}
);
routes = ( { to = "provider"; } );
CONF
}

# reload NAME: POST /api/reload, its answer in $TMP/NAME.json, its status
# printed; emgctl reload's output in $TMP/NAME.ctl, its exit status in
# $TMP/NAME.rc.
reload() {
  admin_call /api/reload -X POST -o "$TMP/$1.json" -w '%{http_code}'
  admin_ctl reload > "$TMP/$1.ctl" 2>&1
  echo $? > "$TMP/$1.rc"
}
# refusal NAME ITEM: the error of the refused ITEM in NAME's answer.
refusal() { jq -r --arg i "$2" '.refused[] | select(.item == $i) | .error' "$TMP/$1.json"; }
applied() { jq -e --arg i "$2" '.applied | index($i) != null' "$TMP/$1.json" > /dev/null; }

write_conf pki/ca.pem alice bob
start_emgd d "$TMP/emgd.conf"
wait_port "$ADMIN_PORT"

# ---- a clean reload: 200, everything applied ----
status=$(reload clean)
check "clean reload: 200, reloaded true, nothing refused ($status $(jq -c '[.reloaded, .refused]' "$TMP/clean.json"))" \
  [ "$status $(jq -c '[.reloaded, .refused]' "$TMP/clean.json")" = '200 [true,[]]' ]
check "clean reload: routes, accounts and the server's certificate applied ($(jq -c .applied "$TMP/clean.json"))" \
  bash -c "[ \"\$(jq -c '[.applied[] | select(. == \"routes: 1\" or startswith(\"accounts: 2 \") or . == \"tls of connector in\")] | length' '$TMP/clean.json')\" = 3 ]"
check "clean reload: the HTTP client connector's TLS is not an item (it builds its own at start)" \
  bash -c "! jq -r '.applied[]' '$TMP/clean.json' | grep -q provider"
check "clean reload: emgctl reload prints reloaded and exits 0" \
  bash -c "[ \"\$(cat '$TMP/clean.rc')\" = 0 ] && head -n 1 '$TMP/clean.ctl' | grep -qx reloaded && grep -q '^  applied: routes: 1$' '$TMP/clean.ctl'"

# ---- accounts that cannot be put in place: refused each, the rest in place ----
write_conf pki/ca.pem alice bob carol dave
status=$(reload accounts)
check "accounts beyond max_accounts: 422, reloaded false ($status $(jq .reloaded "$TMP/accounts.json"))" \
  [ "$status $(jq .reloaded "$TMP/accounts.json")" = "422 false" ]
check "... account carol refused with the reason ($(refusal accounts "account carol"))" \
  [ "$(refusal accounts "account carol")" = "general.max_accounts (2) accounts exist already" ]
check "... and account dave too, each its own item" \
  [ "$(refusal accounts "account dave")" = "general.max_accounts (2) accounts exist already" ]
check "... the routes and the 2 accounts that fit are applied ($(jq -c .applied "$TMP/accounts.json"))" \
  bash -c "jq -e '(.applied | index(\"routes: 1\")) != null and any(.applied[]; startswith(\"accounts: 2 \"))' '$TMP/accounts.json' > /dev/null"
check "... emgctl reload exits non-zero and prints each refused item" \
  bash -c "[ \"\$(cat '$TMP/accounts.rc')\" != 0 ] &&
           grep -q '^  refused: account carol: general.max_accounts (2) accounts exist already$' '$TMP/accounts.ctl' &&
           grep -q '^  refused: account dave: ' '$TMP/accounts.ctl' && grep -q '^reloaded in part' '$TMP/accounts.ctl'"
check "... the refusals are logged item by item" logged "$TMP/d.log" "reload: refused account dave: general.max_accounts"
# SIGHUP: the same reload, each refused item logged.
before=$(grep -c 'reload: refused account carol' "$TMP/d.log")
kill -HUP "$EMGD_PID_d"
sighup_logged() { [ "$(grep -c 'reload: refused account carol' "$TMP/d.log")" -gt "$before" ]; }
check "SIGHUP: account carol's refusal logged again" wait_until 100 sighup_logged
check "SIGHUP: the reload is logged as one in part" logged "$TMP/d.log" "reloaded .* in part: .*2 items refused"

# ---- a certificate file that cannot be read: refused whole ----
write_conf pki/ca.pem alice bob
echo "not a certificate" > "$PKI/live.pem"
status=$(reload cert)
check "an unreadable certificate: 409, reloaded false, nothing applied ($status $(jq -c '[.reloaded, .applied]' "$TMP/cert.json"))" \
  [ "$status $(jq -c '[.reloaded, .applied]' "$TMP/cert.json")" = '409 [false,[]]' ]
check "... the refused item names the connector's tls and the file ($(refusal cert configuration))" \
  bash -c "refused=\$(jq -r '.refused[] | select(.item == \"configuration\") | .error' '$TMP/cert.json');
           [[ \$refused == *'connectors.[0].tls'* && \$refused == *live.pem* ]]"
check "... emgctl reload exits non-zero and prints the item" \
  bash -c "[ \"\$(cat '$TMP/cert.rc')\" != 0 ] && grep -q '^  refused: configuration: .*connectors.\[0\].tls' '$TMP/cert.ctl'"
cp "$PKI/renewed.pem" "$PKI/live.pem"
status=$(reload renewed)
check "the certificate readable again (renewed): 200, its tls applied ($status)" \
  bash -c "[ '$status' = 200 ] && jq -e '.reloaded and (.applied | index(\"tls of connector in\")) != null' '$TMP/renewed.json' > /dev/null"

# ---- an HTTP client connector's TLS changed: needs a restart ----
write_conf pki/other-ca.pem alice bob
status=$(reload client_tls)
check "an HTTP client connector's tls.ca changed: 409, refused ($status $(jq -c .refused "$TMP/client_tls.json"))" \
  bash -c "[ '$status' = 409 ] && jq -e '.reloaded == false and .applied == []' '$TMP/client_tls.json' > /dev/null"
check "... the item is its tls group, the reason says restart" \
  bash -c "[[ \"\$(jq -r '.refused[] | select(.item == \"connectors.[1].tls\") | .error' '$TMP/client_tls.json')\" == *'http client connector takes its TLS files at start: restart'* ]]"
check "... emgctl reload exits non-zero" [ "$(cat "$TMP/client_tls.rc")" != 0 ]

# Back as it runs: a clean reload again.
write_conf pki/ca.pem alice bob
status=$(reload back)
check "back to the running configuration: 200 ($status)" \
  bash -c "[ '$status' = 200 ] && jq -e '.reloaded and .refused == []' '$TMP/back.json' > /dev/null && [ \"\$(cat '$TMP/back.rc')\" = 0 ]"
check "the reload counters: refused ones counted ($(admin_call /api/status | jq -c '[.totals.reloads, .totals.reloads_refused]'))" \
  bash -c "[ \"\$(curl -s -H 'Authorization: Bearer $ADMIN_TOKEN' http://127.0.0.1:$ADMIN_PORT/api/status | jq -c '[.totals.reloads, .totals.reloads_refused]')\" = '[6,7]' ]"
stop_emgd d
finish
