#!/usr/bin/env bash
# redis_cpu_ab.sh OLD NEW [EDGES ROUNDS RATE SECS]: the Redis CPU and the
# commands per request of two followgraph binaries, side by side on the
# same load: ROUNDS times, OLD then NEW, each on a Redis of its own started
# empty (free port, nothing on disk), imports a generated graph of EDGES
# edges (default 500000, `gen --seed 7`), serves it (`serve --redis`) and
# takes `bench` writes then reads at RATE requests/s (default 2000) for
# SECS seconds (default 10) after 3 s of warm-up. Prints, per run and mix,
# Redis's CPU (used_cpu_sys + used_cpu_user) per request and
# total_commands_processed per request (a script and its calls), then
# NEW/OLD per round. At one rate, two revisions compare: a Redis's CPU per
# request falls as the rate rises.
set -euo pipefail
old=$1 new=$2 edges=${3:-500000} rounds=${4:-2} rate=${5:-2000} secs=${6:-10}
users=$((edges / 50))
work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(free_port) port=$(free_port)
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
"$old" gen --edges "$edges" --seed 7 >"$work/g.tsv"
cpu() { redis-cli -p "$rport" info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }
ncmd() { redis-cli -p "$rport" info stats | awk -F: '/^total_commands_processed:/ {print $2 + 0}'; }
declare -A result
for round in $(seq 1 "$rounds"); do
	for which in old new; do
		bin=$old
		[[ $which == new ]] && bin=$new
		rm -rf "$work/r" "$work/d" && mkdir -p "$work/r"
		redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/r" --daemonize yes --logfile "$work/r/log"
		until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.1; done
		"$bin" import "$work/g.tsv" --data "$work/d" --redis "redis://127.0.0.1:$rport" >/dev/null
		"$bin" serve --data "$work/d" --addr "127.0.0.1:$port" --redis "redis://127.0.0.1:$rport" >"$work/serve.log" 2>&1 &
		srv=$!
		until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
			kill -0 "$srv" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
			sleep 0.2
		done
		for mix in writes reads; do
			"$bin" bench --url "http://127.0.0.1:$port" --mix "$mix" --users "$users" --concurrency 64 --duration 3s --seed 1 --rate "$rate" >/dev/null
			c0=$(cpu) n0=$(ncmd)
			"$bin" bench --url "http://127.0.0.1:$port" --mix "$mix" --users "$users" --concurrency 64 --duration "${secs}s" --seed 3 --rate "$rate" >/dev/null
			sleep 1 # the relay moves the writes' events
			c1=$(cpu) n1=$(ncmd)
			line=$(awk -v c0="$c0" -v c1="$c1" -v n0="$n0" -v n1="$n1" -v r="$((rate * secs))" \
				'BEGIN {printf "%.1f %.1f", (c1 - c0) * 1e6 / r, (n1 - n0) / r}')
			result[$round.$which.$mix]=$line
			read -r us cmds <<<"$line"
			echo "round $round $which $mix: Redis CPU $us us/request, $cmds commands/request"
		done
		kill "$srv" && wait "$srv" 2>/dev/null || true
		redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
	done
	for mix in writes reads; do
		read -r o _ <<<"${result[$round.old.$mix]}"
		read -r n _ <<<"${result[$round.new.$mix]}"
		awk -v o="$o" -v n="$n" -v r="$round" -v m="$mix" 'BEGIN {printf "round %d %s: new/old %.2f\n", r, m, n / o}'
	done
done
