#!/usr/bin/env bash
# persist_ratio.sh [PAIRS] [COUNT] - persist on against persist off, the way
# the persistence target is judged: PAIRS (default 8) pairs of
# bench/gateway.sh COUNT (default 1,000,000), the two runs of a pair back to
# back and their order swapped from one pair to the next, so that a machine
# getting faster or slower during the series weighs on both sides alike.
# A COUNT of 1,000,000 is about 5 s of load here, over before the receipts
# (0-10 s late) come back as fast as messages go out; 12,000,000 (60-80 s)
# measures the steady state.
# Prints one markdown row per pair, then the mean and the median of the
# ratios. Any other gateway.sh setting (RECEIPTS, WINDOW, ...) passes through.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-8}
count=${2:-1000000}
bench/gateway.sh 1000 >/dev/null   # builds once; the runs below use the binaries as they are

field() { sed -n "s/^throughput *\([0-9]*\) msgs.*/\1/p" "$1"; }
ack() { sed -n 's/^ack latency *p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$1"; }
cpu() { sed -n 's/^emgd *\([0-9.]*\) s CPU.*/\1/p' "$1"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| pair | persist off msgs/s | persist on msgs/s | on / off | ack p50 off / on | ack p99 off / on | emgd CPU off / on |"
echo "| ---: | ---: | ---: | ---: | --- | --- | --- |"
ratios=()
for ((i = 1; i <= pairs; i++)); do
  order=(false true)
  ((i % 2 == 0)) && order=(true false)
  for p in "${order[@]}"; do
    NO_BUILD=1 PERSIST=$p bench/gateway.sh "$count" >"$tmp/$p.txt" 2>&1 \
      || { cat "$tmp/$p.txt" >&2; exit 1; }
    grep -q "(0 missing)" "$tmp/$p.txt" || { echo "persist_ratio: receipts missing with persist $p" >&2; cat "$tmp/$p.txt" >&2; exit 1; }
  done
  off=$(field "$tmp/false.txt") on=$(field "$tmp/true.txt")
  read -r p50_off p99_off < <(ack "$tmp/false.txt")
  read -r p50_on p99_on < <(ack "$tmp/true.txt")
  ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.1f", 100 * a / b }')
  ratios+=("$ratio")
  printf '| %d | %s | %s | %s %% | %s / %s ms | %s / %s ms | %s / %s s |\n' "$i" "$off" "$on" "$ratio" \
    "$p50_off" "$p50_on" "$p99_off" "$p99_on" "$(cpu "$tmp/false.txt")" "$(cpu "$tmp/true.txt")"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{ r[NR] = $1; s += $1 }
  END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        printf "\nratio over %d pairs: mean %.1f %%, median %.1f %%, lowest %.1f %%, highest %.1f %%\n", NR, s / NR, m, r[1], r[NR] }'
