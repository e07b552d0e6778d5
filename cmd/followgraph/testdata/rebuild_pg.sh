#!/usr/bin/env bash
# rebuild_pg.sh [EDGES]: the rebuild target: Redis rebuilt from EDGES
# (default 10M) edges in PostgreSQL. Generates the graph (followgraph gen),
# imports it into a fresh PostgreSQL database (COPY), then times
# `followgraph rebuild` into a fresh Redis key prefix: reading the store
# (and an empty log), loading it in memory, writing both sides into Redis.
# Prints the import and rebuild lines and the rebuild's wall time. Needs
# the servers of .ci/run; cleans up after itself.
set -euo pipefail
edges=${1:-10000000}
redis=${FOLLOWGRAPH_TEST_REDIS:-redis://127.0.0.1:6379}
pg=${FOLLOWGRAPH_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}
tag=$(date +%s%N)
db=fgrebuild_$tag prefix=fgrebuild-$tag
dir=$(mktemp -d)
bin=$dir/followgraph
(cd "$(dirname "$0")/.." && go build -o "$bin" .)
psql "$pg" -qc "CREATE DATABASE $db"
cleanup() {
	psql "$pg" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
	redis-cli -u "$redis" --scan --pattern "$prefix*" | xargs -r -n 1000 redis-cli -u "$redis" UNLINK >/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
"$bin" gen --edges "$edges" -o "$dir/edges.tsv"
"$bin" import --db "${pg%/*}/$db" "$dir/edges.tsv"
start=$(date +%s.%N)
"$bin" rebuild --db "${pg%/*}/$db" --data "$dir/data" --redis "$redis" --redis-prefix "$prefix"
echo "rebuild wall time: $(echo "$(date +%s.%N) - $start" | bc) s"
