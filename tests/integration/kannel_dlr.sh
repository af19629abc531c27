#!/usr/bin/env bash
# kannel_dlr.sh BUILD - Kannel's dlr-url and dlr-mask, against a listener
# that records every request it gets:
#  - each dlr-mask bit gives one callback per event asked for: 1 delivered,
#    2 undeliverable, 4 buffered (the SMSC's ENROUTE), 8 the SMSC took the
#    submit, 16 it refused it; none for what was not asked;
#  - every escape Kannel documents is expanded: %F the SMSC's id (the one
#    the admin API shows), %n the account, %o %B %D %#group#key# from the
#    request, the receipt's words; an unknown escape goes out %-encoded;
#  - the JSON POST callback carries the connector, the SMSC's id and the
#    account;
#  - a stop waits for a callback in progress (bounded), rather than drop
#    it.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink ok smpp --dlr-delay 0-50 --enroute-rate 1
start_sink und smpp --dlr-delay 0-50 --undeliv-rate 1
start_sink rej smpp --reject-rate 1
web=$(free_port)
ADMIN_PORT=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 41; persist = true; spool_dir = "$TMP/spool"; };
admin: { listen = "127.0.0.1:$ADMIN_PORT"; token = "kannel-dlr-token"; };
connectors = (
  { name = "web"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$web"; instances = 1;
    users = ( { name = "app"; password = "secret"; } ); },
  { name = "smpp-ok"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_ok";
    system_id = "emg"; password = "secret"; },
  { name = "smpp-und"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_und";
    system_id = "emg"; password = "secret"; },
  { name = "smpp-rej"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_rej";
    system_id = "emg"; password = "secret"; }
);
routes = ( { dst_prefix = "4911"; to = "smpp-ok"; }, { dst_prefix = "4922"; to = "smpp-und"; },
           { dst_prefix = "4933"; to = "smpp-rej"; } );
CONF
mkdir -p "$TMP/spool"
start_emgd g "$TMP/emgd.conf"
wait_port "$web"
wait_port "$ADMIN_PORT"

# Masks and where they go, with the callbacks each must give (in order).
cases=(
  "1 4911000001 1"      "4 4911000002 4"      "8 4911000003 8"      "31 4911000004 8,4,1"
  "2 4911000005 -"      "2 4922000001 2"      "1 4922000002 -"      "31 4922000003 8,2"
  "16 4933000001 16"    "2 4933000002 2"      "18 4933000003 16"    "8 4933000004 -"
  "31 4933000005 16"
)
expected=0
for c in "${cases[@]}"; do
  set -- $c
  [ "$3" != - ] && expected=$((expected + $(tr ',' '\n' <<< "$3" | wc -l)))
done
expected=$((expected + 3))   # the escapes' callbacks and the JSON one
perl "$(dirname "$0")/http_catch.pl" "$TMP/catch.port" "$TMP/caught" "$expected" &
STARTED_PIDS+=($!)
wait_file "$TMP/catch.port"
catch=$(cat "$TMP/catch.port")

sendsms() {   # sendsms TO MASK DLR-URL [more query]: Kannel's answer code
  set -- "$@" ""
  curl -s -o "$TMP/answer" -w '%{http_code}' "http://127.0.0.1:$web/cgi-bin/sendsms?username=app&password=secret&from=4912345&to=$1&text=mask+test&dlr-mask=$2&dlr-url=$(printf %s "$3" | jq -sRr @uri)$4"
}
for c in "${cases[@]}"; do
  set -- $c
  code=$(sendsms "$2" "$1" "http://127.0.0.1:$catch/mask?to=$2&d=%d")
  [ "$code" = 202 ] || echo "# sendsms to $2 with mask $1: $code $(cat "$TMP/answer")"
done

tmpl="http://127.0.0.1:$catch/esc?p=%p&P=%P&q=%q&Q=%Q&d=%d&F=%F&i=%i&I=%I&n=%n&o=%o&B=%B&D=%D&g=%#smpp#k1#"
tmpl+="&t=%t&T=%T&k=%k&s=%s&S=%S&r=%r&e=%e&A=%A&c=%c&m=%m&u=%u&y=%y&v=%v&f=%f&x=%x&pct=%%25&unk=%Z&enc=%2F&end=%"
code=$(sendsms 4911000099 1 "$tmpl" "&account=acc+1&binfo=bill%2F7&meta-data=$(printf '?smpp?k1=v1' | jq -sRr @uri)")
check "a sendsms with every escape in its dlr-url: 202 ($code)" [ "$code" = 202 ]
code=$(sendsms 4911000097 1 "http://127.0.0.1:$catch/self?R=%R")
check "a sendsms with %R in its dlr-url: 202 ($code)" [ "$code" = 202 ]
code=$(curl -s -o "$TMP/rpost" -w '%{http_code}' -u app:secret -H 'Content-Type: application/json' \
  -d "{\"from\":\"4912345\",\"to\":\"4911000098\",\"text\":\"post me\",\"callback\":\"http://127.0.0.1:$catch/cb\"}" \
  "http://127.0.0.1:$web/api/v1/messages")
