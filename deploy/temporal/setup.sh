#!/usr/bin/env bash
# Sets up Temporal's two PostgreSQL databases with Temporal's own SQL tool (idempotent: creates what is
# missing, then applies the schema versions not applied yet). Run before the server starts, by
# `npm run cluster` (bin/cluster.ts) and by docker-compose.yml's temporal-setup service (the
# temporalio/admin-tools image). Environment: the temporal service's (POSTGRES_SEEDS, DB_PORT,
# POSTGRES_USER, POSTGRES_PWD, DBNAME, VISIBILITY_DBNAME); SQL_TOOL names the tool's binary.
set -euo pipefail
SQL_TOOL="${SQL_TOOL:-temporal-sql-tool}"

sql() {
  "$SQL_TOOL" --quiet --plugin postgres12 --endpoint "$POSTGRES_SEEDS" --port "${DB_PORT:-5432}" \
    --user "$POSTGRES_USER" --password "$POSTGRES_PWD" --database "$1" "${@:2}"
}

setup() {
  local db="$1" schema="$2"
  # Each step leaves what exists alone: create-database and setup-schema -v 0.0 (the version tables)
  # pass over an existing database; update-schema applies the versions after the recorded one, from
  # the schemas built into the tool.
  sql "$db" create-database
  sql "$db" setup-schema -v 0.0
  sql "$db" update-schema --schema-name "$schema"
}

setup "${DBNAME:-temporal}" postgresql/v12/temporal
setup "${VISIBILITY_DBNAME:-temporal_visibility}" postgresql/v12/visibility
