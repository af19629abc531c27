#!/usr/bin/env bash
# db.sh - server/db/ against a real PostgreSQL: starts a throw-away cluster
# (pg_lib.sh) and runs the emg_db_test program on it, which stops and starts
# the cluster itself for its outage test.
# Usage: db.sh BUILD_DIR
# SPDX-License-Identifier: Apache-2.0
BIN=$(cd "${1:?usage: db.sh BUILD_DIR}" && pwd)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pg_lib.sh"

# fsync off: these tests stop the server cleanly, never crash it.
pg_start "fsync = off"
export EMG_TEST_PGURL=$PG_URL EMG_TEST_PG_STOP="$PG_STOP_CMD >/dev/null" \
  EMG_TEST_PG_START="$PG_START_CMD >/dev/null" EMG_TEST_TMP=$TMP
check "db module against PostgreSQL" "$BIN/tests/emg_db_test"
finish
