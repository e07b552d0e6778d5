#!/usr/bin/env bash
# ab_throughput.sh OLD NEW EDGES MIX ROUNDS [SECONDS]: the
# closed-loop rate of two followgraph binaries' servers, side by side.
# Each binary imports the same generated graph of EDGES edges into a data
# folder of its own; then, ROUNDS times, each serves in turn (OLD first,
# then NEW) while NEW's `bench --mix MIX` drives it with 64 clients for
# SECONDS (default 20), on loopback. Prints each run's rate and each
# round's NEW/OLD ratio. Both serve the embedded default (memgraph, the
# in-process log, SQLite).
set -euo pipefail
old=$1 new=$2 edges=$3 mix=$4 rounds=$5 secs=${6:-20}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
"$new" gen --edges "$edges" --seed 1 -o "$work/g.tsv" >/dev/null
for b in old new; do
	bin=${!b}
	"$bin" import "$work/g.tsv" --data "$work/$b" >/dev/null
done
addr=127.0.0.1:18098
rate() { # rate BIN DATA SEED: the requests/s of one run
	"$1" serve --data "$2" --addr "$addr" >"$work/serve.log" 2>&1 &
	local srv=$!
	until curl -sf "http://$addr/readyz" >/dev/null; do sleep 0.2; done
	"$new" bench --url "http://$addr" --mix "$mix" --concurrency 64 --duration "${secs}s" --seed "$3" --json >"$work/bench.json"
	kill $srv; wait $srv 2>/dev/null || true
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(round(r["total"]["per_second"]))' "$work/bench.json"
}
for i in $(seq 1 "$rounds"); do
	a=$(rate "$old" "$work/old" "$i")
	b=$(rate "$new" "$work/new" "$i")
	awk -v i="$i" -v a="$a" -v b="$b" -v mix="$mix" 'BEGIN { printf "%s round %d: old %d/s, new %d/s, new/old %.3f\n", mix, i, a, b, b / a }'
done
