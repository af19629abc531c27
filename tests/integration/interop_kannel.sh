#!/usr/bin/env bash
# interop_kannel.sh BUILD ucp|cimd2 - emgd's UCP or CIMD2 server against
# Kannel (Debian's kannel 1.4.5, its emi or cimd2 driver) as an independent
# client: Kannel logs in (op 60; CIMD2 login 01), submits asking for
# receipts (op 51; submit 03 with 056), and must get its receipts (op 53;
# status report 23) matched to its messages: it calls the dlr-url for each.
# sendsms -> smsbox -> bearerbox -(UCP/CIMD2)-> emgd -(SMPP)-> emgsink, and
# back. The SMSC's MOs go the other way (op 52; deliver message 20) to
# Kannel's sms-service.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

PROTO=${2:-ucp}
case $PROTO in
  ucp) driver=emi ;;
  cimd2) driver=cimd2 ;;
  *) echo "interop_kannel.sh: protocol ucp or cimd2, not $PROTO" >&2; exit 2 ;;
esac
MO=5
start_sink s smpp --dlr-delay 0-300 --mo $MO --mo-rate 5 --mo-from 4917012345 --mo-to 5555
port=$(free_port); admin=$(free_port); boxport=$(free_port); sendsms=$(free_port); dlrport=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 4; persist = false; };
connectors = (
  { name = "in"; protocol = "$PROTO"; mode = "server"; listen = "127.0.0.1:$port"; instances = 2;
    users = ( { name = "kannel"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    instances = 2; system_id = "emg"; password = "secret"; window = 20; reconnect_min = 100; }
);
routes = ( { from = "smpp-out"; to = "in"; }, { to = "smpp-out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$port"

# Receives Kannel's dlr-url and sms-service calls: one line per request in dlr.log.
perl -MIO::Socket::INET -e '
  my $s = IO::Socket::INET->new(Listen => 64, LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], ReuseAddr => 1) or die;
  open(my $log, ">>", $ARGV[1]) or die; $log->autoflush(1);
  while (my $c = $s->accept) {
    my $line = <$c>; $line =~ s/\r?\n$//; print $log "$line\n";
    while (my $h = <$c>) { last if $h =~ /^\r?\n$/ }
    print $c "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"; close $c;
  }' "$dlrport" "$TMP/dlr.log" &
STARTED_PIDS+=($!)

cat > "$TMP/kannel.conf" <<CONF
group = core
admin-port = $admin
admin-password = admin
smsbox-port = $boxport
box-allow-ip = 127.0.0.1
log-file = "$TMP/bearerbox.log"
log-level = 1
dlr-storage = internal

group = smsc
smsc = $driver
smsc-id = emg
host = 127.0.0.1
port = $port
smsc-username = kannel
smsc-password = secret
keepalive = 30
window = 10

group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = $boxport
sendsms-port = $sendsms
log-file = "$TMP/smsbox.log"
log-level = 1

group = sendsms-user
username = tester
password = foobar

group = sms-service
keyword = default
get-url = "http://127.0.0.1:$dlrport/mo?from=%p&to=%P&text=%a"
catch-all = true
max-messages = 0
CONF
/usr/sbin/bearerbox "$TMP/kannel.conf" >"$TMP/bearerbox.out" 2>&1 &
STARTED_PIDS+=($!)
wait_port "$boxport"
/usr/sbin/smsbox "$TMP/kannel.conf" >"$TMP/smsbox.out" 2>&1 &
STARTED_PIDS+=($!)
wait_port "$sendsms"

# Wait (bounded) until Kannel's link is logged in.
for _ in $(seq 600); do
  curl -s "http://127.0.0.1:$admin/status.txt?password=admin" | grep -q "emg.*online" && break
  sleep 0.1
done

N=20
sent=0
for i in $(seq 1 $N); do
  to=$(printf '4790000%03d' "$i")
  dlr_url="http://127.0.0.1:$dlrport/dlr?n=$i&status=%d"
  if curl -s -G "http://127.0.0.1:$sendsms/cgi-bin/sendsms" --data-urlencode "username=tester" \
       --data-urlencode "password=foobar" --data-urlencode "from=12345" --data-urlencode "to=$to" \
       --data-urlencode "text=Kannel message $i" --data-urlencode "dlr-mask=3" \
       --data-urlencode "dlr-url=$dlr_url" | grep -q "Accepted"; then
    sent=$((sent + 1))
  fi
done
check "Kannel accepted all $N sendsms requests" [ $sent = $N ]

# logged_at_least REGEX COUNT: dlr.log has that many lines matching REGEX.
logged_at_least() { [ "$(grep -c "$1" "$TMP/dlr.log" 2>/dev/null || true)" -ge "$2" ]; }

# Every message reaches the SMSC and every receipt gets back to Kannel's dlr-url with status 1 (delivered).
wait_until 600 logged_at_least 'status=1' $N || true
check "Kannel matched all $N $PROTO receipts (dlr-url called with status 1)" \
  [ "$(grep -c 'GET /dlr?n=[0-9]*&status=1 ' "$TMP/dlr.log")" = $N ]
check "each message's receipt came once" [ "$(grep -o 'n=[0-9]*' "$TMP/dlr.log" | sort -u | wc -l)" = $N ]
# The SMSC's MOs reached Kannel's sms-service with their sender and text.
wait_until 600 logged_at_least '^GET /mo?' $MO || true
check "Kannel got the SMSC's $MO MOs over $PROTO, each once" \
  [ "$(grep -Eo '^GET /mo\?from=[^ ]*text=mo(%20|\+)[0-9]+ ' "$TMP/dlr.log" | sort -u | wc -l)" = $MO ]
check "an MO's sender and recipient as the SMSC gave them" \
  grep -Eq '^GET /mo\?from=(%2B)?4917012345&to=5555&text=mo(%20|\+)[0-9]+ ' "$TMP/dlr.log"
stop_emgd g 20
stop_sink s
check "the SMSC recorded the $N texts from Kannel" [ "$(grep -c 'Kannel message' "$TMP/s.record")" = $N ]
check "emgd saw Kannel log in" grep -q "bound as kannel" "$TMP/g.log"
finish
