#!/usr/bin/env bash
# reference.sh - the reference product's published test, on this machine,
# in its four variants, each on a fresh emgd and emgsink: emgload submits
# over UCP with a receipt request (10 connections, window 100) to emgd's
# ucp-in (10 instances); emgd sends over SMPP through smpp-out (10
# instances, window 100) to emgsink, which returns each receipt after a
# random 0-10 s; emgd routes the receipts back to emgload. 145-character
# texts, 13-digit addresses. Writes a results table and a chart of msgs/s
# over time; the setup is bench/lib.sh's, the same as gateway.sh's.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/reference.sh [--count N | --duration S] [--variants LIST] [--out DIR]
  --count N        messages per variant (default 1000000; 100000 for a quick check)
  --duration S     send for S seconds per variant instead of a count (60 or more for
                   a steady figure)
  --variants LIST  comma-separated, run in this order (default all four):
                     persist-on   persist on, receipts, log level info (the base)
                     persist-off  the base with persist off
                     no-receipts  the base without receipt requests
                     debug2       the base at log level debug2
  --out DIR        where reference-results.md and reference-throughput.svg go (default doc)
Environment: NO_BUILD=1 uses the binaries in build/ as they are (otherwise
scripts/install-deps.sh and a RelWithDebInfo build run first). ACCOUNTS=N
declares the clients' account and N-1 others in an accounts list, with allow_ip,
max_rate and credit, instead of the bare users lists (bench/lib.sh).
A variant in which emgload fails (refused, unanswered or unsent messages,
missing receipts) or emgsink's counts do not cover emgload's stops the script
with a message on stderr and status 1, without writing the results.
A variant takes its load time, up to 10 s more for the last receipts, and
about 2 s to start and stop: about 1.5-2 minutes for the four at 1,000,000.
USAGE
}

cmdline="bench/reference.sh${*:+ $*}"
count=1000000
duration=""
variants="persist-on,persist-off,no-receipts,debug2"
out=doc
while [ $# -gt 0 ]; do
  case $1 in
    --count) count=${2:?--count needs a number}; duration=""; shift 2 ;;
    --duration) duration=${2:?--duration needs seconds}; shift 2 ;;
    --variants) variants=${2:?--variants needs a list}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ $count =~ ^[1-9][0-9]*$ ]] || { echo "reference.sh: --count must be a positive number" >&2; exit 2; }
[[ -z $duration || $duration =~ ^[1-9][0-9]*$ ]] || { echo "reference.sh: --duration must be a positive number" >&2; exit 2; }
IFS=, read -r -a variant_list <<< "$variants"
for v in "${variant_list[@]}"; do
  case $v in
    persist-on | persist-off | no-receipts | debug2) ;;
    *) echo "reference.sh: unknown variant '$v'" >&2; usage >&2; exit 2 ;;
  esac
