#!/usr/bin/env bash
# redis_reads_ab.sh OLD NEW EDGES ROUNDS: the closed-loop read rate of two
# binaries serving the same graph from the Redis of $REDIS, in turn. OLD
# imports a generated graph of EDGES edges plus a user (9000000000) with 2M
# followers into that Redis under a prefix of its own (deleted at the end);
# then, ROUNDS times, each binary serves it (`serve --redis`), gets 5 s of
# `bench --mix reads` to warm up and 10 s measured. Prints each run's
# reads/s, p50 and p99 (ms), then new/old per round.
set -euo pipefail
source "$(dirname "$0")/celebrity.sh"
old=$1 new=$2 edges=$3 rounds=$4
: "${REDIS:?set REDIS to a Redis URL}"
port=18094 prefix="readsab$$"
work=$(mktemp -d)
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	unlink_prefix "$prefix"
	rm -rf "$work"
}
trap cleanup EXIT
celebrity_graph "$old" "$edges" "$work" --redis "$REDIS" --redis-prefix "$prefix"
url="http://127.0.0.1:$port"
for round in $(seq 1 "$rounds"); do
	for which in old new; do
		bin=$old
		[[ $which == new ]] && bin=$new
		"$bin" serve --data "$work/d" --addr "127.0.0.1:$port" --redis "$REDIS" --redis-prefix "$prefix" >"$work/serve.log" 2>&1 &
		pid=$!
		until curl -sf "$url/readyz" >/dev/null; do sleep 0.2; done
		"$bin" bench --url "$url" --mix reads --duration 5s --seed 9 --json >/dev/null
		"$bin" bench --url "$url" --mix reads --duration 10s --seed 9 --json >"$work/$which.$round.json"
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
if t["non_2xx"] or t["errors"]:
    sys.exit("bench: %d non-2xx answers and %d errors" % (t["non_2xx"], t["errors"]))
print("round %s %s: %.0f reads/s, p50 %.2f ms, p99 %.2f ms" % (sys.argv[2], sys.argv[3], t["per_second"], t["p50_ms"], t["p99_ms"]))' "$work/$which.$round.json" "$round" "$which"
	done
	python3 -c '
import json, sys
r = [json.load(open(f))["total"]["per_second"] for f in sys.argv[1:]]
print("round %s: new/old %.2f" % (sys.argv[1].split(".")[-2], r[1] / r[0]))' "$work/old.$round.json" "$work/new.$round.json"
done
