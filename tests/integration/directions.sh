#!/usr/bin/env bash
# directions.sh BUILD [IN:OUT ...] - the reference test in the other
# directions: SMPP in -> UCP out, SMPP in -> SMPP out, UCP in -> UCP out,
# UCP in -> SMPP out (or the IN:OUT pairs given, with undelivered receipts
# too), each with receipts back to emgload, every message recorded once by
# the sink; long texts split, codings kept.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

N=3000

# write_conf FILE IN OUT LISTEN_PORT SMSC_PORT
write_conf() {
  cat > "$1" <<CONF
general: { node_id = 9; persist = false; };
connectors = (
  { name = "in"; protocol = "$2"; mode = "server"; listen = "127.0.0.1:$4"; instances = 4;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "out"; protocol = "$3"; mode = "client"; connect = "127.0.0.1:$5"; instances = 4;
    system_id = "emg"; password = "secret"; window = 50; reconnect_min = 100; }
);
routes = ( { to = "out"; } );
CONF
}

# run_pass NAME IN OUT LISTEN_PORT [SINK_OPTIONS...] -- EMGLOAD_OPTIONS...:
# emgsink over OUT, a fresh emgd (IN server on LISTEN_PORT, OUT client) and
# emgload over IN to the end (its JSON: $TMP/NAME.json); both stopped after.
run_pass() {
  local name=$1 in=$2 out=$3 listen=$4 sink_options=()
  shift 4
  while [ "$1" != -- ]; do
    sink_options+=("$1")
    shift
  done
  shift
  start_sink "$name" "$out" "${sink_options[@]}" --user emg --password secret
  local port_var="SINK_PORT_$name"
  write_conf "$TMP/$name.conf" "$in" "$out" "$listen" "${!port_var}"
  start_emgd "$name" "$TMP/$name.conf"
  wait_port "$listen"
  "$BIN/emgload" --protocol "$in" --connect "127.0.0.1:$listen" --user load --password secret \
    "$@" --json --quiet --give-up 30 > "$TMP/$name.json" || true
  stop_emgd "$name" 20
  stop_sink "$name"
}

# run_coding IN OUT LISTEN_PORT ENCODING LENGTH: 100 messages in that
# encoding through a fresh emgd and sink (record: $TMP/IN_OUT_ENCODING.record).
run_coding() {
  local in=$1 out=$2 listen=$3 enc=$4 len=$5 name="$1_$2_$4"
  run_pass "$name" "$in" "$out" "$listen" -- --count 100 --encoding "$enc" --length "$len"
  check "$in in, $out out: 100 $enc messages acked" [ "$(jget "$TMP/$name.json" .acked)" = 100 ]
}

# run IN OUT: emgload over IN -> emgd (IN server, OUT client) -> emgsink over OUT.
run() {
  local in=$1 out=$2 name="$1_$2" listen
  listen=$(free_port)
  run_pass "$name" "$in" "$out" "$listen" --dlr-delay 0-500 -- --connections 4 --window 20 --count $N --dlr --wait-dlr 15
  check "$in in, $out out: all $N acked" [ "$(jget "$TMP/$name.json" .acked)" = $N ]
  check "$in in, $out out: all $N receipts back" [ "$(jget "$TMP/$name.json" .receipts_delivered)" = $N ]
  check "$in in, $out out: the sink recorded each message once" record_has_each_seq_once "$TMP/$name.record" $N
  check "$in in, $out out: texts intact" [ "$(awk -F'\t' 'length($3) != 145' "$TMP/$name.record" | wc -l)" = 0 ]
  # UCS2 text, and binary data with a UDH (16-bit application ports), cross too.
  run_coding "$in" "$out" "$listen" ucs2 60
  check "$in in, $out out: UCS2 text intact at the sink" \
    [ "$(grep -c 'Привет, мир! Грузовик прибудет завтра' "$TMP/${in}_${out}_ucs2.record")" = 100 ]
  run_coding "$in" "$out" "$listen" binary 100
  # "emgload #" in hex, 100 octets each, and the port UDH kept.
  check "$in in, $out out: binary data and its UDH intact at the sink" \
    [ "$(awk -F'\t' '$3 ~ /^656D676C6F61642023/ && length($3) == 200 && $5 == "0605040B8423F0"' "$TMP/${in}_${out}_binary.record" | wc -l)" = 100 ]
}

