# shellcheck shell=bash
# lib.sh - what the benchmarks that put emgd between emgload and emgsink share
# (gateway.sh, reference.sh, sweep.sh, soak.sh), so that they all measure the
# same setup: the build, a temporary directory, free loopback ports, emgsink
# and emgd started with the reference test's configuration, emgload's run,
# a process's CPU and memory from /proc, and every process started killed on
# exit. wire.sh and http_bench.sh, which run emgload against a sink of their
# own, use it too. Every run's figures are printed only after the checks
# (bench_check_load, bench_check_sink) that the work was done. Source it
# after `set -euo pipefail`; it changes to the repository's root.
#
#   bench_build [TARGET...]           builds emgd, emgload and emgsink, or the TARGETs
#                                     (RelWithDebInfo, after scripts/install-deps.sh)
#                                     unless NO_BUILD=1
#   bench_start_sink DIR DELAY [SERIES]
#                                     emgsink (SMPP, receipts after DELAY ms, e.g. 0-10000)
#                                     on a free port; sets sink_pid and sink_port; its counts
#                                     go to DIR/sink.json when it is stopped. With SERIES,
#                                     its status line (one a second) is kept there as
#                                     "EPOCH SUBMITS RECEIPTS_SENT" lines
#   bench_start_emgd DIR [persist=false] [log_level=info] [history_size=262144]
#                    [ucp_instances=10] [database=LIBCONFIG]
#                                     emgd with ucp-in, cimd2-in (ucp_instances each), http-in
#                                     and smpp-out (10 instances, window 100) to the sink;
#                                     sets emgd_pid, ucp_port, cimd2_port,
#                                     http_port; its log is DIR/emgd.log
#   bench_load DIR port=PORT [proto=ucp] [connections=10] [window=100]
#              [count=N | duration=S] [receipts=1] [wait_dlr=60]
#                                     runs emgload to the end: DIR/load.json (--json), and
#                                     sets load_cpu (s), load_start and load_end (epoch s);
#                                     exits (bench_check_load) unless emgload succeeded
#   bench_check_load DIR STATUS       exits 1 with a message on stderr unless emgload ended
#                                     with STATUS 0 and wrote DIR/load.json
#   bench_check_sink DIR [direct]     exits 1 with a message on stderr unless the sink's
#                                     own counts (DIR/sink.json, written when it stopped)
#                                     cover emgload's (DIR/load.json); call it after
#                                     stopping the sink and before printing any figure
#   bench_stop PID [GRACE]            SIGTERM, then SIGKILL after GRACE s (default 30)
#   bench_reap PID [GRACE]            waits up to GRACE s (default 5) for PID to end by itself
#   bench_sample_rss PID FILE         "EPOCH VmRSS_KB" of PID every second into FILE (run it
#                                     in the background; it ends with PID)
#   free_port, cpu_seconds PID, peak_rss_mb PID, bench_machine, bench_jq_defs
#
# bench_tmp is the temporary directory (removed on exit); bench_pids lists
# what is killed on exit: add to it whatever else is started.
# SPDX-License-Identifier: Apache-2.0

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

bench_tmp=$(mktemp -d "${TMPDIR:-/tmp}/emg-bench.XXXXXX")
bench_pids=()

# Named `cleanup` because tests/integration/pg_lib.sh chains a function of
# that name behind its own when it is sourced after this file.
cleanup() {
  local p
  for p in ${bench_pids[@]+"${bench_pids[@]}"}; do
    kill -KILL "$p" 2>/dev/null || true
  done
  for p in ${bench_pids[@]+"${bench_pids[@]}"}; do
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$bench_tmp"
}
trap cleanup EXIT
# Background processes of a script ignore SIGINT: exiting through the EXIT
# trap is what stops them on Ctrl-C or a SIGTERM.
trap 'exit 130' INT
trap 'exit 143' TERM

