#!/usr/bin/env bash
# http_edge.sh BUILD - what reaches the two libmicrohttpd servers (the HTTP
# connector's and the admin API's) from a client that does not play by the
# rules:
#  - a request with two different Content-Length headers, or with a
#    Content-Length and a Transfer-Encoding, is refused 400 and its
#    connection closed;
#  - a chunked body of 100 MiB is refused 413 once past the body limit
#    (1 MiB on the connector, 64 KiB on the admin API), after a few MiB at
#    most, not read to its end: emgd's reads (traced) stay within 2 MiB;
#  - a Content-Length of 100 MiB is refused 413 at once, and the connection
#    closed with it: a client that sends the body on regardless meets a
#    reset after a few MiB at most (the socket buffers), on the JSON API,
#    Kannel's sendsms and the admin API alike; after a last answer that
#    ends a connection (Connection: close), 64 KiB at most are read on;
#  - a JSON text holding a lone UTF-16 surrogate escape ("\ud800") is
#    refused 400, as invalid UTF-8 is; a surrogate pair is one character;
#  - one address holds at most connections_per_ip connections (64 here; 16
#    on the admin API) while another is still served;
#  - a request sent one byte a second is cut off at request_timeout (3 s
#    here; 30 s on the admin API).
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
EDGE="python3 $(dirname "$0")/http_edge.py"

