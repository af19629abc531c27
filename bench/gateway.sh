#!/usr/bin/env bash
# gateway.sh [COUNT] [DLR_DELAY] - the reference test through emgd:
# emgload (UCP, 10 connections, receipts) -> emgd (ucp-in 10 instances,
# smpp-out 10 instances) -> emgsink (SMPP, receipts after DLR_DELAY ms,
# default 0-10000) and the receipts back. 145-character texts, 13-digit
# addresses, persist off (PERSIST=true for on). Prints msgs/s, ack latency, and emgd's CPU and
# peak RSS. All three processes share this machine's cores.
#   IN=http     submits over HTTP (JSON, keep-alive) to an HTTP connector instead of UCP
#   DB=1        with the message log in PostgreSQL (a throw-away cluster on this machine)
#   RECEIPTS=0  no receipts asked for
#   PERF=FILE   record a perf profile of emgd during the load into FILE
#   LOG_LEVEL, HISTORY_SIZE, WINDOW, THREADS=1 (emgd's CPU per thread),
#   NO_BUILD=1 (use the binaries in build/ as they are)
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-1000000}
dlr_delay=${2:-0-10000}
window=${WINDOW:-100}
if [ -z "${NO_BUILD:-}" ]; then   # NO_BUILD=1: measure the binaries already in build/
  scripts/install-deps.sh >/dev/null
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$(nproc)" --target emgd emgload emgsink >/dev/null
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  perl -MIO::Socket::INET -e \
    'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0) or die; print $s->sockport'
}
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
peak_rss_mb() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

build/emgsink --protocol smpp --listen 127.0.0.1:0 --port-file "$tmp/sink.port" --dlr-delay "$dlr_delay" \
  --user emg --password secret --quiet &
pids+=($!)
sink_pid=$!
for _ in $(seq 100); do [ -s "$tmp/sink.port" ] && break; sleep 0.05; done
ucp=$(free_port)
http=$(free_port)
database=""
if [ -n "${DB:-}" ]; then
  source tests/integration/pg_lib.sh
  pg_start >/dev/null
  database="database: { conninfo = \"$PG_URL\"; message_log = true; };"
fi
cat > "$tmp/emgd.conf" <<CONF
general: { node_id = 1; persist = ${PERSIST:-false}; spool_dir = "$tmp/spool"; log_level = "${LOG_LEVEL:-info}"; log_file = "$tmp/emgd.log";
           dlr_table_size = 2000000; max_total_queue = 110000; max_total_queue_soft = 100000;
           history_size = ${HISTORY_SIZE:-262144}; };
$database
connectors = (
  { name = "http-in"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$http"; instances = 2;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp"; instances = 10;
    users = ( { name = "load"; password = "secret"; } ); },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$(cat "$tmp/sink.port")";
    instances = 10; system_id = "emg"; password = "secret"; window = 100; }
);
routes = ( { to = "smpp-out"; } );
CONF
mkdir -p "$tmp/spool"
[ -n "$database" ] && build/emgd -c "$tmp/emgd.conf" --init-db >/dev/null
build/emgd -c "$tmp/emgd.conf" --foreground &
emgd_pid=$!
pids+=($emgd_pid)
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$ucp") 2>/dev/null && break; sleep 0.05; done
sleep 0.5   # let the smpp-out binds come up

if [ -n "${PERF:-}" ]; then   # PERF=FILE: a perf profile of emgd during the load
  perf record -F 1000 -g -p "$emgd_pid" -o "$PERF" >/dev/null 2>&1 &
  perf_pid=$!
fi
in=${IN:-ucp}
receipts=(--dlr --wait-dlr 60)
[ "${RECEIPTS:-1}" = 0 ] && receipts=()
port=$ucp
[ "$in" = http ] && port=$http
build/emgload --protocol "$in" --connect "127.0.0.1:$port" --user load --password secret --connections 10 \
  --window "$window" --count "$count" --length 145 --from 4917000:13 --to 4917100:13 ${receipts[@]+"${receipts[@]}"} \
  --json --quiet > "$tmp/load.json" || true
if [ -n "${THREADS:-}" ]; then   # THREADS=1: emgd's CPU per thread
  for t in /proc/"$emgd_pid"/task/*; do
    printf '%-16s %s\n' "$(cat "$t/comm")" "$(awk -v hz="$(getconf CLK_TCK)" '{ n = split($0, f, ") "); split(f[n], g, " "); printf "%.2f s", (g[12] + g[13]) / hz }' "$t/stat")"
  done | sort -k2 -g -r | head -12
fi
if [ -n "${PERF:-}" ]; then
  kill -INT "$perf_pid"; wait "$perf_pid" || true
fi
emgd_cpu=$(cpu_seconds "$emgd_pid")
emgd_mb=$(peak_rss_mb "$emgd_pid")
sink_cpu=$(cpu_seconds "$sink_pid")
if [ -n "$database" ]; then   # how far the message log got, and how long it took to catch up
  for _ in $(seq 600); do
    [ "$(pg_psql -c "SELECT count(*) FROM message_log WHERE receipt_state IS NOT NULL")" -ge "$(jq .receipts "$tmp/load.json")" ] && break
    sleep 0.1
  done
  echo "message log   $(pg_psql -c "SELECT count(*) FROM message_log") rows, $(pg_psql -c "SELECT count(*) FROM message_log WHERE receipt_state IS NOT NULL") with their receipt"
fi
kill -TERM "$emgd_pid"; wait "$emgd_pid" || true; grep -h "journal:" "$tmp/emgd.log" || true
kill -TERM "$sink_pid"; wait "$sink_pid" || true
pids=()

lines=$(wc -l < "$tmp/emgd.log")
echo "emgd log      $lines lines at log level ${LOG_LEVEL:-info}"
jq -r --arg in "$in" --arg db "${DB:+, message log on}" --arg persist "${PERSIST:-false}" --arg ec "$emgd_cpu" --arg em "$emgd_mb" --arg sc "$sink_cpu" --arg dd "$dlr_delay" '
  "messages      \(.acked) acked of \(.sent) sent, \(.refused) refused, \(.receipts) receipts (\(.receipts_missing) missing)",
  "throughput    \(.msgs_per_s | floor) msgs/s (\($in | ascii_upcase) in, SMPP out, receipts after \($dd) ms, persist \($persist)\($db))",
  "ack latency   p50 \(.ack_latency_ms.p50) ms, p99 \(.ack_latency_ms.p99) ms, max \(.ack_latency_ms.max) ms",
  "emgd          \($ec) s CPU, peak RSS \($em) MB",
  "emgsink       \($sc) s CPU"' "$tmp/load.json"
