#!/usr/bin/env bash
# make_certs.sh DIR - the certificates the TLS tests and benchmarks use, made
# with the openssl tool into DIR (EC P-256 keys, valid 30 days):
#   ca.pem/.key, other-ca.pem/.key   two CAs
#   server.pem, server.key           CN=localhost, names localhost and 127.0.0.1, by ca
#   renewed.pem                      the same with O=renewed (a certificate renewal)
#   expired.pem                      the same, valid only in January 2020
#   client.pem, client.key           CN=acme,O=emg tests, by ca
#   rogue.pem                        the same subject and key, by other-ca
#   client-ou.pem                    CN=acme,O=emg tests,OU=x (client.key), by ca:
#                                    a subject that starts with client.pem's
#   elsewhere.pem                    CN=elsewhere.example, names only that
#                                    (server.key), by ca: valid for another host
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
mkdir -p "$1"
cd "$1"
ossl() { openssl "$@" 2>/dev/null; }
newkey() { ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() {   # ca NAME SUBJECT
  newkey "$1.key"
  ossl req -x509 -new -key "$1.key" -out "$1.pem" -days 30 -subj "$2"
}
sign() {   # sign NAME KEY SUBJECT CA [SAN]
  ossl req -new -key "$2" -out "$1.csr" -subj "$3"
  if [ -n "${5:-}" ]; then printf 'subjectAltName=%s\n' "$5" > "$1.ext"; else : > "$1.ext"; fi
  ossl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4.key" -CAcreateserial -out "$1.pem" -days 30 \
    -extfile "$1.ext"
}
ca ca "/CN=emg test CA"
ca other-ca "/CN=another CA"
newkey server.key
newkey client.key
sign server server.key "/CN=localhost" ca "DNS:localhost,IP:127.0.0.1"
sign renewed server.key "/O=renewed/CN=localhost" ca "DNS:localhost,IP:127.0.0.1"
sign client client.key "/O=emg tests/CN=acme" ca
sign rogue client.key "/O=emg tests/CN=acme" other-ca
sign client-ou client.key "/OU=x/O=emg tests/CN=acme" ca
sign elsewhere server.key "/CN=elsewhere.example" ca "DNS:elsewhere.example"
# An expired one: openssl ca takes dates in the past.
: > index.txt
echo 1000 > serial
cat > ca.cnf <<CNF
[ ca ]
default_ca = test
[ test ]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[ any ]
commonName = supplied
CNF
ossl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in server.csr -out expired.pem -notext \
  -startdate 20200101000000Z -enddate 20200201000000Z -extfile server.ext
