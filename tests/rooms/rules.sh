#!/usr/bin/env bash
# The rooms' include rules (cmake/check_rooms.cmake) hold on the tree, and
# the check fails, naming file and line, on each kind of breach planted in a
# copy: an include the wrong way, an include of another room's inner
# header, an include circle, an include by path, and a file over 1,000
# lines.
# tests/rooms/rules.sh SOURCE_DIR "RULES" (RULES as server/CMakeLists.txt passes them)
# SPDX-License-Identifier: Apache-2.0
set -u
src=$1 rules=$2
check=$src/cmake/check_rooms.cmake
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

run_check() {   # DIR -> the check's output; its status
  cmake -DSERVER="$1" "-DRULES=$rules" -P "$check" >"$work/out" 2>&1
}

expect_refused() {   # NAME EXPECTED-TEXT
  if run_check "$work/server"; then
    echo "not ok - $1: the check passed"
    failed=1
  elif ! grep -qF -- "$2" "$work/out"; then
    echo "not ok - $1: refused, but without \"$2\":"
    sed 's/^/    /' "$work/out"
    failed=1
  else
    echo "ok - $1: $(grep -F -- "$2" "$work/out" | sed 's/^ *//' | head -1)"
  fi
  rm -rf "$work/server"
  cp -r "$src/server" "$work/server"
}

if run_check "$src/server"; then
  echo "ok - the tree keeps the rules"
else
  echo "not ok - the tree breaks the rules:"
  sed 's/^/    /' "$work/out"
  failed=1
fi
cp -r "$src/server" "$work/server"

# A room low in the house reaching up: the DLR table including the endpoints.
sed -i '0,/^#include "dlr.h"/s//#include "dlr.h"\n#include "endpoint.h"/' "$work/server/tables/dlr.c"
expect_refused "wrong-way include" "server/tables/dlr.c:35: includes endpoint.h: room tables does not use room endpoint"

# The endpoints reaching past the journal's public header.
sed -i '0,/^#include "connector_internal.h"/s//#include "connector_internal.h"\n#include "spool_internal.h"/' "$work/server/endpoint/connector.c"
expect_refused "inner header of another room" "server/endpoint/connector.c:22: includes spool_internal.h, an inner header of room journal (outside it, include journal.h)"

# Two headers of one room including each other.
sed -i '0,/^#include "msg.h"/s//#include "msg.h"\n#include "schedule.h"/' "$work/server/tables/queue.h"
expect_refused "include circle" "an include circle"

# A file by path, around the rules.
sed -i '0,/^#include "dlr.h"/s//#include "dlr.h"\n#include "..\/endpoint\/connector.h"/' "$work/server/tables/dlr.c"
expect_refused "include by path" "by a path"

# A file grown past 1,000 lines.
for i in $(seq 1 1001); do echo "/* line $i */"; done >> "$work/server/tables/dlr.c"
expect_refused "a file over 1,000 lines" "server/tables/dlr.c: "

exit $failed
