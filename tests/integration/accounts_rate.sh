#!/usr/bin/env bash
# accounts_rate.sh BUILD - an account's max_rate holds over all its
# sessions together, and its senders are enforced: "capped" (max_rate
# 1,000) pushed by emgload with no rate of its own over 4 connections for
# 20 s gets 1,000 msgs/s within 3 %, and a client with one request at a
# time gets it too; a session sending into the spent budget is not read
# until it refills, so its flood costs a few refusals a tick, each still
# ESME_RTHROTTLED, not millions; "free" on the same connector sends 1,500
# msgs/s meanwhile without a refusal; over HTTP the same budget answers
# 429 with Retry-After; a source outside an account's senders is refused.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
web=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 36; persist = false; };
accounts = (
  { name = "capped"; password = "pw"; max_rate = 1000.0; },
  { name = "free"; password = "pw"; senders = [ "4918" ]; },
  { name = "slow"; password = "pw"; max_rate = 10.0; },
  { name = "burst"; password = "pw"; max_rate = 10.0; }
);
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp"; instances = 6;
    window = 100; },
  { name = "web"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$web"; instances = 1; },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s"; instances = 2;
    window = 100; system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
load() {  # load ACCOUNT JSON [emgload options]
  local account=$1 json=$2
  shift 2
  "$BIN/emgload" --protocol smpp --connect "127.0.0.1:$smpp" --user "$account" --password pw \
    --json --quiet --give-up 20 "$@" > "$json" || true
}

load capped "$TMP/capped.json" --connections 4 --window 50 --duration 20 &
capped=$!
load free "$TMP/free.json" --from 4918000:13 --rate 1500 --duration 20 &
free=$!
STARTED_PIDS+=("$capped" "$free")
wait "$capped" "$free" || true
# The budget is a bucket of one second: a second's worth at once, then
# 1,000 a second, a moment's stall caught up. So over emgload's time, from
# its start to the last answer (the submits held in the socket when it
# stopped sending are taken at the budget's pace), what is over that
# second's worth.
rate_of() {  # rate_of JSON: msgs/s past the first second's worth
  jq '(.acked - 1000) / .elapsed_s * 10 | round / 10' "$1"
}
rate=$(rate_of "$TMP/capped.json")
check "capped: $(jget "$TMP/capped.json" .acked) acked in $(jget "$TMP/capped.json" .elapsed_s) s: $rate msgs/s past the first second's worth, within 3 % of 1,000" \
  awk -v r="${rate:-0}" 'BEGIN { exit !(r >= 970 && r <= 1030) }'
# Held, each of the 4 sessions is refused about once a tick (10 ms) of
# emgd's loop: some 8,000 in 20 s. Unheld, the same flood drew 17 to 30
# million refusals.
refused=$(jget "$TMP/capped.json" .refused)
check "... the excess refused as throttled, held sessions sending few ($refused refusals; at most 40,000)" \
  bash -c "[ '$refused' -gt 100 ] && [ '$refused' -le 40000 ]"
free_rate=$(jq '.acked / 20' "$TMP/free.json")
check "free, on the same connector meanwhile: $free_rate msgs/s of 1,500, none refused ($(jget "$TMP/free.json" .refused))" \
  bash -c "[ '$(jget "$TMP/free.json" .refused)' = 0 ] && awk -v r='$free_rate' 'BEGIN { exit !(r >= 1425) }'"

# One request at a time: refused, then held until the budget takes one,
# its next request is taken. The bucket is full again after the second of
# rest: it needs as long as "capped" did.
sleep 1.1
load capped "$TMP/single.json" --connections 1 --window 1 --duration 10
rate=$(rate_of "$TMP/single.json")
check "capped, one request at a time: $(jget "$TMP/single.json" .acked) acked in $(jget "$TMP/single.json" .elapsed_s) s: $rate msgs/s past the first second's worth, within 3 % of 1,000 ($(jget "$TMP/single.json" .refused) refused)" \
  awk -v r="${rate:-0}" 'BEGIN { exit !(r >= 970 && r <= 1030) }'

# A client of its own (not emgd's codec) sends 40 submits at once into a
# budget of 10 a second (11 at once): each is answered, taken or refused
# with ESME_RTHROTTLED (0x58), the session held between refusals.
answers=$(python3 "$(dirname "$0")/smpp_client.py" burst "127.0.0.1:$smpp" burst pw 40)
taken=$(sed -n 's/.*0x00000000:\([0-9]*\).*/\1/p' <<< "$answers")
check "burst: 40 submits at once into 10 a second answered taken or ESME_RTHROTTLED ($answers)" \
  bash -c "[[ '$answers' =~ ^0x00000000:[0-9]+\ 0x00000058:[0-9]+$ ]] && [ '${taken:-0}' -ge 11 ]"

# Over HTTP the budget answers 429 with Retry-After: 20 clients, 10 requests
# each on one kept-alive connection, as "slow" (max_rate 10: 11 at once,
# then 10 a second).
wait_port "$web"
python3 - "$web" > "$TMP/http.txt" <<'PY'
import base64, http.client, sys, threading, time
port, answers, lock = int(sys.argv[1]), [], threading.Lock()
start = time.monotonic()
auth = "Basic " + base64.b64encode(b"slow:pw").decode()
def client():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(10):
        c.request("POST", "/api/v1/messages", body='{"from":"4912345","to":"4915550001","text":"hi"}',
                  headers={"Authorization": auth, "Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        with lock:
            answers.append((r.status, r.getheader("Retry-After")))
threads = [threading.Thread(target=client) for _ in range(20)]
for t in threads: t.start()
for t in threads: t.join()
print(sum(1 for s, _ in answers if s == 429), sum(1 for s, _ in answers if s == 202),
      sum(1 for s, r in answers if s == 429 and r == "1"), int(time.monotonic() - start) + 1)
PY
read -r throttled taken retry secs < "$TMP/http.txt"
# At most the second's worth and 10 a second for as long as it took
# (whole seconds, rounded up): a slow machine takes longer, not more.
most=$(( 11 + 10 * ${secs:-1} ))
check "slow over HTTP: $throttled of 200 answered 429 ($taken taken in at most $secs s: 11 to $most)" \
  bash -c "[ '${taken:-0}' -ge 11 ] && [ '${taken:-0}' -le $most ] && [ \$(( ${throttled:-0} + ${taken:-0} )) = 200 ]"
check "... each 429 with Retry-After: 1 ($retry)" [ "${retry:-x}" = "${throttled:-y}" ]

load free "$TMP/wrong.json" --from 4930000:13 --count 20
check "free from 4930..., outside its senders: all 20 refused ($(jget "$TMP/wrong.json" .acked) acked)" \
  [ "$(jget "$TMP/wrong.json" '.acked, .refused' | tr '\n' ' ')" = "0 20 " ]
stop_emgd g 20
stop_sink s
finish