bench_build() {
  if [ -n "${NO_BUILD:-}" ]; then   # NO_BUILD=1: measure the binaries already in build/
    return 0
  fi
  local targets=("$@")
  [ $# -gt 0 ] || targets=(emgd emgload emgsink)
  scripts/install-deps.sh >/dev/null
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$(nproc)" --target "${targets[@]}" >/dev/null
}

free_port() {
  perl -MIO::Socket::INET -e \
    'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0) or die; print $s->sockport'
}
# User + system seconds of a live process.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
peak_rss_mb() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# jq definitions for the results' tables: `n` writes a whole number with
# thousands separators (1,234,567).
bench_jq_defs='def n: floor | tostring as $s | ($s | length) as $l
  | [range(0; $l) | $s[.:. + 1] as $c | if . > 0 and ($l - .) % 3 == 0 then "," + $c else $c end] | join("");'

# "2 cores, AMD EPYC, 24 GiB" for the results' headers.
bench_machine() {
  local model mem
  model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  mem=$(awk '/^MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)
  echo "$(nproc) cores, ${model:-unknown CPU}, $mem GiB"
}

# emgsink prints one status line a second when not --quiet; stamping each
# line as it arrives gives a throughput series without touching emgd.
bench_sink_series() {
  local line rest submits receipts
  while IFS= read -r line; do
    case $line in
      "emgsink: "*" submits ("*)
        rest=${line#emgsink: }
        submits=${rest%% submits*}
        rest=${rest#*receipts }
        receipts=${rest%% sent*}
        printf '%s %s %s\n' "$EPOCHREALTIME" "$submits" "$receipts"
        ;;
    esac
  done
}

# TLS=1: TLS on both of emgd's sides (emgload to its UCP or HTTP connector,
# its SMPP client to emgsink), with certificates made for the run.
bench_tls() { [ "${TLS:-0}" = 1 ]; }
bench_pki=$bench_tmp/pki
bench_tls_files() {
  bench_tls || return 0
  [ -s "$bench_pki/server.pem" ] || bash tests/integration/make_certs.sh "$bench_pki"
}

bench_start_sink() {
  local dir=$1 delay=$2 series=${3:-} i tls=()
  bench_tls_files
  bench_tls && tls=(--tls --cert "$bench_pki/server.pem" --key "$bench_pki/server.key")
  mkdir -p "$dir"
  rm -f "$dir/sink.port" "$dir/sink.json"
  if [ -n "$series" ]; then
    mkfifo "$dir/sink.fifo"
    bench_sink_series < "$dir/sink.fifo" > "$series" &
    sink_reader_pid=$!
    bench_pids+=("$sink_reader_pid")
    build/emgsink --protocol smpp --listen 127.0.0.1:0 --port-file "$dir/sink.port" --dlr-delay "$delay" \
      --user emg --password secret --summary "$dir/sink.json" ${tls[@]+"${tls[@]}"} 2> "$dir/sink.fifo" &
  else
    build/emgsink --protocol smpp --listen 127.0.0.1:0 --port-file "$dir/sink.port" --dlr-delay "$delay" \
      --user emg --password secret --summary "$dir/sink.json" ${tls[@]+"${tls[@]}"} --quiet &
  fi
  sink_pid=$!
  bench_pids+=("$sink_pid")
  for ((i = 0; i < 100; i++)); do [ -s "$dir/sink.port" ] && break; sleep 0.05; done
  [ -s "$dir/sink.port" ] || { echo "bench: emgsink did not start" >&2; exit 1; }
  sink_port=$(cat "$dir/sink.port")
}

bench_start_emgd() {
  local dir=$1 persist=false log_level=info history_size=262144 ucp_instances=10 database="" arg i
  shift
  for arg in "$@"; do
    case $arg in
      persist=* | log_level=* | history_size=* | ucp_instances=* | database=*) local "$arg" ;;
      *) echo "bench_start_emgd: unknown setting $arg" >&2; exit 2 ;;
    esac
  done
  ucp_port=$(free_port)
  cimd2_port=$(free_port)
  http_port=$(free_port)
  admin_port=$(free_port)
  mkdir -p "$dir/spool"
  # The queue limits and the DLR table are sized so that none of them
  # refuses anything at these loads: the test measures the message path.
  # Flat out, the open DLR entries are the last 10 s of messages and then
  # some, as the receipts lag the submits: past 2,000,000 at 175,000 msgs/s.
  # Receipts go back to the client with a window of their own: the default
  # (10) carries fewer than the 100 submits emgload keeps outstanding, and a
  # long run then piles receipts up (UCP allows 99). UCP_WINDOW changes it.
  local ucp_window=${UCP_WINDOW:-99}
  # ACCOUNTS=N: the clients' account "load" and N-1 others as an accounts
  # list, each with allow_ip, a max_rate far above the test's and a credit,
  # instead of the connectors' bare users lists (all connections bind as
  # "load": one budget shared by every instance, the contended case).
  local users='users = ( { name = "load"; password = "secret"; } );' accounts=""
  if [ -n "${ACCOUNTS:-}" ]; then
    users=""
    accounts="accounts = ( { name = \"load\"; password = \"secret\"; allow_ip = [ \"127.0.0.0/8\", \"::1\" ];
                max_rate = 1000000.0; credit = 1000000000; }"
    for ((i = 1; i < ACCOUNTS; i++)); do
      accounts+=", { name = \"load$i\"; password = \"secret$i\"; allow_ip = [ \"127.0.0.0/8\" ]; max_rate = 1000000.0;
                credit = 1000000000; }"
    done
    accounts+=" );"
  fi
  local tls_in="" tls_out=""
  if bench_tls; then
    tls_in="tls = { cert = \"$bench_pki/server.pem\"; key = \"$bench_pki/server.key\"; };"
    tls_out="tls = { ca = \"$bench_pki/ca.pem\"; };"
  fi
  cat > "$dir/emgd.conf" <<CONF
