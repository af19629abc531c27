#!/usr/bin/env bash
# ratio.sh VAR BASE OTHER [PAIRS] [COUNT] - bench/gateway.sh with VAR=OTHER
# against VAR=BASE, the way the targets given as a share are judged: PAIRS
# (default 8) pairs of gateway.sh COUNT (default 1,000,000), the two runs of
# a pair back to back and their order swapped from one pair to the next, so
# that a machine getting faster or slower during the series weighs on both
# sides alike. For example `bench/ratio.sh PERSIST false true` (persist on
# against off) or `PERSIST=true bench/ratio.sh TLS 0 1 4 2000000` (TLS on
# both sides against plain TCP, persist on).
# A COUNT of 1,000,000 is about 5 s of load here, over before the receipts
# (0-10 s late) come back as fast as messages go out; 12,000,000 (60-80 s)
# measures the steady state.
# Prints one markdown row per pair, then the mean and the median of the
# ratios. Any other gateway.sh setting (RECEIPTS, WINDOW, ...) passes through.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
var=$1 base=$2 other=$3
pairs=${4:-8}
count=${5:-1000000}
bench/gateway.sh 1000 >/dev/null   # builds once; the runs below use the binaries as they are

field() { sed -n "s/^throughput *\([0-9]*\) msgs.*/\1/p" "$1"; }
ack() { sed -n 's/^ack latency *p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$1"; }
cpu() { sed -n 's/^emgd *\([0-9.]*\) s CPU.*/\1/p' "$1"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
a="$var=$base" b="$var=$other"
echo "| pair | $a msgs/s | $b msgs/s | $b / $a | ack p50 $a / $b | ack p99 $a / $b | emgd CPU $a / $b |"
echo "| ---: | ---: | ---: | ---: | --- | --- | --- |"
ratios=()
for ((i = 1; i <= pairs; i++)); do
  order=("$base" "$other")
  ((i % 2 == 0)) && order=("$other" "$base")
  for v in "${order[@]}"; do
    env NO_BUILD=1 "$var=$v" bench/gateway.sh "$count" >"$tmp/$v.txt" 2>&1 \
      || { cat "$tmp/$v.txt" >&2; exit 1; }
    grep -q "(0 missing)" "$tmp/$v.txt" || { echo "ratio: receipts missing with $var=$v" >&2; cat "$tmp/$v.txt" >&2; exit 1; }
  done
  x=$(field "$tmp/$base.txt") y=$(field "$tmp/$other.txt")
  read -r p50_x p99_x < <(ack "$tmp/$base.txt")
  read -r p50_y p99_y < <(ack "$tmp/$other.txt")
  ratio=$(awk -v a="$y" -v b="$x" 'BEGIN { printf "%.1f", 100 * a / b }')
  ratios+=("$ratio")
  printf '| %d | %s | %s | %s %% | %s / %s ms | %s / %s ms | %s / %s s |\n' "$i" "$x" "$y" "$ratio" \
    "$p50_x" "$p50_y" "$p99_x" "$p99_y" "$(cpu "$tmp/$base.txt")" "$(cpu "$tmp/$other.txt")"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{ r[NR] = $1; s += $1 }
  END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        printf "\nratio over %d pairs: mean %.1f %%, median %.1f %%, lowest %.1f %%, highest %.1f %%\n", NR, s / NR, m, r[1], r[NR] }'
