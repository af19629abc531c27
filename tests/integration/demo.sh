#!/usr/bin/env bash
# demo.sh BUILD - scripts/run-demo.sh says whether the demo ran well: exit 0
# and "demo OK" when every message was acked with its receipt; non-zero and
# "demo FAILED" when the SMSC's port is taken by something that is not an
# SMSC (no receipt can come back).
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for port in 3000 2775; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then skip "port $port is taken"; fi
done

rc=0; "$SRC/scripts/run-demo.sh" 2000 > "$TMP/good.out" 2>&1 || rc=$?
check "the demo ran well: exit status $rc" [ "$rc" = 0 ]
check "... and says so" grep -q "demo OK: 2000 messages acked" "$TMP/good.out"

# Port 2775 held by a listener that never answers: emgsink cannot start,
# emgd's SMPP client binds nowhere, no receipt comes back.
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(Listen => 5, LocalAddr => "127.0.0.1", LocalPort => 2775, ReuseAddr => 1) or die; sleep 120' &
holder=$!
STARTED_PIDS+=("$holder")
wait_port 2775
rc=0; timeout 300 "$SRC/scripts/run-demo.sh" 200 > "$TMP/bad.out" 2>&1 || rc=$?
kill "$holder" 2>/dev/null || true
check "the demo failed: exit status $rc" [ "$rc" != 0 ]
check "... and says so" grep -q "demo FAILED: emgload exited" "$TMP/bad.out"
finish
