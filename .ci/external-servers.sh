# Starts a stock Debian PostgreSQL cluster and a redis-server on free loopback ports, as the
# "external" servers of CI's second pass. Sourced by .ci/run.
start_external_servers() {
  local pgbin port rport
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  EXT_DIR=$(mktemp -d /tmp/vigil-ext-XXXXXX)
  chmod 755 "$EXT_DIR"
  id -u postgres >/dev/null 2>&1 || useradd -r -m postgres
  chown postgres "$EXT_DIR"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$EXT_DIR/pg" && chown postgres "$EXT_DIR/pg"
  echo "ci-external-password" > "$EXT_DIR/pwfile" && chown postgres "$EXT_DIR/pwfile"
  su postgres -s /bin/sh -c "$pgbin/initdb -D $EXT_DIR/pg -U vigil --pwfile=$EXT_DIR/pwfile -A scram-sha-256 >/dev/null"
  su postgres -s /bin/sh -c "$pgbin/pg_ctl -D $EXT_DIR/pg -o '-p $port -k $EXT_DIR -c listen_addresses=127.0.0.1 -c max_connections=300' -l $EXT_DIR/pg.log -w start >/dev/null"
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$EXT_DIR/redis.pid" --dir "$EXT_DIR" >/dev/null
  export EXTERNAL_DATABASE_URL="postgres://vigil:ci-external-password@127.0.0.1:$port/postgres"
  export EXTERNAL_REDIS_URL="redis://127.0.0.1:$rport"
  export EXT_PGBIN="$pgbin"
}

stop_external_servers() {
  [[ -n "${EXT_DIR:-}" ]] || return 0
  su postgres -s /bin/sh -c "$EXT_PGBIN/pg_ctl -D $EXT_DIR/pg -m fast -w stop >/dev/null" || true
  [[ -f "$EXT_DIR/redis.pid" ]] && kill "$(cat "$EXT_DIR/redis.pid")" 2>/dev/null || true
  rm -rf "$EXT_DIR"
}
