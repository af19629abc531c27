# pg_lib.sh - a throw-away PostgreSQL cluster for the tests and benchmarks
# that need a real database: initdb in a temporary directory, the server on
# a free port of 127.0.0.1 (and a socket in that directory only), trust
# authentication, removed again when the script exits.
#
# Source it after lib.sh (it uses free_port and chains lib.sh's cleanup).
#   pg_start [postgres -c options...]  starts the cluster with a database "emg"
#                                      owned by the user "emg"; sets PG_URL
#                                      (postgresql://emg@127.0.0.1:PORT/emg),
#                                      PG_PORT, PG_DIR, PG_STOP_CMD, PG_START_CMD
#   pg_server_stop / pg_server_start   stop (fast) and start the same cluster
#                                      again, on the same port
#   pg_psql SQL...                     runs psql -Atq against the database
#   pg_stop                            stops the cluster and removes its directory
#                                      (also done on exit)
#
# PostgreSQL refuses to run as root: run as root, the cluster belongs to the
# `postgres` system user (created when missing) and every server command runs
# through `runuser -u postgres --`. The binaries are those of the newest
# version under /usr/lib/postgresql (Debian's layout).
# SPDX-License-Identifier: Apache-2.0

PG_DIR=""
PG_PORT=""
PG_URL=""
PG_RUN=()

pg_bin_dir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] || { echo "pg_lib: no PostgreSQL under /usr/lib/postgresql (install postgresql)" >&2; return 1; }
  echo "$dir"
}

pg_start() {
  PG_BIN=$(pg_bin_dir)
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/emg-pg.XXXXXX")
  PG_RUN=()
  if [ "$(id -u)" -eq 0 ]; then
    if ! id -u postgres >/dev/null 2>&1; then
      useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    fi
    chown postgres "$PG_DIR"
    chmod 700 "$PG_DIR"
    PG_RUN=(runuser -u postgres --)
  fi
  "${PG_RUN[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U emg -A trust -E UTF8 --locale=C.UTF-8 \
    --no-sync >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; return 1; }
  PG_PORT=$(free_port)
  # The server's options go into its own configuration, so that a plain
  # pg_ctl start (PG_START_CMD) brings back the same cluster.
  {
    echo "listen_addresses = '127.0.0.1'"
    echo "port = $PG_PORT"
    echo "unix_socket_directories = '$PG_DIR'"
    echo "max_connections = 50"
    local opt
    for opt in "$@"; do
      echo "$opt"
    done
  } | "${PG_RUN[@]}" tee -a "$PG_DIR/data/postgresql.conf" >/dev/null
  PG_START_CMD="${PG_RUN[*]} $PG_BIN/pg_ctl -D $PG_DIR/data -l $PG_DIR/server.log -w -t 60 start"
  PG_STOP_CMD="${PG_RUN[*]} $PG_BIN/pg_ctl -D $PG_DIR/data -w -t 60 -m fast stop"
  pg_server_start || return 1
  "${PG_RUN[@]}" "$PG_BIN/createdb" -h "$PG_DIR" -p "$PG_PORT" -U emg -O emg emg || return 1
  PG_URL="postgresql://emg@127.0.0.1:$PG_PORT/emg"
  export PG_URL PG_PORT PG_DIR PG_START_CMD PG_STOP_CMD
}

pg_server_start() {
  $PG_START_CMD >/dev/null || { cat "$PG_DIR/server.log" >&2; return 1; }
}

pg_server_stop() {
  $PG_STOP_CMD >/dev/null
}

pg_psql() {
  "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 "$PG_URL" "$@"
}

pg_stop() {
  [ -n "$PG_DIR" ] || return 0
  if [ -f "$PG_DIR/data/postmaster.pid" ]; then
    $PG_STOP_CMD >/dev/null 2>&1 \
      || "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  if [ "${KEEP_TMP:-}" = 1 ]; then
    echo "database files kept in $PG_DIR"
  else
    rm -rf "$PG_DIR"
  fi
  PG_DIR=""
}

# lib.sh's cleanup kills what it started; the cluster goes first, then that.
if declare -F cleanup >/dev/null; then
  trap 'pg_stop; cleanup' EXIT
else
  trap pg_stop EXIT
fi