done
# Paths are taken from where the script was started, before lib.sh moves to the root.
case $out in /*) ;; *) out=$PWD/$out ;; esac

# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_build
# Checked before the runs, so that a missing gnuplot does not waste them.
command -v gnuplot >/dev/null || { echo "reference.sh: gnuplot is missing (Debian: gnuplot-nox; scripts/install-deps.sh installs it)" >&2; exit 1; }
mkdir -p "$out"

dlr_delay=0-10000
size=(count="$count")
[ -n "$duration" ] && size=(duration="$duration")
rows=()
plot_series=()
for v in "${variant_list[@]}"; do
  persist=true receipts=1 log_level=info
  case $v in
    persist-off) persist=false ;;
    no-receipts) receipts=0 ;;
    debug2) log_level=debug2 ;;
  esac
  dir=$bench_tmp/$v
  echo "reference.sh: $v (persist $persist, receipts $receipts, log level $log_level)..."
  bench_start_sink "$dir" "$dlr_delay" "$dir/sink.series"
  bench_start_emgd "$dir" persist="$persist" log_level="$log_level"
  bench_load "$dir" port="$ucp_port" receipts="$receipts" "${size[@]}"
  # Read before SIGTERM: a stopped process has no /proc entry. Both include
  # the wait for the last receipts.
  emgd_cpu=$(cpu_seconds "$emgd_pid")
  emgd_mb=$(peak_rss_mb "$emgd_pid")
  sink_cpu=$(cpu_seconds "$sink_pid")
  bench_stop "$emgd_pid"
  bench_stop "$sink_pid"
  bench_reap "$sink_reader_pid"
  # What emgload counted must have reached emgsink: without receipts, the
  # only evidence that emgd sent on what it acked.
  bench_check_sink "$dir"
  # Shows that the level was in force: debug2 writes about five lines a message.
  log_lines=$(wc -l < "$dir/emgd.log")
  # The journal and a debug2 log take GBs at these counts: not kept past the variant.
  rm -rf "$dir/spool" "$dir/emgd.log"

  # msgs/s each second: emgsink's submit counter (what emgd sent out),
  # differenced between its status lines, stamped as they arrived. t = 0
  # when emgload started, with the fresh sink's count at 0 then; up to
  # emgload's last ack (its elapsed_s), so that the wait for the last
  # receipts is not drawn as a fall to zero.
  elapsed=$(jq .elapsed_s "$dir/load.json")
  awk -v t0="$load_start" -v te="$elapsed" '
    BEGIN { prev_t = t0; prev_n = 0 }
    $1 <= t0 || prev_t - t0 >= te { last_n = $2; next }
    {
      last_n = $2
      # The interval with the last ack in it ends there: a rate over the
      # whole second would dip only because the sending had stopped.
      t = ($1 < t0 + te) ? $1 : t0 + te
      # The sink ticks on its own clock, so an interval can be a sliver of
      # a second, too short for a rate: it then joins the next one.
      if (t - prev_t >= 0.5) {
        printf "%.2f %.0f\n", t - t0, ($2 - prev_n) / (t - prev_t)
        points++
        prev_t = $1; prev_n = $2
      }
    }
    # A run shorter than half a second: one point, its average.
    END { if (!points && last_n > 0 && te > 0) printf "%.2f %.0f\n", te, last_n / te }' "$dir/sink.series" > "$dir/rate.dat"
  plot_series+=("$dir/rate.dat" "$v")

  row=$(jq -r --arg v "$v" --arg p "$persist" --arg r "$receipts" --arg l "$log_level" \
    --arg ec "$emgd_cpu" --arg em "$emgd_mb" --arg lc "$load_cpu" --arg sc "$sink_cpu" --arg ll "$log_lines" \
    "$bench_jq_defs"'
    [$v, (if $p == "true" then "on" else "off" end), (if $r == "1" then "0-10 s" else "none" end), $l,
     (.acked | n), (.msgs_per_s | floor | n), "\(.ack_latency_ms.p50) ms", "\(.ack_latency_ms.p99) ms",
     (if $r == "1" then "\(.receipts | n)" else "–" end), "\($em) MB", "\($ec) s", "\($lc) s", "\($sc) s", ($ll | tonumber | n)]
    | "| " + join(" | ") + " |"' "$dir/load.json")
  rows+=("$row")
  jq -r --arg v "$v" --arg ec "$emgd_cpu" --arg em "$emgd_mb" --arg lc "$load_cpu" --arg sc "$sink_cpu" '
    "  \($v): \(.acked) acked, \(.msgs_per_s | floor) msgs/s, ack p50 \(.ack_latency_ms.p50) ms p99 \(.ack_latency_ms.p99) ms, \(.receipts) receipts (\(.receipts_missing) missing); CPU emgd \($ec) s, emgload \($lc) s, emgsink \($sc) s; emgd peak RSS \($em) MB"' \
    "$dir/load.json"
done

cores=$(nproc)
{
  echo "# The reference test on this machine"
  echo
  echo "Command: \`$cmdline\` ($(date -u '+%Y-%m-%d %H:%M UTC'))."
  echo
  echo "Machine: $(bench_machine). emgload, emgd and emgsink all run on this machine and share"
  echo "its $cores cores, so the figures include the load generator's and the sink's CPU."
  echo
  echo "The test: emgload submits over UCP (op 51 with a receipt request; 10 connections, window"
  echo "100 each) to emgd's \`ucp-in\` (10 instances); emgd sends over SMPP through \`smpp-out\` (10"
  echo "instances, window 100) to emgsink, which answers every submit_sm and sends its receipt after a"
  echo "random 0-10 s; emgd routes each receipt back to emgload as op 53. 145-character texts, 13-digit"
  echo "addresses. Each variant runs on a fresh emgd and emgsink (bench/lib.sh's setup, as gateway.sh's);"
  if [ -n "$duration" ]; then
    echo "emgload sends for $duration s per variant."
  else
    echo "emgload sends $count messages per variant."
  fi
  if { [ -n "$duration" ] && [ "$duration" -lt 60 ]; } || { [ -z "$duration" ] && [ "$count" -lt 1000000 ]; }; then
    echo
    echo "**Short run**: below the 1,000,000 messages or 60 s that a steady figure needs."
  fi
  echo
  echo "| variant | persist | receipts | log level | messages acked | msgs/s | ack p50 | ack p99 | receipts back | emgd peak RSS | emgd CPU | emgload CPU | emgsink CPU | emgd log lines |"
  echo "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "msgs/s, ack p50 and p99 and the receipts are emgload's (\`--json\`): acked submits over the time"
  echo "from the first submit to the last ack; the run then waits (60 s at most) for every receipt."
  echo "emgd peak RSS is VmHWM from /proc/PID/status; CPU is user + system seconds of the whole process"
  echo "(/proc/PID/stat for emgd and emgsink, read once the load has ended; bash's \`times\` around"
  echo "emgload), the wait for the last receipts included. emgd log lines: the lines of its log file."
  echo
  echo "![msgs/s over time, one line per variant](reference-throughput.svg)"
  echo
  echo "The chart's msgs/s are emgsink's submit counter (the messages emgd sent out) differenced"
  echo "between its once-a-second status lines, from emgload's start to its last ack."
} > "$out/reference-results.md"

plot=()
for ((i = 0; i < ${#plot_series[@]}; i += 2)); do
  plot+=("'${plot_series[i]}' using 1:2 with linespoints pointsize 0.5 title '${plot_series[i + 1]}'")
done
gnuplot <<GNUPLOT
set terminal svg size 900,500 dynamic font 'sans,12' background '#ffffff'
set output '$out/reference-throughput.svg'
set title "emgload (UCP) -> emgd -> emgsink (SMPP), receipts after 0-10 s: msgs/s each second"
set xlabel 'seconds since emgload started'
set ylabel 'msgs/s'
set xrange [0:*]
set yrange [0:*]
set format y '%.0f'
set grid
set key below
plot $(IFS=,; echo "${plot[*]}")
GNUPLOT
echo "reference.sh: wrote $out/reference-results.md and $out/reference-throughput.svg"
