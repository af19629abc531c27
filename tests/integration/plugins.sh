#!/usr/bin/env bash
# plugins.sh BUILD - the example plugins in a running emgd, driven by Perl's
# Net::SMPP as the client: number normalisation rewrites the destination,
# the blacklist refuses, keyword routing picks the connector, a reload picks
# up a changed blacklist, and a plugin that fails is contained per on_error.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
probe="$(dirname "$0")/smpp_probe.pl"

start_sink a smpp
start_sink b smpp
smpp=$(free_port)
printf '# numbers we never send to\n4917199\n' > "$TMP/blacklist.txt"
write_conf() {   # write_conf EXTRA_PLUGIN
  cat > "$TMP/emgd.conf" <<CONF
general: { node_id = 15; persist = false; };
connectors = (
  { name = "smpp-in"; protocol = "smpp"; mode = "server"; listen = "127.0.0.1:$smpp"; instances = 2;
    users = ( { name = "app"; password = "secret"; } ); },
  { name = "sink-a"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_a";
    system_id = "emg"; password = "secret"; },
  { name = "sink-b"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$SINK_PORT_b";
    system_id = "emg"; password = "secret"; }
);
routes = ( { to = "sink-a"; } );
plugins = (
  { path = "$BIN/plugins/normalize.so"; country_code = "49"; timeout_ms = 5000; },
  { path = "$BIN/plugins/blacklist.so"; file = "$TMP/blacklist.txt"; timeout_ms = 5000; },
  { path = "$BIN/plugins/keyword.so"; map = "INFO=sink-b"; timeout_ms = 5000; }$1
);
CONF
}
# timeout_ms 5000, not the default 50: a hook preempted for 50 ms on a busy
# machine would have its result discarded (timed out), which is not what is tested here.
write_conf ""
check "--check-config loads the plugins" "$BIN/emgd" -c "$TMP/emgd.conf" --check-config
start_emgd g "$TMP/emgd.conf"
wait_port "$smpp"
sleep 0.5   # the client connectors bind

submit() {   # submit NAME SRC DST TEXT: Net::SMPP's answer in $TMP/NAME.out
  perl "$probe" "$smpp" submit app secret "$2" "$3" "$4" > "$TMP/$1.out"
}
status_of() { sed -n 's/^submit_status=//p' "$TMP/$1.out"; }
# delivered_to SINK DST TEXT: the sink recorded that destination and text
delivered_to() {
  for _ in $(seq 300); do
    grep -qP "^[^\t]*\t$2\t$3" "$TMP/$1.record" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

submit national 4915550001 01511234567 "hello national"
check "a national number is accepted" [ "$(status_of national)" = 0x00 ]
check "normalize sent it as 491511234567" delivered_to a 491511234567 "hello national"
submit intl 4915550001 00491511234568 "hello 00"
check "00-prefixed: sent as 491511234568" delivered_to a 491511234568 "hello 00"
submit short 4915550001 12345 "hello short code"
check "a short code stays as it is" delivered_to a 12345 "hello short code"

submit black 4915550001 4917199000001 "never"
check "a blacklisted destination is refused ($(status_of black))" [ "$(status_of black)" != 0x00 ]
submit black_national 4915550001 017199000002 "never either"
check "a blacklisted number written nationally is refused too" [ "$(status_of black_national)" != 0x00 ]

submit info 4915550001 491511111111 "INFO opening hours"
check "the keyword INFO routes to sink-b" delivered_to b 491511111111 "INFO opening hours"
submit other 4915550001 491511111112 "hello there"
check "other texts take the routes (sink-a)" delivered_to a 491511111112 "hello there"

# A reload re-reads the blacklist file.
printf '4917199\n4917188\n' > "$TMP/blacklist.txt"
submit before_reload 4915550001 4917188000001 "before reload"
check "before the reload 4917188 passes" [ "$(status_of before_reload)" = 0x00 ]
kill -HUP "$EMGD_PID_g"
for _ in $(seq 300); do grep -q "reloaded" "$TMP/g.log" && break; sleep 0.1; done
submit after_reload 4915550001 4917188000002 "after reload"
check "after the reload 4917188 is refused" [ "$(status_of after_reload)" != 0x00 ]

# A plugin that fails, with on_error = "refuse": the message is refused
# with a temporary error (the client may retry), and emgd keeps running.
write_conf ", { path = \"$BIN/tests/test_plugin_misbehave.so\"; name = \"broken\"; on_error = \"refuse\"; error = true; timeout_ms = 5000; }"
kill -HUP "$EMGD_PID_g"
for _ in $(seq 300); do [ "$(grep -c "reloaded" "$TMP/g.log")" -ge 2 ] && break; sleep 0.1; done
submit broken 4915550001 491511111113 "through a broken plugin"
check "a failing plugin with on_error refuse: refused ($(status_of broken))" [ "$(status_of broken)" != 0x00 ]
for _ in $(seq 300); do grep -q "emg.plugin.broken" "$TMP/g.log" && break; sleep 0.1; done
check "the failure is logged with the plugin's name" grep -q "emg.plugin.broken: before_receive returned an error" "$TMP/g.log"
check "emgd is still running" kill -0 "$EMGD_PID_g"

# A plugin file that is not there: the reload is refused, the running plugins stay.
write_conf ", { path = \"$TMP/missing.so\"; }"
kill -HUP "$EMGD_PID_g"
for _ in $(seq 300); do grep -q "reload refused" "$TMP/g.log" && break; sleep 0.1; done
check "a reload with a missing plugin is refused, naming the file" grep -q "reload refused.*missing.so" "$TMP/g.log"

stop_emgd g 10
stop_sink a
stop_sink b
finish
