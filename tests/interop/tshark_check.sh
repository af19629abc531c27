#!/usr/bin/env bash
# tshark_check.sh - cross-checks the frames our encoder writes against
# Wireshark's dissector for the protocol.
#
# Usage: tshark_check.sh PROTO CLI SPOIL WHY
#   PROTO  the dissector's name (ucp, cimd)
#   CLI    our encoder as a tool (emg_ucp_cli, emg_cimd2_cli): `CLI frames
#          [SPOIL]` writes its frames as a hex dump, `CLI expect` the fields
#          tshark must decode for each, `CLI fields` their names
#   SPOIL  the option that spoils the first frame (a checksum, a field)
#   WHY    what the check must then say of that frame ("checksum invalid",
#          "fields differ")
#
# text2pcap wraps each frame in a TCP segment and tshark dissects them as
# PROTO. A frame passes when tshark finds its PDU, reports no malformed
# packet, no expert info and no invalid checksum, and decodes the key fields
# to what the tool says it meant to write. Before that, the spoiled copy
# must be caught, so the check cannot pass by noticing nothing.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

proto=${1:?usage: tshark_check.sh PROTO CLI SPOIL WHY}
cli=${2:?usage: tshark_check.sh PROTO CLI SPOIL WHY}
spoil=${3:?usage: tshark_check.sh PROTO CLI SPOIL WHY}
why=${4:?usage: tshark_check.sh PROTO CLI SPOIL WHY}
port=5000

for tool in tshark text2pcap; do
  if ! command -v "$tool" >/dev/null; then
    echo "tshark_check: $tool not found (scripts/install-deps.sh installs it)" >&2
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
  tshark -r "$1.pcap" -d "tcp.port==$port,$proto" -T fields -E separator=/t \
    -e frame.number -e _ws.col.Info -e _ws.expert.message -e _ws.malformed "${fields[@]}" \
    2>/dev/null >"$1.got"
  tshark -r "$1.pcap" -d "tcp.port==$port,$proto" -V 2>/dev/null >"$1.verbose"
  awk -F'\t' -v proto="$proto" -v verbose_bad="$(grep -c -E 'Malformed|\[Expert Info' "$1.verbose" || true)" '
    NR == FNR { want[FNR] = $0; n = FNR; next }
    {
      rest = $0
      for (i = 0; i < 4; i++)
        rest = substr(rest, index(rest, "\t") + 1)
      why = ""
      if ($5 == "") why = "no " proto " dissection"
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

# The check must see the spoiled frame.
"$cli" frames "$spoil" >"$tmp/bad"
check "$tmp/bad" >"$tmp/bad.result"
if ! grep -q "^frame 1: $why" "$tmp/bad.result" || [ "$(tail -n 1 "$tmp/bad.result")" != "$(($(wc -l <"$tmp/expect") - 1)) 1" ]; then
  echo "tshark_check: a spoiled frame went unnoticed; the cross-check itself is broken:" >&2
  cat "$tmp/bad.result" >&2
  exit 1
fi

"$cli" frames >"$tmp/good"
check "$tmp/good" >"$tmp/good.result"
read -r passed failed < <(tail -n 1 "$tmp/good.result")
head -n -1 "$tmp/good.result"
echo "tshark $proto cross-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
