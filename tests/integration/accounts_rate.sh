#!/usr/bin/env bash
# accounts_rate.sh BUILD - an account's max_rate holds over all its
# sessions together, and its senders are enforced: "capped" (max_rate
# 1,000) pushed by emgload with no rate of its own over 4 connections for
# 20 s gets 1,000 msgs/s within 3 % (the rest answered ESME_RTHROTTLED),
# while "free" on the same connector sends 1,500 msgs/s meanwhile without
# a refusal; a source outside an account's senders is refused.
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp
smpp=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 36; persist = false; };
accounts = (
  { name = "capped"; password = "pw"; max_rate = 1000.0; },
  { name = "free"; password = "pw"; senders = [ "4918" ]; }
);
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp"; instances = 6;
    window = 100; },
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
# Over the 20 s of sending (emgload's elapsed time adds the answers to the
# submits still out when it stopped).
rate=$(jq '.acked / 20' "$TMP/capped.json")
check "capped: $(jget "$TMP/capped.json" .acked) acked in 20 s: $rate msgs/s, within 3 % of 1,000" \
  awk -v r="$rate" 'BEGIN { exit !(r >= 970 && r <= 1030) }'
check "... the rest refused as throttled ($(jget "$TMP/capped.json" .refused))" \
  [ "$(jget "$TMP/capped.json" .refused)" -gt 1000 ]
free_rate=$(jq '.acked / 20' "$TMP/free.json")
check "free, on the same connector meanwhile: $free_rate msgs/s of 1,500, none refused ($(jget "$TMP/free.json" .refused))" \
  bash -c "[ '$(jget "$TMP/free.json" .refused)' = 0 ] && awk -v r='$free_rate' 'BEGIN { exit !(r >= 1425) }'"

load free "$TMP/wrong.json" --from 4930000:13 --count 20
check "free from 4930..., outside its senders: all 20 refused ($(jget "$TMP/wrong.json" .acked) acked)" \
  [ "$(jget "$TMP/wrong.json" '.acked, .refused' | tr '\n' ' ')" = "0 20 " ]
stop_emgd g 20
stop_sink s
finish