check "a JSON submit with a POST callback: 202 ($code)" [ "$code" = 202 ]

for _ in $(seq 600); do [ "$(grep -c '^GET\|^POST' "$TMP/caught" 2>/dev/null)" -ge "$expected" ] && break; sleep 0.1; done
sleep 0.5   # a callback more than asked for would come now
got=$(grep -c '^GET\|^POST' "$TMP/caught")
check "the listener got the $expected callbacks asked for ($got)" [ "$got" = "$expected" ]
for c in "${cases[@]}"; do
  set -- $c
  # Callbacks may overtake each other on their way: compare them sorted.
  seen=$(grep -o "^GET /mask?to=$2&d=[0-9]*" "$TMP/caught" | sed 's/.*d=//' | sort -n | paste -sd, - || true)
  want=$(tr ',' '\n' <<< "$3" | sort -n | paste -sd, -)
  check "dlr-mask $1 to $2: callbacks ${3/-/none} (${seen:-none})" [ "${seen:--}" = "$want" ]
done

line=$(grep '^GET /esc?' "$TMP/caught")
echo "# $line"
val() { sed -n "s/.*[?&]$1=\([^& ]*\).*/\1/p" <<< "$line"; }
id=$(val I)
curl -s -H "Authorization: Bearer kannel-dlr-token" "http://127.0.0.1:$ADMIN_PORT/api/messages/$id" > "$TMP/msg.json"
smsc_id=$(jq -r '[.events[] | select(.event == "sent")][0].detail' "$TMP/msg.json")
check "%I is our id ($id), which the admin API knows" [ -n "$id" -a -n "$smsc_id" -a "$smsc_id" != null ]
check "%F is the SMSC's id the admin API shows ($smsc_id)" [ "$(val F)" = "$smsc_id" ]
check "%p %P %q %Q: the addresses" [ "$(val p)$(val P)$(val q)$(val Q)" = 4911000099491234549110000994912345 ]
check "%d 1, %i the connector, %n the account" [ "$(val d)/$(val i)/$(val n)" = 1/smpp-ok/app ]
check "%o %B %D %#smpp#k1#: from the request" \
  [ "$(val o)|$(val B)|$(val D)|$(val g)" = "acc%201|bill%2F7|%3Fsmpp%3Fk1%3Dv1|v1" ]
check "%t Kannel's time with '+', %T Unix time" \
  bash -c "[[ '$(val t)' =~ ^20[0-9]{2}-[01][0-9]-[0-3][0-9]\+[0-2][0-9]:[0-5][0-9]:[0-5][0-9]$ ]] && [[ '$(val T)' =~ ^[0-9]{10}$ ]]"
check "%A the receipt text, %k %s %S %r its words, %e its hex" \
  [ "$(val A | cut -c1-$((5 + ${#smsc_id})))|$(val k)|$(val s)|$(val S)|$(val r | cut -c1-14)|$(val e | cut -c1-6)" \
    = "id%3A$smsc_id|id%3A$smsc_id|sub%3A001|dlvrd%3A001|submit+date%3A|69643A" ]
check "what a receipt has not (%c %m %u %y %v %f %x): empty" \
  [ "$(val c)$(val m)$(val u)$(val y)$(val v)$(val f)$(val x)" = "" ]
check "%% a '%', an unknown escape %-encoded, a %XX of the template kept, a last '%' encoded" \
  grep -q 'pct=%25&unk=%25Z&enc=%2F&end=%25 HTTP' <<< "$line"
line=$(grep '^GET /self?' "$TMP/caught")
check "%R the dlr-url as sent" [ "$(val R)" = "http%3A%2F%2F127.0.0.1%3A$catch%2Fself%3FR%3D%25R" ]

post=$(grep -A1 '^POST /cb' "$TMP/caught" | tail -1)
echo "# $post"
check "the JSON callback names the connector, the SMSC's id and the account" \
  bash -c "jq -e '.smsc == \"smpp-ok\" and (.smsc_id | length) > 0 and .user == \"app\" and .dlr == 1' <<< '$post' > /dev/null"

# A callback the application answers slowly, in progress when emgd is told
# to stop: the stop waits for its answer (at most 5 s) before it ends.
HTTP_CATCH_DELAY=2 perl "$(dirname "$0")/http_catch.pl" "$TMP/slow.port" "$TMP/slow" 1 &
STARTED_PIDS+=($!)
wait_file "$TMP/slow.port"
code=$(sendsms 4911000096 8 "http://127.0.0.1:$(cat "$TMP/slow.port")/slow")
check "a sendsms whose callback is answered slowly: 202 ($code)" [ "$code" = 202 ]
check "the slow callback reached the application" wait_until 300 test -s "$TMP/slow"
stop_emgd g 20
check "the stop waited for the callback in progress (none dropped at stop)" \
  bash -c "! grep -q 'receipt callbacks not sent at stop' '$TMP/g.log'"
stop_sink ok
stop_sink und
stop_sink rej
check "emgd logged no errors" bash -c "! grep -q ' ERROR ' '$TMP/g.log'"
finish
