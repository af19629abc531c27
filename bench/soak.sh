#!/usr/bin/env bash
# soak.sh - a long run of the reference test's path (emgload UCP in ->
# emgd, persist on -> emgsink SMPP out, receipts routed back) to catch
# memory that grows with the number of messages: emgd's RSS is sampled
# every second, and the run passes when it grew by at most 5 % over the
# second half of the run. Receipts come after a short delay (0-1000 ms by
# default) so that the growth measured is not the DLR table filling up
# with receipts still to come. The setup is bench/lib.sh's.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/soak.sh [--count N] [--rate MPS] [--dlr-delay MIN-MAX] [--max-growth PCT] [--out DIR]
  --count N            messages (default 10000000)
  --rate MPS           submits per second (default 60000): a steady state the whole path,
                       receipts included, keeps up with on this machine. Flat out, the sink
                       sends receipts more slowly than messages come in, so the open DLR
                       entries, and the memory that holds them, grow for as long as it runs
  --dlr-delay MIN-MAX  receipt delay at the sink in ms (default 0-1000)
  --max-growth PCT     the pass mark (default 5)
  --out DIR            where soak-rss.tsv (the samples) and soak-rss.svg (with gnuplot)
                       go (default doc)
Environment: NO_BUILD=1 uses the binaries in build/ as they are.
The run is emgload's, from its start until its last receipt is in (10 connections,
window 100). The second half is its later half in time. Growth = the rise of a
least-squares line through the second half's samples over that half, against its
first sample: the trend, which one busy second (the drain at the end of the load)
does not swing. The highest sample against the first is printed beside it.
Exit status: 0 passed, 1 failed (growth over the mark; or messages or receipts lost,
or emgsink's counts short of emgload's: then the run stops with a message on stderr
before any figure, as a run that lost work says nothing good about its memory),
2 usage or a run too short to judge (fewer than 2 samples in the second half).
Run time: the load (about 170 s for 10,000,000 at 60,000 msgs/s) plus about 3 s.
USAGE
}

count=10000000
rate=60000
dlr_delay=0-1000
max_growth=5
out=doc
while [ $# -gt 0 ]; do
  case $1 in
    --count) count=${2:?--count needs a number}; shift 2 ;;
    --rate) rate=${2:?--rate needs a number}; shift 2 ;;
    --dlr-delay) dlr_delay=${2:?--dlr-delay needs MIN-MAX}; shift 2 ;;
    --max-growth) max_growth=${2:?--max-growth needs a percentage}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ $count =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: --count must be a positive number" >&2; exit 2; }
[[ $dlr_delay =~ ^[0-9]+-[0-9]+$ ]] || { echo "soak.sh: --dlr-delay must be MIN-MAX in ms" >&2; exit 2; }
[[ $max_growth =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "soak.sh: --max-growth must be a percentage" >&2; exit 2; }
case $out in /*) ;; *) out=$PWD/$out ;; esac

# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_build
mkdir -p "$out"

dir=$bench_tmp/soak
bench_start_sink "$dir" "$dlr_delay"
bench_start_emgd "$dir" persist=true
bench_sample_rss "$emgd_pid" "$dir/rss.raw" &
sampler_pid=$!
bench_pids+=("$sampler_pid")
echo "soak.sh: $count messages, receipts after $dlr_delay ms, persist on; emgd's RSS every second..."
bench_load "$dir" port="$ucp_port" count="$count" rate="$rate" wait_dlr=60
bench_stop "$sampler_pid" 2
emgd_cpu=$(cpu_seconds "$emgd_pid")
emgd_mb=$(peak_rss_mb "$emgd_pid")
bench_stop "$emgd_pid"
bench_stop "$sink_pid"
bench_check_sink "$dir"

# The samples as seconds since emgload started (negative: emgd idle before
# the load) and RSS in kB.
{
  echo "# emgd's VmRSS every second during bench/soak.sh --count $count (seconds since emgload started, kB)"
  awk -v t0="$load_start" '{ printf "%.1f %d\n", $1 - t0, $2 }' "$dir/rss.raw"
} > "$out/soak-rss.tsv"

duration=$(awk -v a="$load_start" -v b="$load_end" 'BEGIN { printf "%.1f", b - a }')
# first and max of the second half, and the least-squares slope through it
# (kB/s) turned into a growth over the half's length.
read -r samples first max fit < <(awk -v d="$duration" '
  !/^#/ && $1 >= d / 2 && $1 <= d {
    n++; if (n == 1) first = $2; if ($2 > max) max = $2
    sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2
  }
  END {
    slope = (n > 1 && n * sxx - sx * sx > 0) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
    fit = (n > 0 && first > 0) ? 100 * slope * (d / 2) / first : 0
    printf "%d %d %d %.2f\n", n, first, max, fit
  }' "$out/soak-rss.tsv")
growth=$(awk -v f="$first" -v m="$max" 'BEGIN { printf "%.2f", (f > 0) ? 100 * (m - f) / f : 0 }')

jq -r '"messages      \(.acked) acked of \(.sent) sent, \(.refused) refused, \(.unsent) unsent, \(.receipts) receipts (\(.receipts_missing) missing)",
  "throughput    \(.msgs_per_s | floor) msgs/s, ack p50 \(.ack_latency_ms.p50) ms, p99 \(.ack_latency_ms.p99) ms"' "$dir/load.json"
echo "emgd          $emgd_cpu s CPU, peak RSS $emgd_mb MB; emgload $load_cpu s CPU"
echo "run           $duration s, $(grep -vc '^#' "$out/soak-rss.tsv") RSS samples, $samples in the second half"
echo "second half   RSS $((first / 1024)) MB at its start, $((max / 1024)) MB at most ($growth %); growth by the fitted line $fit % (mark $max_growth %)"

verdict=passed
status=0
if [ "$samples" -lt 2 ]; then
  verdict="too short to judge"
  status=2
elif awk -v g="$fit" -v m="$max_growth" 'BEGIN { exit !(g > m) }'; then
  verdict=failed
  status=1
fi

if command -v gnuplot >/dev/null; then
  gnuplot <<GNUPLOT
set terminal svg size 900,500 dynamic font 'sans,12' background '#ffffff'
set output '$out/soak-rss.svg'
set title "emgd RSS during bench/soak.sh ($count messages): second half growth $fit %, $verdict"
set xlabel 'seconds since emgload started'
set ylabel 'RSS (MB)'
set yrange [0:*]
set grid
set key below
set arrow from $duration / 2.0, graph 0 to $duration / 2.0, graph 1 nohead dashtype 2
set arrow from $duration, graph 0 to $duration, graph 1 nohead dashtype 2
plot '$out/soak-rss.tsv' using 1:(\$2 / 1024) with linespoints pointsize 0.5 title 'emgd VmRSS (dashed: the run half-way and its end)'
GNUPLOT
  echo "soak.sh: wrote $out/soak-rss.tsv and $out/soak-rss.svg"
else
  echo "soak.sh: wrote $out/soak-rss.tsv (no gnuplot for the chart: Debian's gnuplot-nox)"
fi
echo "soak.sh: $verdict"
exit "$status"
