#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster: initdb in a temporary directory, the server
# on a Unix socket there (no TCP port), OSD_TEST_POSTGRES_URL exported for the command, and the
# cluster stopped and removed on exit. initdb refuses to run as root, so as root the cluster
# runs as the `postgres` user (created by Debian's postgresql package).
#   scripts/with-postgres.sh swift test
#   OSD_PG_DURABLE=1 scripts/with-postgres.sh sh -c 'swift run -c release osd-server-benchmarks --postgres "$OSD_TEST_POSTGRES_URL"'

set -euo pipefail

bin=""
if command -v initdb >/dev/null 2>&1; then bin="$(dirname "$(command -v initdb)")"; fi
if [ -z "$bin" ]; then
    bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
fi
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "with-postgres: PostgreSQL is not installed (apt-get install -y postgresql)" >&2
    exit 1
fi

dir="$(mktemp -d /tmp/osd-pg.XXXXXX)"
chmod 755 "$dir"
as_owner=()
owner="$(id -un)"
if [ "$(id -u)" = "0" ]; then
    owner=postgres
    chown postgres "$dir"
    as_owner=(runuser -u postgres --)
fi

cleanup() {
    "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

"${as_owner[@]}" "$bin/initdb" -D "$dir/data" -U "$owner" --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
# Tests need no durability; OSD_PG_DURABLE=1 keeps PostgreSQL's defaults (fsync, synchronous
# commit), as for the benchmark.
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
if [ "${OSD_PG_DURABLE:-0}" = "1" ]; then durability=""; fi
"${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=300 $durability" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }

export OSD_TEST_POSTGRES_URL="postgres://$owner@localhost/postgres?host=$dir"
echo "with-postgres: PostgreSQL ($("$bin/postgres" --version)) on $OSD_TEST_POSTGRES_URL" >&2
"$@"
