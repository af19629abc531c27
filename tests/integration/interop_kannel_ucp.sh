#!/usr/bin/env bash
# interop_kannel_ucp.sh BUILD - emgd's UCP server against Kannel (Debian's
# kannel 1.4.5, its emi driver) as an independent UCP client: Kannel logs in
# with op 60, submits with op 51 asking for receipts, and must get its op 53
# notifications matched to its messages (it calls the dlr-url for each).
# sendsms -> smsbox -> bearerbox -(UCP)-> emgd -(SMPP)-> emgsink, and back.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"

start_sink s smpp --dlr-delay 0-300
ucp=$(free_port); admin=$(free_port); boxport=$(free_port); sendsms=$(free_port); dlrport=$(free_port)
cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 4; persist = false; };
connectors = (
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 2;
    users = ( { name = "kannel"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_s";
    instances = 2; system_id = "emg"; password = "secret"; window = 20; reconnect_min = 100; }
);
routes = ( { to = "smpp-out"; } );
CONF
start_emgd g "$TMP/emgd.conf"
wait_port "$ucp"

# Receives Kannel's dlr-url calls: one line per request in dlr.log.
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
smsc = emi
smsc-id = emg
host = 127.0.0.1
port = $ucp
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
CONF
/usr/sbin/bearerbox "$TMP/kannel.conf" >"$TMP/bearerbox.out" 2>&1 &
STARTED_PIDS+=($!)
wait_port "$boxport"
/usr/sbin/smsbox "$TMP/kannel.conf" >"$TMP/smsbox.out" 2>&1 &
STARTED_PIDS+=($!)
wait_port "$sendsms"

# Wait (bounded) until Kannel's EMI link is logged in.
for _ in $(seq 100); do
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

# Every message reaches the SMSC and every receipt gets back to Kannel's dlr-url with status 1 (delivered).
for _ in $(seq 150); do
  [ "$(grep -c 'status=1' "$TMP/dlr.log" 2>/dev/null || true)" -ge $N ] && break
  sleep 0.1
done
check "Kannel matched all $N op 53 receipts (dlr-url called with status 1)" \
  [ "$(grep -c 'GET /dlr?n=[0-9]*&status=1 ' "$TMP/dlr.log")" = $N ]
check "each message's receipt came once" [ "$(grep -o 'n=[0-9]*' "$TMP/dlr.log" | sort -u | wc -l)" = $N ]
stop_emgd g 20
stop_sink s
check "the SMSC recorded the $N texts from Kannel" [ "$(grep -c 'Kannel message' "$TMP/s.record")" = $N ]
check "emgd saw Kannel log in" grep -q "bound as kannel" "$TMP/g.log"
finish
