#!/usr/bin/env bash
# dblog.sh - the message log writer's throughput against a real PostgreSQL:
# starts a throw-away cluster (tests/integration/pg_lib.sh, the server's
# default settings: fsync and synchronous_commit on), runs dblog_bench and
# prints its figures.
#
# Usage: bench/dblog.sh BUILD_DIR [dblog_bench options...]
#   e.g. bench/dblog.sh build --messages 1000000 --threads 2
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

BIN=$(cd "${1:?usage: bench/dblog.sh BUILD_DIR [dblog_bench options...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/pg_lib.sh"

pg_start "shared_buffers = '256MB'" "max_wal_size = '2GB'"
echo "PostgreSQL $(pg_psql -c 'SHOW server_version'), fsync $(pg_psql -c 'SHOW fsync'), $(nproc) cores"
"$BIN/dblog_bench" --url "$PG_URL" --spill-dir "$TMP" "$@"
