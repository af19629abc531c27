#!/usr/bin/env bash
# accounts_db.sh BUILD - accounts kept in PostgreSQL, shared by two nodes:
# an account added through node A binds on node B within seconds; its
# settings are stored hashed; credit is one figure over both nodes (parts
# taken on either count, pushed in batches; run out from both at once, it
# goes below zero by no more than nodes x credit_batch, and the table's
# figure is exactly what was left less what was acked); a SIGKILL of a node,
# even while the database is away, neither gives credit back nor takes it
# twice; disabled on A, B unbinds
# its session; the changes survive a restart of both; deleted on B, A
# refuses it; an account of emgd.conf cannot be shadowed by the table's.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pg_lib.sh"

pg_start
TOKEN=accounts-db-token-0123456789
BATCH=50
start_sink s smpp
smpp_a=$(free_port)
smpp_b=$(free_port)
admin_a=$(free_port)
admin_b=$(free_port)
write_node() {   # write_node NAME NODE_ID SMPP_PORT ADMIN_PORT
  mkdir -p "$TMP/$1.spool"
  cat > "$TMP/$1.conf" <<CONF
general: { node_id = $2; persist = true; spool_dir = "$TMP/$1.spool"; };
database: { conninfo = "$PG_URL"; credit_batch = $BATCH; };
admin: { listen = "127.0.0.1:$4"; token = "$TOKEN"; };
accounts = ( { name = "static"; password = "pw"; connectors = [ "smpp-in" ]; } );
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$3"; instances = 4; },
  { name = "out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "out"; } );
CONF
}
write_node a 41 "$smpp_a" "$admin_a"
write_node b 42 "$smpp_b" "$admin_b"
check "emgd --init-db creates the schema with the accounts table" "$BIN/emgd" -c "$TMP/a.conf" --init-db
start_emgd a "$TMP/a.conf"
start_emgd b "$TMP/b.conf"
for p in "$smpp_a" "$smpp_b" "$admin_a" "$admin_b"; do wait_port "$p"; done

ctl() { local admin=$1; shift; "$BIN/emgctl" --url "http://127.0.0.1:$admin" --token "$TOKEN" "$@"; }
client() { python3 "$(dirname "$0")/smpp_client.py" "$@"; }
binds() { client statuses "127.0.0.1:$1" "${@:2}"; }
account() { curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$1/api/accounts/$2"; }
db_credit() { pg_psql -c "SELECT credit FROM accounts WHERE name = '$1'"; }
# until_eq SECONDS EXPECTED COMMAND...: until the command prints EXPECTED (bounded).
# The changes take about 2 s (each node lists them every second); the bounds
# below are hang guards a busy machine's database cannot reach, not a speed.
until_eq() {
  local tries=$(($1 * 10)) want=$2 got
  shift 2
  for _ in $(seq "$tries"); do got=$("$@"); [ "$got" = "$want" ] && { echo "$got"; return 0; }; sleep 0.1; done
  echo "$got"
  return 1
}
restart_a() {   # node A started again (after a SIGKILL), serving
  start_emgd a "$TMP/a.conf"
  wait_port "$admin_a"
  wait_port "$smpp_a"
}
load() {   # load NAME PORT COUNT [options]: one-part messages as "shared"
  local name=$1 port=$2 count=$3
  shift 3
  "$BIN/emgload" --protocol smpp --connect "127.0.0.1:$port" --user shared --password pw123 --connections 2 \
    --count "$count" --length 100 --rate 1000 --json --quiet --give-up 20 "$@" > "$TMP/$name.json" || true
}

# Added on A: B binds it within seconds, no restart.
ctl "$admin_a" account add shared --password pw123 --connector smpp-in --credit 1000 > "$TMP/add.txt"
check "emgctl account add on node A ($(cat "$TMP/add.txt"))" grep -q '^account shared: enabled' "$TMP/add.txt"
check "/api/accounts on A says the account lives in the database" \
  [ "$(account "$admin_a" shared | jq -r .defined_in)" = database ]
start=$(date +%s%N)
seen=$(until_eq 20 0x00 binds "$smpp_b" shared pw123 1) && ok=0 || ok=1
took=$(( ($(date +%s%N) - start) / 1000000 ))
check "node B binds the account added on A, no restart (after ${took} ms)" [ "$ok" = 0 ]
check "the table holds it hashed: no cleartext password, no credit in the settings" \
  [ "$(pg_psql -c "SELECT settings->>'password_hash' LIKE '\$y\$%' AND settings::text NOT LIKE '%pw123%'
                   AND NOT settings ? 'credit' FROM accounts WHERE name = 'shared'")" = t ]

# One credit over both nodes.
load a1 "$smpp_a" 300
load b1 "$smpp_b" 300
check "300 acked on A and 300 on B ($(jget "$TMP/a1.json" .acked) $(jget "$TMP/b1.json" .acked))" \
  [ "$(jget "$TMP/a1.json" .acked) $(jget "$TMP/b1.json" .acked)" = "300 300" ]
got=$(until_eq 20 400 db_credit shared) && ok=0 || ok=1
check "the table says 400 left, both nodes' parts pushed ($got)" [ "$ok" = 0 ]
got=$(until_eq 20 400 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$admin_b/api/accounts/shared | jq .credit_left") && ok=0 || ok=1
check "node B sees 400 left too ($got)" [ "$ok" = 0 ]

# A SIGKILL right after the acks: nothing given back, nothing taken twice.
load a2 "$smpp_a" 100
kill_emgd a
restart_a
got=$(until_eq 20 300 db_credit shared) && ok=0 || ok=1
check "after node A's SIGKILL and restart: 300 left, the 100 acked taken once ($got; acked $(jget "$TMP/a2.json" .acked))" \
  [ "$ok" = 0 ]

# The database away: A takes parts it cannot push (no more than one batch),
# is killed, and pushes them from its journal once restarted.
pg_server_stop
load a4 "$smpp_a" 40
kill_emgd a
pg_server_start
restart_a
got=$(until_eq 30 260 db_credit shared) && ok=0 || ok=1
check "parts acked while the database was away, then SIGKILL: pushed from the journal, 260 left ($got; acked $(jget "$TMP/a4.json" .acked))" \
  [ "$ok" = 0 ]
check "... the journal said how many were not pushed" grep -q "credit of 1 account as the journal left it" "$TMP/a.log"

# Run out from both nodes at once: 260 left, 400 asked of each.
load a3 "$smpp_a" 400 --rate 150 &
pa=$!
load b3 "$smpp_b" 400 --rate 150 &
pb=$!
wait "$pa" "$pb"
acked=$(( $(jget "$TMP/a3.json" .acked) + $(jget "$TMP/b3.json" .acked) ))
until_eq 20 "$((260 - acked))" db_credit shared > /dev/null
left=$(db_credit shared)
check "run out from both nodes: $acked acked, $left left in the table: exactly 260 less the acked" \
  [ "$left" = $((260 - acked)) ]
check "... never below zero by more than nodes x credit_batch ($left >= -$((2 * BATCH)))" [ "$left" -ge $((-2 * BATCH)) ]
check "... and the credit was used, not throttled away ($acked >= 210)" [ "$acked" -ge 210 ]
refused=$(( $(jget "$TMP/a3.json" .refused) + $(jget "$TMP/b3.json" .refused) ))
check "... the rest refused ($refused of $((800 - acked)))" [ "$refused" = $((800 - acked)) ]

# Disabled on A: B unbinds its session and refuses binds.
client hold "127.0.0.1:$smpp_b" shared pw123 10 > "$TMP/hold.txt" &
holder=$!
for _ in $(seq 300); do grep -q bound "$TMP/hold.txt" && break; sleep 0.1; done
ctl "$admin_a" account disable shared > /dev/null
wait "$holder"
check "disabled on A: node B unbinds its session ($(tr '\n' ' ' < "$TMP/hold.txt"))" [ "$(tail -1 "$TMP/hold.txt")" = unbind ]
check "... saying why" grep -q "unbinding 'shared' (127.0.0.1:[0-9]*): account disabled" "$TMP/b.log"
got=$(binds "$smpp_b" shared pw123 1)
check "... and refuses its binds: ESME_RBINDFAIL ($got)" [ "$got" = 0x0d ]
ctl "$admin_b" account enable shared > /dev/null
ctl "$admin_b" account credit shared --credit 500 > /dev/null

# Both nodes restarted: the changes are in the table.
stop_emgd a
stop_emgd b
start_emgd a "$TMP/a.conf"
start_emgd b "$TMP/b.conf"
for p in "$smpp_a" "$smpp_b" "$admin_a"; do wait_port "$p"; done
got=$(account "$admin_a" shared | jq -c '[.enabled, .credit_left]')
check "after both restart: enabled again through B, credit 500 set through B ($got)" [ "$got" = "[true,500]" ]
got=$(binds "$smpp_a" shared pw123 1)
check "... and it binds on A ($got)" [ "$got" = 0x00 ]

# emgd.conf's account stays; the table cannot shadow it.
pg_psql -c "INSERT INTO accounts (name, settings) VALUES ('static', '{\"name\": \"static\", \"password_hash\": \"x\"}')"
for _ in $(seq 300); do grep -q "account static of the database not taken" "$TMP/a.log" && break; sleep 0.1; done
check "a row naming an account of emgd.conf is not taken, and the log says so" \
  grep -q "account static of the database not taken: emgd.conf defines one of that name" "$TMP/a.log"
got=$(binds "$smpp_a" static pw 1)
check "... emgd.conf's account still binds ($got)" [ "$got" = 0x00 ]

# Deleted on B: A refuses it within seconds.
ctl "$admin_b" account delete shared > /dev/null
got=$(until_eq 20 0x0f binds "$smpp_a" shared pw123 1) && ok=0 || ok=1
check "deleted on B: node A refuses it, no restart: ESME_RINVSYSID ($got)" [ "$ok" = 0 ]
check "... and the table has no row of it" [ "$(pg_psql -c "SELECT count(*) FROM accounts WHERE name = 'shared'")" = 0 ]
finish
