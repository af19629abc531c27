#!/usr/bin/env bash
# status_page_tls.sh BUILD - the console when the admin API serves HTTPS:
# headless Chromium (tests/integration/console_https.py) trusts emgd's
# certificate by its key, logs in, gets a Secure cookie, pauses and resumes
# a connector from the page; and the API refuses plain HTTP on that port.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

bash "$(dirname "$0")/make_certs.sh" "$TMP/pki"
spki=$(openssl x509 -in "$TMP/pki/server.pem" -pubkey -noout | openssl pkey -pubin -outform der |
       openssl dgst -sha256 -binary | base64)
start_sink s smpp --user emg --password secret
ucp=$(free_port); admin=$(free_port)
TOKEN=https-page-token-0123456789
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 12; persist = false; };
admin: { listen = "127.0.0.1:$admin"; token = "$TOKEN";
         tls = { cert = "pki/server.pem"; key = "pki/server.key"; }; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp";
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$admin"
check "the admin API answers HTTPS with its certificate (curl --cacert)" \
  bash -c "curl -s --cacert '$TMP/pki/ca.pem' https://localhost:$admin/ | grep -q '<title>emgd status</title>'"
check "... and not plain HTTP" bash -c "! curl -s -m 5 http://127.0.0.1:$admin/ | grep -q '<title>'"

mkdir -p "$BIN/artifacts"
rc=0
/usr/bin/python3 "$(dirname "$0")/console_https.py" "https://localhost:$admin" "$TOKEN" "$BIN/artifacts" \
  "$TMP/pki/ca.pem" "$spki" > "$TMP/console.out" 2>&1 || rc=$?
cat "$TMP/console.out"
check "the console over HTTPS: every step (console_https.py exit $rc)" [ $rc = 0 ]
check "its screenshot kept" [ -s "$BIN/artifacts/console-https.png" ]
stop_emgd g
stop_sink s
finish
