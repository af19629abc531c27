#!/usr/bin/env bash
# interop_node_smsc.sh BUILD - emgd's SMPP client against an SMSC written on
# node-smpp (npm "smpp" 0.5.1), an implementation independent of ours:
# emgload (UCP) -> emgd -> node-smpp SMSC, receipts back to emgload, and the
# SMSC's MO messages routed to emgload's account as UCP op 52.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

# node-smpp is installed once into the build tree from the npm registry.
npm_dir="$BIN/npm-interop"
if [ ! -d "$npm_dir/node_modules/smpp" ]; then
  mkdir -p "$npm_dir"
  (cd "$npm_dir" && npm install --silent --no-audit --no-fund smpp@0.5.1 >/dev/null)
fi

NODE_PATH="$npm_dir/node_modules" node "$here/../interop/node_smpp_smsc.js" \
  "$TMP/node.port" "$TMP/node.summary.json" 200 50 2>"$TMP/node.stderr" &
node_pid=$!
STARTED_PIDS+=("$node_pid")
wait_file "$TMP/node.port"
smsc=$(cat "$TMP/node.port")
ucp=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 3; persist = false; dlr_table_size = 10000; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "node"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$smsc"; instances = 2;
    system_id = "emg"; password = "secret"; window = 10; reconnect_min = 100; }
);
routes = ( { to = "node"; }, { from = "node"; to = "ucp-in"; user = "load"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$ucp"
N=500
"$BIN/emgload" --protocol ucp --connect "127.0.0.1:$ucp" --user load --password secret \
  --connections 2 --window 10 --count $N --dlr --wait-dlr 15 --json --quiet --give-up 20 \
  > "$TMP/load.json" || true
stop_emgd g 20
kill -TERM "$node_pid"
wait_file "$TMP/node.summary.json"
check "node-smpp SMSC: all $N acked end to end" [ "$(jget "$TMP/load.json" .acked)" = $N ]
check "node-smpp SMSC: all $N receipts back at emgload" [ "$(jget "$TMP/load.json" .receipts_delivered)" = $N ]
check "node-smpp SMSC: it saw 2 binds and $N submits" \
  [ "$(jget "$TMP/node.summary.json" '.binds, .submits' | tr '\n' ' ')" = "2 $N " ]
check "node-smpp SMSC: emgd acked all $N of its receipts" [ "$(jget "$TMP/node.summary.json" .receipts_acked)" = $N ]
check "node-smpp SMSC: texts arrived intact" \
  [ "$(jq -r '.texts[]' "$TMP/node.summary.json" | grep -c '^emgload #[0-9]\{10\} The quick brown fox')" = $N ]
check "node-smpp SMSC: its 50 MO messages were acked by emgd" [ "$(jget "$TMP/node.summary.json" .mo_acked)" = 50 ]
check "node-smpp SMSC: the 50 MO messages reached emgload over UCP (op 52)" [ "$(jget "$TMP/load.json" .mo)" = 50 ]
check "node-smpp SMSC: emgd unbound on SIGTERM" [ "$(jget "$TMP/node.summary.json" .unbinds)" = 2 ]
finish
