#!/usr/bin/env bash
# cpu_per_request.sh BIN DATA [MIX RATE SECONDS]: CPU per request of the
# server and of the load generator, at a fixed open-loop rate, so that
# other load on the machine changes little. BIN is a followgraph binary
# (its serve and its bench are measured), DATA a data folder it imported.
# Prints: mix, requests, server µs/request, generator µs/request.
set -euo pipefail
bin=$1 data=$2 mix=${3:-reads} rate=${4:-15000} secs=${5:-15}
addr=127.0.0.1:18099
"$bin" serve --data "$data" --addr "$addr" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null || true' EXIT
until curl -sf "http://$addr/readyz" >/dev/null; do sleep 0.1; done
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
s0=$(ticks $srv)
gen=$( { /usr/bin/time -f '%U %S' "$bin" bench --url "http://$addr" --mix "$mix" --concurrency 64 --rate "$rate" --duration "${secs}s" >/dev/null; } 2>&1 | tail -1)
s1=$(ticks $srv)
n=$((rate * secs))
awk -v mix="$mix" -v n="$n" -v s=$((s1 - s0)) -v hz="$hz" -v g="$gen" 'BEGIN {
	split(g, t, " ")
	printf "%s: %d requests, server %.1f us/request, generator %.1f us/request\n", mix, n, s / hz * 1e6 / n, (t[1] + t[2]) * 1e6 / n
}'
