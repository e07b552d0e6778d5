#!/usr/bin/env bash
# ab_throughput.sh OLD NEW EDGES MIX PAIRS [SECONDS]: the closed-loop rate
# of two followgraph binaries' servers, side by side. Each binary imports
# the same generated graph of EDGES edges into a data folder of its own,
# and both serve it at once (the embedded default: memgraph, the
# in-process log, SQLite); then NEW's `bench --mix MIX`, 64 clients,
# drives one of them at a time for SECONDS (default 3), PAIRS times each,
# in the order A B B A A B …, so that a drift of the machine's speed (a
# shared VM's neighbours) falls on both alike. Prints each pair's rates
# and NEW/OLD ratio, then the median and quartiles of the ratios.
#
# BENCH names the binary whose bench drives both (default NEW): OLD's, to
# drive both with the mix OLD knows when NEW's mix has requests OLD does
# not serve (blocks and follow requests, for an OLD from before them).
#
# OLD_SERVE and NEW_SERVE add flags to each side's serve, OLD_BENCH and
# NEW_BENCH to the bench run against it, and OLD_SCHEME and NEW_SCHEME
# (http or https) say how it is reached: the same binary with and without
# authentication or TLS, say (auth_throughput.sh).
set -euo pipefail
old=$1 new=$2 edges=$3 mix=$4 pairs=$5 secs=${6:-3}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
"$new" gen --edges "$edges" --seed 1 -o "$work/g.tsv" >/dev/null
"$old" import "$work/g.tsv" --data "$work/old" >/dev/null
"$new" import "$work/g.tsv" --data "$work/new" >/dev/null
old_scheme=${OLD_SCHEME:-http} new_scheme=${NEW_SCHEME:-http}
# shellcheck disable=SC2086 # the flags are words
"$old" serve --data "$work/old" --addr 127.0.0.1:18091 ${OLD_SERVE:-} >"$work/old.log" 2>&1 &
# shellcheck disable=SC2086
"$new" serve --data "$work/new" --addr 127.0.0.1:18092 ${NEW_SERVE:-} >"$work/new.log" 2>&1 &
until curl -skf "$old_scheme://127.0.0.1:18091/readyz" >/dev/null; do sleep 0.2; done
until curl -skf "$new_scheme://127.0.0.1:18092/readyz" >/dev/null; do sleep 0.2; done
rate() { # rate PORT SEED: the requests/s of one run against the server at PORT
	local scheme=$old_scheme extra=${OLD_BENCH:-}
	if [ "$1" = 18092 ]; then scheme=$new_scheme extra=${NEW_BENCH:-}; fi
	# shellcheck disable=SC2086
	"${BENCH:-$new}" bench --url "$scheme://127.0.0.1:$1" --mix "$mix" --concurrency 64 --duration "${secs}s" --seed "$2" --json $extra >"$work/b.json"
	python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
if t["non_2xx"] or t["errors"]:
    sys.exit("bench: %d non-2xx answers and %d errors: not a rate of answers" % (t["non_2xx"], t["errors"]))
print(round(t["per_second"]))' "$work/b.json"
}
rate 18091 0 >/dev/null; rate 18092 0 >/dev/null # warm both
: >"$work/ratios"
for i in $(seq 1 "$pairs"); do
	if ((i % 2)); then a=$(rate 18091 "$i"); b=$(rate 18092 "$i"); else b=$(rate 18092 "$i"); a=$(rate 18091 "$i"); fi
	awk -v i="$i" -v a="$a" -v b="$b" -v mix="$mix" 'BEGIN { printf "%s pair %d: old %d/s, new %d/s, new/old %.3f\n", mix, i, a, b, b / a }'
	awk -v a="$a" -v b="$b" 'BEGIN { print b / a }' >>"$work/ratios"
done
sort -g "$work/ratios" | awk -v mix="$mix" '{ r[NR] = $1 } END {
	n = NR
	printf "%s: median new/old %.3f (quartiles %.3f to %.3f, %d pairs)\n", mix, r[int((n + 1) / 2)], r[int((n + 3) / 4)], r[int((3 * n + 3) / 4)], n
}'
