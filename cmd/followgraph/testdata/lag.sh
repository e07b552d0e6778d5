#!/usr/bin/env bash
# lag.sh [RATE SECONDS]: end-to-end lag, write acknowledged → row in
# PostgreSQL, in the production topology on loopback: serve on Redis
# (a fresh key prefix), the external NATS (a fresh stream) and PostgreSQL
# (a fresh database), driven by `followgraph bench --mix writes` at RATE
# writes/s (default 5000) for SECONDS (default 30). The lag of each event
# is the persister's histogram followgraph_persister_event_lag_seconds
# (commit time − the write's time); printed: events, and the bucket bound
# under which 50% and 99% of them fall, read from /metrics after the
# backlog drained. Needs the servers of .ci/run; cleans up after itself.
set -euo pipefail
rate=${1:-5000} secs=${2:-30}
redis=${FOLLOWGRAPH_TEST_REDIS:-redis://127.0.0.1:6379}
nats=${FOLLOWGRAPH_TEST_NATS:-nats://127.0.0.1:4222}
pg=${FOLLOWGRAPH_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}
tag=$(date +%s%N)
db=fglag_$tag prefix=fglag-$tag stream=FGLAG_$tag addr=127.0.0.1:18098
bin=$(mktemp -d)/followgraph
(cd "$(dirname "$0")/.." && go build -o "$bin" .)
psql "$pg" -qc "CREATE DATABASE $db"
data=$(mktemp -d)
"$bin" serve --addr "$addr" --data "$data" --redis "$redis" --redis-prefix "$prefix" \
	--nats "$nats" --nats-stream "$stream" --db "${pg%/*}/$db" ${FOLLOWGRAPH_LAG_FLAGS:-} >"$data/log" 2>&1 &
srv=$!
cleanup() {
	kill $srv 2>/dev/null; wait $srv 2>/dev/null || true
	psql "$pg" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
	redis-cli -u "$redis" --scan --pattern "$prefix*" | xargs -r -n 1000 redis-cli -u "$redis" UNLINK >/dev/null
	rm -rf "$data" "$(dirname "$bin")"
}
trap cleanup EXIT
until curl -sf "http://$addr/readyz" >/dev/null; do sleep 0.1; done
"$bin" bench --url "http://$addr" --mix writes --concurrency 64 --rate "$rate" --duration "${secs}s"
curl -s "http://$addr/metrics" | grep -E "^followgraph_persister_(batch_events_(sum|count)|pending|lag_seconds|token)|^followgraph_relay" >&2
until [ "$(curl -s "http://$addr/metrics" | awk '$1 == "followgraph_persister_pending_events" {print $2}')" = 0 ]; do sleep 0.2; done
curl -s "http://$addr/metrics" | awk '
	/^followgraph_persister_event_lag_seconds_bucket/ {
		match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); n++; les[n] = le; cum[n] = $2 }
	/^followgraph_persister_event_lag_seconds_count/ { total = $2 }
	END {
		for (i = 1; i <= n; i++) { if (!p50 && cum[i] >= 0.5 * total) p50 = les[i]; if (!p99 && cum[i] >= 0.99 * total) p99 = les[i] }
		printf "events %d: lag p50 <= %s s, p99 <= %s s\n", total, p50, p99 }'
# NATS streams of earlier runs are not removed here: the stream keeps
# nothing once persisted (work-queue retention).
