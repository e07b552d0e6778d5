#!/usr/bin/env bash
# replica_reads.sh BIN [EDGES RATE SECONDS ROUNDS]: the Redis master's CPU
# per read request, with every read on the master against with reads on
# a replica (serve --redis-replicas), side by side. It starts a master
# and a replica of its own (free ports, nothing kept on disk), imports a
# generated graph of EDGES edges into it, then ROUNDS times serves it
# each way and drives `bench --mix reads` at RATE requests a second for
# SECONDS (open loop, so both ways send the same requests), reading the
# master's used_cpu_sys+used_cpu_user before and after. Prints each
# run's µs of master CPU per request and the ratio, replica/master.
set -euo pipefail
bin=$1 edges=${2:-200000} rate=${3:-4000} secs=${4:-15} rounds=${5:-2}
work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(free_port) rport=$(free_port) port=$(free_port)
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	redis-cli -p "$mport" shutdown nosave >/dev/null 2>&1 || true
	redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/m" "$work/r"
redis-server --port "$mport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/m" --daemonize yes --logfile "$work/m/log"
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/r" --daemonize yes --logfile "$work/r/log" \
	--replicaof 127.0.0.1 "$mport"
master=redis://127.0.0.1:$mport replica=redis://127.0.0.1:$rport
"$bin" gen --edges "$edges" --seed 7 -o "$work/graph.tsv"
"$bin" import "$work/graph.tsv" --data "$work/d" --redis "$master" >/dev/null
until redis-cli -p "$rport" info replication | grep -q 'master_link_status:up'; do sleep 0.2; done
cpu() { redis-cli -p "$mport" info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }
url="http://127.0.0.1:$port"
users=$((edges / 50))
declare -A per
for round in $(seq 1 "$rounds"); do
	for way in master replica; do
		args=()
		[[ $way == replica ]] && args=(--redis-replicas "$replica")
		"$bin" serve --data "$work/d" --addr "127.0.0.1:$port" --redis "$master" "${args[@]}" >"$work/serve.log" 2>&1 &
		pid=$!
		until curl -sf "$url/readyz" >/dev/null; do sleep 0.2; done
		"$bin" bench --url "$url" --mix reads --users "$users" --duration 3s --rate "$rate" --seed 9 >/dev/null
		c0=$(cpu)
		"$bin" bench --url "$url" --mix reads --users "$users" --duration "${secs}s" --rate "$rate" --seed 9 --json >"$work/$way.json"
		c1=$(cpu)
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		per[$way]=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
if t["non_2xx"] or t["errors"]:
    sys.exit("bench: %d non-2xx answers and %d errors" % (t["non_2xx"], t["errors"]))
n = t["requests"] if "requests" in t else t["2xx"]
print("%.3f" % ((float(sys.argv[3]) - float(sys.argv[2])) * 1e6 / n))' "$work/$way.json" "$c0" "$c1")
		echo "round $round, reads on the $way: ${per[$way]} us of master CPU per request"
	done
	python3 -c 'import sys; print("round %s: replica/master %.3f" % (sys.argv[1], float(sys.argv[3]) / float(sys.argv[2])))' "$round" "${per[master]}" "${per[replica]}"
done
