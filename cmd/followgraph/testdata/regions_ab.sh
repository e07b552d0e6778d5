#!/usr/bin/env bash
# regions_ab.sh [SECONDS] [RATE]: two regions against one, on loopback,
# everything embedded (docs/design/regions.md). Prints:
#  1. the closed-loop rate of `bench --mix writes` (64 clients, SECONDS,
#     default 10) on a server in one region, then on region a's server with
#     region b attached, in the order one, two, two, one, and the ratio of
#     their sums. Both regions run on this machine: b's server takes a's
#     events meanwhile, on the same cores;
#  2. the replication lag with writers in both regions at RATE writes/s
#     each (default 1000) for SECONDS: the bucket bounds under which 50% and
#     99% of the other region's events were applied, from each region's
#     followgraph_region_lag_seconds, read once both have taken everything.
# Builds the binary from this tree; cleans up after itself.
set -euo pipefail
secs=${1:-10} rate=${2:-1000}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
bin=$work/followgraph
(cd "$(dirname "$0")/.." && go build -o "$bin" .)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
one=127.0.0.1:$(port) a=127.0.0.1:$(port) b=127.0.0.1:$(port) leaf=127.0.0.1:$(port)
ready() { until "$bin" probe "http://$1/readyz" 2>/dev/null; do sleep 0.1; done; }
"$bin" serve --addr "$one" --data "$work/one" 2>"$work/one.log" &
"$bin" serve --addr "$a" --data "$work/a" --region a --region-peers b --region-listen "$leaf" 2>"$work/a.log" &
"$bin" serve --addr "$b" --data "$work/b" --region b --region-peers a --region-link "nats-leaf://$leaf" 2>"$work/b.log" &
ready "$one"; ready "$a"; ready "$b"
rate_of() { "$bin" bench --url "http://$1" --mix writes --concurrency 64 --duration "${secs}s" --seed "$2" --json |
	python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["total"]["ok"] / r["elapsed_seconds"])'; }
r1=$(rate_of "$one" 1); r2=$(rate_of "$a" 2); r3=$(rate_of "$a" 3); r4=$(rate_of "$one" 4)
python3 -c "o=$r1+$r4; t=$r2+$r3; print(f'writes/s, one region: {$r1:.0f} {$r4:.0f}; two regions (on a): {$r2:.0f} {$r3:.0f}; two/one: {t/o:.2f}')"

"$bin" bench --url "http://$a" --mix writes --concurrency 64 --rate "$rate" --duration "${secs}s" --seed 5 >/dev/null &
pa=$!
"$bin" bench --url "http://$b" --mix writes --concurrency 64 --rate "$rate" --duration "${secs}s" --seed 6 >/dev/null &
wait "$pa" "$!"
lag() { # lag ADDR: the bounds of the lag histogram's p50 and p99, once it stops growing
	local last=-1 now
	while now=$(curl -s "http://$1/metrics" | awk '$1 == "followgraph_region_lag_seconds_count" {print $2}') && [ "$now" != "$last" ]; do
		last=$now; sleep 2
	done
	curl -s "http://$1/metrics" | awk -v at="$1" '
		/^followgraph_region_lag_seconds_bucket/ {
			match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); n++; les[n] = le; cum[n] = $2 }
		/^followgraph_region_lag_seconds_count/ { total = $2 }
		END {
			for (i = 1; i <= n; i++) { if (!p50 && cum[i] >= 0.5 * total) p50 = les[i]; if (!p99 && cum[i] >= 0.99 * total) p99 = les[i] }
			printf "%s applied %d events of the other region: lag p50 <= %s s, p99 <= %s s\n", at, total, p50, p99 }'
}
lag "$a"; lag "$b"