general: { node_id = 1; persist = $persist; spool_dir = "$dir/spool"; log_level = "$log_level"; log_file = "$dir/emgd.log";
           dlr_table_size = 4000000; max_total_queue = 110000; max_total_queue_soft = 100000;
           history_size = $history_size; history_series = ${HISTORY_SERIES:-512};
           journal_commit_interval_us = ${COMMIT_US:-500}; };
admin: { listen = "127.0.0.1:$admin_port"; token = "bench-admin-token-0123"; };
$database
$accounts
connectors = (
  { name = "http-in"; protocol = "http"; mode = "server"; listen = "127.0.0.1:$http_port"; instances = 2;
    connections_per_ip = 4096; max_connections = 8192; callback_pipeline = ${CALLBACK_PIPELINE:-1};
    $users $tls_in },
  { name = "ucp-in"; protocol = "ucp"; mode = "server"; listen = "127.0.0.1:$ucp_port"; instances = $ucp_instances;
    window = $ucp_window; $users $tls_in },
  { name = "cimd2-in"; protocol = "cimd2"; mode = "server"; listen = "127.0.0.1:$cimd2_port"; instances = $ucp_instances;
    window = $ucp_window; $users $tls_in },
  { name = "smpp-out"; protocol = "smpp"; mode = "client"; connect = "127.0.0.1:$sink_port";
    instances = 10; system_id = "emg"; password = "secret"; window = 100;
    long_receipts = "${LONG_RECEIPTS:-last}"; $tls_out }
);
routes = ( { to = "smpp-out"; } );
CONF
  if [ -n "$database" ]; then
    build/emgd -c "$dir/emgd.conf" --init-db >/dev/null
  fi
  build/emgd -c "$dir/emgd.conf" --foreground &
  emgd_pid=$!
  bench_pids+=("$emgd_pid")
  for ((i = 0; i < 200; i++)); do (exec 3<>"/dev/tcp/127.0.0.1/$ucp_port") 2>/dev/null && break; sleep 0.05; done
  kill -0 "$emgd_pid" 2>/dev/null || { echo "bench: emgd did not start (see its log above)" >&2; exit 1; }
  sleep 0.5   # let the smpp-out binds come up
}

