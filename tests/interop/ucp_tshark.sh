#!/usr/bin/env bash
# ucp_tshark.sh - cross-checks the UCP frames our encoder writes against Wireshark's UCP dissector.
#
# Usage: ucp_tshark.sh path/to/emg_ucp_cli
#
# emg_ucp_cli writes a set of frames (login, alert, submits, MO, notifications,
# call input, provisioning, and their results) as a hex dump; text2pcap wraps
# each in a TCP segment and tshark dissects them as UCP. A frame passes when
# tshark finds its UCP PDU, reports no malformed packet, no expert info and no
# invalid checksum, and decodes the key fields (TRN, OT, AdC, OAdC, Dst, Rsn,
# EC, AMsg text, XSer, ...) to what emg_ucp_cli says it meant to write.
# Before that, a copy with one spoiled checksum must be caught, so the check
# cannot pass by noticing nothing.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

cli=${1:?usage: ucp_tshark.sh path/to/emg_ucp_cli}
port=5000

for tool in tshark text2pcap; do
  if ! command -v "$tool" >/dev/null; then
    echo "ucp_tshark: $tool not found (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

read -r -a names <<<"$("$cli" fields)"
fields=()
for f in "${names[@]}"; do
  fields+=(-e "$f")
done

# check DUMP: dissects the hex dump DUMP and compares it frame by frame with
# the expectation; prints one line per failed frame, then "<passed> <failed>".
check() {
  text2pcap -q -T "40000,$port" "$1" "$1.pcap" >/dev/null 2>&1
  tshark -r "$1.pcap" -d "tcp.port==$port,ucp" -T fields -E separator=/t \
    -e frame.number -e _ws.col.Info -e _ws.expert.message -e _ws.malformed "${fields[@]}" \
    2>/dev/null >"$1.got"
  tshark -r "$1.pcap" -d "tcp.port==$port,ucp" -V 2>/dev/null >"$1.verbose"
  awk -F'\t' -v verbose_bad="$(grep -c -E 'Malformed|\[Expert Info' "$1.verbose" || true)" '
    NR == FNR { want[FNR] = $0; n = FNR; next }
    {
      rest = $0
      for (i = 0; i < 4; i++)
        rest = substr(rest, index(rest, "\t") + 1)
      why = ""
      if ($5 == "") why = "no UCP dissection"
      else if ($2 ~ /checksum invalid/) why = "checksum invalid"
      else if ($3 != "") why = "expert info: " $3
      else if ($4 != "") why = "malformed"
      else if (rest != want[FNR]) {
        w = want[FNR]; g = rest
        gsub(/\t/, "|", w); gsub(/\t/, "|", g)
        why = "fields differ\n    want " w "\n    got  " g
      }
      if (why != "") { print "frame " FNR ": " why; failed++ } else passed++
    }
    END {
      if (FNR != n) { print "tshark saw " FNR " packets, " n " frames were written"; failed++ }
      if (verbose_bad > 0) { print "tshark -V shows Malformed or Expert Info"; failed++ }
      print passed + 0, failed + 0
    }' "$tmp/expect" "$1.got"
}

"$cli" expect >"$tmp/expect"

# The check must see a spoiled checksum.
"$cli" frames --bad-checksum >"$tmp/bad"
check "$tmp/bad" >"$tmp/bad.result"
if ! grep -q '^frame 1: checksum invalid$' "$tmp/bad.result" || [ "$(tail -n 1 "$tmp/bad.result")" != "$(($(wc -l <"$tmp/expect") - 1)) 1" ]; then
  echo "ucp_tshark: a spoiled checksum went unnoticed; the cross-check itself is broken:" >&2
  cat "$tmp/bad.result" >&2
  exit 1
fi

"$cli" frames >"$tmp/good"
check "$tmp/good" >"$tmp/good.result"
read -r passed failed < <(tail -n 1 "$tmp/good.result")
head -n -1 "$tmp/good.result"
echo "tshark UCP cross-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
