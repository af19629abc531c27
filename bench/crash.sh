#!/usr/bin/env bash
# crash.sh [KILLS] [COUNT] - the crash test at a bigger size: emgd with
# persist on is SIGKILLed KILLS times (default 10) while emgload sends COUNT
# messages (default 200000) with receipts; every acked message must reach
# the SMSC and its receipt come back. Prints the checks and the duplicates.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target emgd emgload emgsink >/dev/null
exec bash tests/integration/crash.sh "$PWD/build" "${1:-10}" "${2:-200000}"