bench_load() {
  local dir=$1 port="" proto=ucp connections=10 window=100 count="" duration="" receipts=1 wait_dlr=60 rate="" latency_log="" arg
  shift
  for arg in "$@"; do
    case $arg in
      port=* | proto=* | connections=* | window=* | count=* | duration=* | receipts=* | wait_dlr=* | rate=* | latency_log=*) local "$arg" ;;
      *) echo "bench_load: unknown setting $arg" >&2; exit 2 ;;
    esac
  done
  local size=(--count "${count:-1000000}")
  [ -n "$duration" ] && size=(--duration "$duration")
  [ -n "$rate" ] && size+=(--rate "$rate")
  [ -n "$latency_log" ] && size+=(--latency-log "$latency_log")
  [ "$proto" = http ] && size+=(--http-api "${HTTP_API:-json}")
  [ -n "${BATCH:-}" ] && size+=(--batch "$BATCH")
  local dlr=(--dlr --wait-dlr "$wait_dlr")
  [ "$receipts" = 1 ] || dlr=()
  bench_tls && size+=(--tls --ca "$bench_pki/ca.pem")
  load_start=$EPOCHREALTIME
  local stat_start
  stat_start=$(head -1 /proc/stat)
  # In a subshell of its own so that `times` there reports emgload's CPU
  # alone: once emgload has been waited for, its /proc entry is gone. Its
  # exit status goes up through load.status. Both run in the background so
  # that a signal to this script is handled at once (a foreground child
  # would delay it to the end of the run), and emgload's pid is passed up
  # so that the exit trap can kill it.
  rm -f "$dir/load.pid" "$dir/load.status" "$dir/load.json"
  (
    build/emgload --protocol "$proto" --connect "127.0.0.1:$port" --user load --password secret \
      --connections "$connections" --window "$window" "${size[@]}" --length "${LENGTH:-145}" \
      --from 4917000:13 --to 4917100:13 ${dlr[@]+"${dlr[@]}"} --json --quiet > "$dir/load.json" &
    echo $! > "$dir/load.pid"
    status=0
    wait $! || status=$?
    times > "$dir/load.times"
    echo "$status" > "$dir/load.status"
  ) &
  local sub=$! i
  bench_pids+=("$sub")
  for ((i = 0; i < 200; i++)); do [ -s "$dir/load.pid" ] && break; sleep 0.01; done
  [ -s "$dir/load.pid" ] && bench_pids+=("$(cat "$dir/load.pid")")
  wait "$sub" || true
  load_end=$EPOCHREALTIME
  # The whole machine over the load: seconds of CPU busy (all processes) and
  # the share of both cores that was busy, from /proc/stat's first line.
  read -r machine_cpu machine_busy < <(printf '%s\n%s\n' "$stat_start" "$(head -1 /proc/stat)" |
    awk -v hz="$(getconf CLK_TCK)" '{ idle[NR] = $5 + $6; all[NR] = 0; for (i = 2; i <= NF; i++) all[NR] += $i }
      END { busy = (all[2] - idle[2]) - (all[1] - idle[1]); printf "%.2f %.1f\n", busy / hz, 100 * busy / (all[2] - all[1]) }')
  bench_forget "$sub"
  [ -s "$dir/load.pid" ] && bench_forget "$(cat "$dir/load.pid")"
  # The second line of `times`: the children's user and system time, as 1m2.345s.
  load_cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.2f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' \
    "$dir/load.times")
  bench_check_load "$dir" "$(cat "$dir/load.status" 2>/dev/null || echo unknown)"
}

# emgload exits non-zero when anything was refused, left unanswered or
# unsent, or left without its receipt: its figures then measure less than
# the work asked for, so the run stops here, before any of them is printed.
bench_check_load() {
  local dir=$1 status=$2 counts=""
  if [ "$status" = 0 ] && [ -s "$dir/load.json" ]; then
    return 0
  fi
  if [ -s "$dir/load.json" ]; then
    counts=$(jq -r '"\(.sent) sent, \(.acked) acked, \(.refused) refused, \(.unanswered) unanswered, \(.unsent) unsent, \(.receipts) receipts (\(.receipts_missing) missing)"' \
      "$dir/load.json" 2>/dev/null || true)
  fi
  if [ "$status" = 0 ]; then
    echo "${0##*/}: FAILED: emgload wrote no summary; no figures from this run" >&2
  else
    echo "${0##*/}: FAILED: emgload exited with status $status${counts:+ ($counts)}; no figures from this run" >&2
  fi
  exit 1
}