TOKEN=edge-admin-token-0123456789
web=$(free_port)
admin=$(free_port)
smsc=$(free_port)   # nobody listens: messages only wait in the queue
printf '%s\n' "$TOKEN" > "$TMP/admin.token"   # the token from a file, its newline stripped
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 33; persist = false; };
admin: { listen = "127.0.0.1:$admin"; token_file = "$TMP/admin.token"; };
connectors = (
  { name = "web"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$web"; instances = 1;
    connections_per_ip = 64; request_timeout = 3;
    users = ( { name = "app"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$smsc";
    system_id = "emg"; password = "secret"; reconnect_min = 1000; }
);
routes = ( { to = "smpp-out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$web"
wait_port "$admin"

WEB_AUTH="Basic $(printf 'app:secret' | base64)"
ADMIN_AUTH="Bearer $TOKEN"
for target in "connector $web /api/v1/messages" "connector $web /cgi-bin/sendsms" "admin $admin /api/reload"; do
  set -- $target
  auth=$WEB_AUTH
  [ "$1" = admin ] && auth=$ADMIN_AUTH
  for kind in two-lengths length-and-chunks; do
    got=$($EDGE framing "$2" "$3" "$auth" "$kind")
    check "$1 $3, $kind: 400 and closed ($got)" [ "$got" = "400 closed" ]
  done
done

# 100 MiB of chunks: refused past the limit, the client able to send no
# more than 4 MiB (the limit and what the sockets' buffers hold) before the
# answer and the close.
for target in "connector $web /api/v1/messages" "admin $admin /api/reload"; do
  set -- $target
  auth=$WEB_AUTH
  [ "$1" = admin ] && auth=$ADMIN_AUTH
  # What emgd reads meanwhile, from its system calls (every thread).
  strace -qq -f -e trace=read,recvfrom,recvmsg -e signal=none -o "$TMP/reads.$1" \
    -p "$(ls "/proc/$EMGD_PID_g/task" | paste -sd,)" &
  tracer=$!
  sleep 0.5
  read -r status sent closed < <($EDGE chunked "$2" "$3" "$auth" 100)
  kill -INT "$tracer"
  wait "$tracer" || true
  read_bytes=$(sed -n 's/.*) = \([0-9][0-9]*\)$/\1/p' "$TMP/reads.$1" | awk '{ n += $1 } END { print n + 0 }')
  check "$1: a chunked body of 100 MiB is answered $status (want 413) and $closed" \
    [ "$status" = 413 -a "$closed" = closed ]
  check "$1: ... after $sent bytes sent (at most 4 MiB)" between "$sent" 1 $((4 * 1024 * 1024))
  check "$1: ... of which emgd read $read_bytes bytes (at most 2 MiB)" between "$read_bytes" 1 $((2 * 1024 * 1024))
done

# 100 MiB announced by Content-Length, and sent on whatever the answer:
# refused at once, and the connection closed with the answer. A server that
# drained what follows would take all 100 MiB (loopback carries them in a
# fraction of a second).
for target in "connector $web /api/v1/messages" "connector $web /cgi-bin/sendsms" "admin $admin /api/reload"; do
  set -- $target
  auth=$WEB_AUTH
  [ "$1" = admin ] && auth=$ADMIN_AUTH
  read -r status sent ending < <($EDGE length "$2" "$3" "$auth" 100)
  check "$1 $3: a Content-Length of 100 MiB is answered $status (want 413), then the connection is $ending (want reset)" \
    [ "$status" = 413 -a "$ending" = reset ]
  check "$1 $3: ... after $sent bytes of the body taken (at most 16 MiB of 100)" between "$sent" 0 $((16 * 1024 * 1024))
  # Closed with the answer, not after reading on for a while: a byte sent
  # once the answer is in meets a reset (10 tries, 50 ms apart; a lingering
  # close would take them for 2 s).
  read -r status state < <($EDGE after "$2" "$3" "$auth" -)
  check "$1 $3: ... closed with the answer: a byte sent after it meets a $state (want reset; $status)" \
    [ "$status/$state" = 413/reset ]
done
# After the last answer of a connection that ends (Connection: close), what
# the client sends on is read and dropped for a moment, 64 KiB at most.
read -r status sent ending < <($EDGE closing "$web" /nothing - 100)
check "connector: after a last answer ($status), 100 MiB sent on: $ending after $sent bytes (want reset, at most 16 MiB)" \
  bash -c "[ '$status/$ending' = 404/reset ] && [ '$sent' -le $((16 * 1024 * 1024)) ]"

# Lone surrogates: no text, refused as invalid UTF-8 is.
submit() {  # submit BODY: the status and the answer
  curl -s -w ' %{http_code}' -u app:secret -H 'Content-Type: application/json' -d "$1" \
    "http://127.0.0.1:$web/api/v1/messages"
}
for text in 'a\ud800b' '\udc00' '\ud83d\u0041' 'x\ud83d'; do
  got=$(submit "{\"from\":\"4912345\",\"to\":\"4915550001\",\"text\":\"$text\"}")
  check "a text \"$text\" (a lone surrogate) is refused 400, saying why ($got)" \
    bash -c "[ '${got##* }' = 400 ] && grep -q 'not valid Unicode: a lone UTF-16 surrogate' <<< '$got'"
done
got=$(submit $'{"from":"4912345","to":"4915550001","text":"\xc0\xaf"}')
check "... as an overlong UTF-8 form is ($got)" [ "${got##* }" = 400 ]
got=$(submit '{"from":"4912345","to":"4915550001","text":"\ud83d\ude00 \\ud800"}')
check "a surrogate pair, and an escaped backslash before ud800, are text: 202 (${got##* })" [ "${got##* }" = 202 ]

# 100 connections from 127.0.0.1: 64 kept (16 on the admin API), the rest
# closed at once; 127.0.0.2 still served, 127.0.0.1 not.
read -r kept closed other same < <($EDGE per-ip "$web" /cgi-bin/sendsms - 100)
check "connector: of 100 connections from one address 64 kept, 36 closed ($kept, $closed)" \
  [ "$kept" = 64 -a "$closed" = 36 ]
check "connector: meanwhile 127.0.0.2 is answered ($other; 403 without credentials), 127.0.0.1 not ($same)" \
  [ "$other" = 403 -a "$same" = - ]
read -r kept closed other same < <($EDGE per-ip "$admin" /api/status "$ADMIN_AUTH" 30)
check "admin: of 30 connections from one address 16 kept, 14 closed ($kept, $closed)" \
  [ "$kept" = 16 -a "$closed" = 14 ]
check "admin: meanwhile 127.0.0.2 is answered ($other), 127.0.0.1 not ($same)" \
  [ "$other" = 200 -a "$same" = - ]

# Slow requests: one byte a second of a request's head, which restarts
# libmicrohttpd's own time-out at each byte.
$EDGE trickle "$admin" /api/status "$ADMIN_AUTH" 60 > "$TMP/admin.trickle" &
admin_trickle=$!
read -r state secs < <($EDGE trickle "$web" /api/v1/messages - 60)
# Not before request_timeout; after it, as soon as a busy machine gets to
# it (a trickle that restarted the time-out would keep it open for the 60 s).
check "connector: a request sent one byte a second is $state after $secs s (want closed within 3..20 s)" \
  [ "$state" = closed -a "$secs" -ge 3 -a "$secs" -le 20 ]
wait "$admin_trickle"
read -r state secs < "$TMP/admin.trickle"
check "admin: a request sent one byte a second is $state after $secs s (want closed within 30..45 s)" \
  [ "$state" = closed -a "$secs" -ge 30 -a "$secs" -le 45 ]

# Still serving: a plain submit and a status request.
code=$(curl -s -o /dev/null -w '%{http_code}' -u app:secret -H 'Content-Type: application/json' \
  -d '{"from":"4912345","to":"4915550001","text":"hi"}' "http://127.0.0.1:$web/api/v1/messages")
check "the connector still takes a plain submit: 202 ($code)" [ "$code" = 202 ]
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: $ADMIN_AUTH" "http://127.0.0.1:$admin/api/status")
check "the admin API still answers, to the token of token_file: 200 ($code)" [ "$code" = 200 ]
finish