# run_long IN OUT: 320-character texts (the most one UCP op 51 carries) (SMPP in: message_payload) are split
# into three concatenated parts for the SMSC; the origin gets one receipt each.
run_long() {
  local in=$1 out=$2 name="long_$1_$2" n=200
  run_pass "$name" "$in" "$out" "$(free_port)" --dlr-delay 0-200 -- --count $n --length 320 --dlr --wait-dlr 10
  check "$in in, $out out, 320 characters: all $n acked, one receipt each" \
    [ "$(jget "$TMP/$name.json" '.acked, .receipts_delivered' | tr '\n' ' ')" = "$n $n " ]
  check "$in in, $out out, 320 characters: three parts each at the SMSC (153 + 153 + 14)" \
    [ "$(awk -F'\t' '{ print length($3) }' "$TMP/$name.record" | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')" = "14:$n 153:$((2 * n)) " ]
  check "$in in, $out out, 320 characters: each message's first part once" record_has_each_seq_once "$TMP/$name.record" $n
}

# too_long: the longest concatenation is 255 parts (its count is one
# octet). 255 x 153 characters are split and sent; one character more is
# refused with the protocol's error: SMPP ESME_RINVMSGLEN, HTTP 400 naming
# the limit. (A UCP op 51 carries 320 characters at most.)
too_long() {
  local name=too_long listen web
  start_sink "$name" smpp --user emg --password secret
  listen=$(free_port)
  web=$(free_port)
  write_conf "$TMP/$name.conf" smpp smpp "$listen" "$SINK_PORT_too_long"
  sed -i "s|^connectors = (|connectors = (\n  { name = \"web\"; protocol = \"http\"; mode = \"server\"; listen = \"127.0.0.1:$web\"; users = ( { name = \"load\"; password = \"secret\"; } ); },|" \
    "$TMP/$name.conf"
  start_emgd "$name" "$TMP/$name.conf"
  wait_port "$listen"
  wait_port "$web"
  local at_most over http
  at_most=$(python3 "$(dirname "$0")/smpp_client.py" submit "127.0.0.1:$listen" load secret 39015)
  over=$(python3 "$(dirname "$0")/smpp_client.py" submit "127.0.0.1:$listen" load secret 39016)
  http=$(python3 -c 'import json; print(json.dumps({"from": "4917000000001", "to": "4917100000001", "text": "A" * 39016}))' |
    curl -s -o "$TMP/$name.http" -w '%{http_code}' -u load:secret -H 'Content-Type: application/json' \
      --data-binary @- "http://127.0.0.1:$web/api/v1/messages")
  for _ in $(seq 1200); do [ "$(wc -l < "$TMP/$name.record")" -ge 255 ] && break; sleep 0.05; done
  stop_emgd "$name" 20
  stop_sink "$name"
  check "SMPP, 255 parts' worth (39,015 characters): accepted ($at_most), 255 parts at the SMSC" \
    [ "$at_most/$(wc -l < "$TMP/$name.record")" = "0x00000000/255" ]
  check "SMPP, one character more: ESME_RINVMSGLEN ($over), nothing more at the SMSC" \
    [ "$over/$(wc -l < "$TMP/$name.record")" = "0x00000001/255" ]
  check "HTTP, one character more: 400 naming the limit ($http)" \
    bash -c "[ '$http' = 400 ] && grep -q 'at most 255 SMS' '$TMP/$name.http'"
}

# run_undeliv IN OUT: a fifth of the SMSC's receipts say undelivered; each
# reaches the origin as such, in its own protocol's terms.
run_undeliv() {
  local in=$1 out=$2 name="undeliv_$1_$2" n=1000
  run_pass "$name" "$in" "$out" "$(free_port)" --dlr-delay 0-200 --undeliv-rate 0.2 -- \
    --count $n --window 20 --dlr --wait-dlr 10
  local delivered undeliv
  delivered=$(jget "$TMP/$name.json" .receipts_delivered)
  undeliv=$(jget "$TMP/$name.json" .receipts_undeliverable)
  check "$in in, $out out: every receipt back, delivered $delivered + undeliverable $undeliv = $n" \
    [ "$((delivered + undeliv))" = $n ]
  check "$in in, $out out: undeliverable receipts stay undeliverable ($undeliv, about 200)" \
    [ "$undeliv" -ge 120 -a "$undeliv" -le 280 ]
}

# Directions as IN:OUT arguments (CIMD2's test names its own), else the UCP
# and SMPP ones.
pairs=("${@:2}")
if [ ${#pairs[@]} = 0 ]; then
  too_long
  pairs=(smpp:ucp smpp:smpp ucp:ucp ucp:smpp)
fi
for pair in "${pairs[@]}"; do
  run "${pair%%:*}" "${pair##*:}"
done
for pair in "${pairs[@]}"; do
  run_long "${pair%%:*}" "${pair##*:}"
done
if [ $# -gt 1 ]; then
  for pair in "${pairs[@]}"; do
    run_undeliv "${pair%%:*}" "${pair##*:}"
  done
fi
finish