# The sink's own counts (DIR/sink.json, written when it was stopped) against
# emgload's (DIR/load.json): every message emgload saw acked must have been
# taken by the sink, and every receipt emgload counted sent by it. emgload
# alone cannot tell a gateway that acks and drops from one that delivers
# when no receipts are asked for. With `direct` (emgload talking to the sink
# itself, nothing in between) the counts must match exactly as long as
# nothing was sent twice: no resubmit by emgload, no receipt sent again by
# the sink. Through emgd, or after a resubmit, the sink's counts only have
# to cover emgload's (>=): emgd submits a message again when the sink's
# answer is lost, and the sink sends a receipt again when emgd refuses it
# or leaves it unanswered, so the sink may count one message twice.
bench_check_sink() {
  local dir=$1 mode=${2:-gateway} problem
  if [ ! -s "$dir/sink.json" ]; then
    echo "${0##*/}: FAILED: the sink wrote no summary ($dir/sink.json); no figures from this run" >&2
    exit 1
  fi
  problem=$(jq -r -n --slurpfile l "$dir/load.json" --slurpfile s "$dir/sink.json" --arg mode "$mode" '
    $l[0] as $l | $s[0] as $s
    | ($mode == "direct" and $l.resubmits == 0
       and ($s.receipts_nacked // 0) == 0 and ($s.receipts_rerouted // 0) == 0) as $exact
    | [ if $exact then
          (if $s.accepted != $l.acked then "the sink took \($s.accepted) submits, emgload saw \($l.acked) acked (expected equal)" else empty end),
          (if $s.receipts_sent != $l.receipts then "the sink sent \($s.receipts_sent) receipts, emgload counted \($l.receipts) (expected equal)" else empty end)
        else
          (if $s.accepted < $l.acked then "the sink took \($s.accepted) submits, fewer than the \($l.acked) emgload saw acked" else empty end),
          (if $s.receipts_sent < $l.receipts then "the sink sent \($s.receipts_sent) receipts, fewer than the \($l.receipts) emgload counted" else empty end)
        end ]
    | join("; ")') || problem="cannot read $dir/load.json or $dir/sink.json"
  if [ -n "$problem" ]; then
    echo "${0##*/}: FAILED: $problem; no figures from this run" >&2
    exit 1
  fi
}

bench_forget() {
  local i
  for i in "${!bench_pids[@]}"; do
    [ "${bench_pids[$i]}" = "$1" ] && unset 'bench_pids[i]'
  done
  return 0
}

bench_stop() {
  local pid=$1 grace=${2:-30} i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  bench_forget "$pid"
}

bench_reap() {
  local pid=$1 grace=${2:-5} i
  for ((i = 0; i < grace * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  bench_stop "$pid" 1
}

bench_sample_rss() {
  local pid=$1 file=$2 rss i
  # Bounded: a day of samples at most, and it ends as soon as PID does.
  for ((i = 0; i < 86400; i++)); do
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || break
    [ -n "$rss" ] || break
    echo "$EPOCHREALTIME $rss" >> "$file"
    sleep 1
  done
}

# emgd's own ack latency on ucp-in (from a submit read to its ack written,
# the journal's commit included): the share of acks over 2.5, 5 and 10 ms,
# from /metrics. Against emgload's figure it says how much of the latency a
# client sees is the gateway's.
bench_gateway_ack_shares() {
  sleep 0.5   # the instances publish their counts a few times a second
  curl -s -H "Authorization: Bearer bench-admin-token-0123" "http://127.0.0.1:$admin_port/metrics" |
    awk -F'[ ]' '/^emg_ack_latency_seconds_bucket\{connector="ucp-in"/ {
        match($1, /le="[^"]*"/); le = substr($1, RSTART + 4, RLENGTH - 5); n[le] = $2 }
      END { t = n["+Inf"]; if (!t) exit
        printf "gateway ack   %.2f %% over 2.5 ms, %.2f %% over 5 ms, %.3f %% over 10 ms (emgd'"'"'s own, of %d)\n",
          100 * (t - n["0.0025"]) / t, 100 * (t - n["0.005"]) / t, 100 * (t - n["0.01"]) / t, t }'
}
