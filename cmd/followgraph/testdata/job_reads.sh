#!/usr/bin/env bash
# job_reads.sh BIN EDGES SECONDS PAIRS: the read latency of one server
# while account-state jobs run, beside the same without a job (the account
# states' target: reads p99 ≤ 5 ms at `bench --rate 10000` during the job
# of a user with 2M followers). BIN imports a generated graph of EDGES edges plus a user
# (9000000000) with 2M followers of its own, and serves it (the embedded
# default, --jobs-rate $JOBS_RATE, 0 by default: the jobs as fast as memgraph
# runs them; with REDIS set, a Redis URL, the graph is imported into that
# Redis under a prefix of its own, which serve then serves from, and
# deleted at the end). Then, PAIRS times, `bench --mix reads --rate $RATE`
# (10000 by default) for SECONDS with no job, and again for SECONDS while a loop deactivates the celebrity, waits for its
# job, makes it active again, waits, and so on. Prints each run's reads
# p50/p99/max, the jobs the loop finished during it, and the medians.
set -euo pipefail
source "$(dirname "$0")/celebrity.sh"
bin=$1 edges=$2 secs=$3 pairs=$4
port=18093
work=$(mktemp -d)
engine=()
if [[ -n ${REDIS:-} ]]; then
	engine=(--redis "$REDIS" --redis-prefix "jobreads$$")
fi
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	if [[ -n ${REDIS:-} ]]; then
		unlink_prefix "jobreads$$"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
celebrity_graph "$bin" "$edges" "$work" "${engine[@]}"
"$bin" serve --data "$work/d" --addr "127.0.0.1:$port" --jobs-rate "${JOBS_RATE:-0}" "${engine[@]}" >"$work/serve.log" 2>&1 &
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.2; done
url="http://127.0.0.1:$port"

# flip: deactivate and reactivate the celebrity until killed, counting the
# jobs it waited for in $work/jobs.
flip() {
	: >"$work/jobs"
	while true; do
		for st in deactivated active; do
			curl -sf -X PUT -d "{\"state\":\"$st\"}" "$url/v1/users/$celeb/state" >/dev/null
			# Polled each second: a curl started 20 times a second would
			# itself be a load on the two cores the reads share.
			until curl -sf "$url/v1/users/$celeb/state" | grep -q '"pending":0'; do sleep 1; done
			echo "$st" >>"$work/jobs"
		done
	done
}

run() { # run LABEL SEED: one bench of reads, printed
	"$bin" bench --url "$url" --mix reads --rate "${RATE:-10000}" --duration "${secs}s" --seed "$2" --json >"$work/b.json"
	python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
if t["non_2xx"] or t["errors"]:
    sys.exit("bench: %d non-2xx answers and %d errors" % (t["non_2xx"], t["errors"]))
print("%s p50 %.2f ms, p99 %.2f ms, max %.1f ms, %d reads/s" % (sys.argv[2], t["p50_ms"], t["p99_ms"], t["max_ms"], t["per_second"]))
print(t["p99_ms"], file=open(sys.argv[3], "a"))' "$work/b.json" "$1" "$work/p99.$1"
}

run none 0 >/dev/null # warm up
for i in $(seq 1 "$pairs"); do
	run none "$i"
	flip &
	flipper=$!
	sleep 1 # the first job under way
	run job "$i"
	kill "$flipper"
	wait "$flipper" 2>/dev/null || true
	echo "  jobs finished during the run: $(wc -l <"$work/jobs")"
	curl -sf -X PUT -d '{"state":"active"}' "$url/v1/users/$celeb/state" >/dev/null
	until curl -sf "$url/v1/users/$celeb/state" | grep -q '"pending":0'; do sleep 0.05; done
done
for l in none job; do
	sort -g "$work/p99.$l" | awk -v l="$l" '{ r[NR] = $1 } END { printf "%s: median p99 %.2f ms over %d runs\n", l, r[int((NR + 1) / 2)], NR }'
done
