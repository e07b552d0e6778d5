#!/usr/bin/env bash
# seeds_ab.sh: followgraph's Redis layout against the seed articles' Redis
# design (tools/seedcost, kept as a baseline), side by side in one run, on
# loopback only. Environment: EDGES (2000000), ROUNDS (2), SECS (15, each
# measured run), CONCURRENCY (64), COMMANDSTATS (0; 1: after each measured
# run, the Redis time of the 8 dearest commands per request, from INFO
# commandstats, CONFIG RESETSTAT before the run), MIXES ("writes reads": the
# mixes measured, in order), SAME_RATE (1: the seeds' side also runs at the
# rate ours served, seedcost -rate, and for writes also with an outbox,
# seedcost -outbox; 0: only as fast as it goes), RATE (0: ours as fast as
# it goes; N: ours at N requests/s, bench --rate, so that two revisions of
# ours compare at one rate: a Redis's CPU per request falls as the rate
# rises).
#
# It builds followgraph and seedcost, generates a graph of EDGES edges
# (`gen --seed 7`, EDGES/50 users) and starts two Redis servers of its own
# (free ports, nothing kept on disk). Memory: `import --redis` loads the
# graph into one, seedcost's loader into the other; it prints used_memory
# less the empty server's, per edge, for both and ours/seeds, the most
# followed user's followers key (members, MEMORY USAGE) in each, and the
# bytes of each kind of key (MEMORY USAGE of every key). CPU: `serve
# --redis` on the first, driven by `bench`, and seedcost's driver on the
# second, the same mix, ids, clients and duration; ROUNDS times, writes
# then reads, ours then seeds, each after 3 s of warm-up; it reads
# used_cpu_sys+used_cpu_user of the Redis before and after (a second after
# the last request, for the relay to move the writes' events) and prints
# each run's Redis CPU per request, the commands Redis ran per request
# (total_commands_processed: scripts' calls count, a script call too), and
# the ratios ours/seeds.
set -euo pipefail
edges=${EDGES:-2000000} rounds=${ROUNDS:-2} secs=${SECS:-15} conc=${CONCURRENCY:-64}
mixes=${MIXES:-writes reads} same_rate=${SAME_RATE:-1} fixed_rate=${RATE:-0}
users=$((edges / 50))
repo=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
oport=$(free_port) sport=$(free_port) port=$(free_port)
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	redis-cli -p "$oport" shutdown nosave >/dev/null 2>&1 || true
	redis-cli -p "$sport" shutdown nosave >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
(cd "$repo" && go build -o "$work/followgraph" ./cmd/followgraph && go build -o "$work/seedcost" ./tools/seedcost)
fg=$work/followgraph sc=$work/seedcost
for p in "$oport" "$sport"; do
	mkdir -p "$work/r$p"
	redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/r$p" --daemonize yes --logfile "$work/r$p/log"
done
until redis-cli -p "$oport" ping >/dev/null 2>&1 && redis-cli -p "$sport" ping >/dev/null 2>&1; do sleep 0.1; done
mem() { redis-cli -p "$1" info memory | awk -F: '/^used_memory:/ {print $2 + 0}'; }
cpu() { redis-cli -p "$1" info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }
# ncmd PORT: the commands Redis has run, scripts' calls included.
ncmd() { redis-cli -p "$1" info stats | awk -F: '/^total_commands_processed:/ {print $2 + 0}'; }
# commandstats PORT REQUESTS: with COMMANDSTATS=1, the 8 commands that took
# the Redis the most time, per request (a script's time includes its calls').
commandstats() {
	[[ ${COMMANDSTATS:-0} == 1 ]] || return 0
	redis-cli -p "$1" info commandstats | awk -F'[:,=]' -v n="$2" '/^cmdstat_/ {printf "%.3f %s %.3f\n", $5 / n, substr($1, 9), $3 / n}' |
		sort -gr | head -8 | awk '{printf "    %-18s %6.2f calls, %7.2f us per request\n", $2, $3, $1}'
}
resetstat() { [[ ${COMMANDSTATS:-0} != 1 ]] || redis-cli -p "$1" config resetstat >/dev/null; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; } # calc EXPR [DECIMALS]
echo "seeds_ab: $edges edges (gen --seed 7), $users users, $conc clients, ${secs}s runs, $rounds rounds; $(nproc) cores; $(redis-server --version | cut -d' ' -f1-3); commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

"$fg" gen --edges "$edges" --seed 7 -o "$work/g.tsv" >/dev/null
lines=$(wc -l <"$work/g.tsv")
o0=$(mem "$oport") s0=$(mem "$sport")
t=$(date +%s)
"$fg" import "$work/g.tsv" --data "$work/d" --redis "redis://127.0.0.1:$oport" | sed 's/^/ours: /'
echo "ours: import took $(($(date +%s) - t)) s"
t=$(date +%s)
"$sc" -redis "127.0.0.1:$sport" -prefix sd: -load "$work/g.tsv" | sed 's/^/seeds: /'
echo "seeds: load took $(($(date +%s) - t)) s"
o1=$(mem "$oport") s1=$(mem "$sport")
awk -v n="$lines" -v o0="$o0" -v o1="$o1" -v s0="$s0" -v s1="$s1" 'BEGIN {
	printf "memory: %d edges; ours %.1f B/edge (%.1f MB), seeds %.1f B/edge (%.1f MB), ours/seeds %.2f\n",
		n, (o1 - o0) / n, (o1 - o0) / 1e6, (s1 - s0) / n, (s1 - s0) / 1e6, (o1 - o0) / (s1 - s0)
}'
celeb=$(awk '{ n[$2]++ } END { for (u in n) if (n[u] > m) { m = n[u]; c = u }; print c }' "$work/g.tsv")
# Ours keeps a list in chunks (fg:{id}:in, fg:{id}:in:1, ...): its largest.
chunks=$(redis-cli -p "$oport" --scan --pattern "fg:{$celeb}:in*" | grep -c .)
read -r _ okey < <(redis-cli -p "$oport" --scan --pattern "fg:{$celeb}:in*" |
	while read -r k; do echo "$(redis-cli -p "$oport" zcard "$k") $k"; done | sort -n | tail -1)
for side in "ours $oport $okey" "seeds $sport sd:fans:$celeb"; do
	read -r name p key <<<"$side"
	echo "largest key, $name: $key $(redis-cli -p "$p" zcard "$key") members, $(redis-cli -p "$p" memory usage "$key" samples 0) B"
done
echo "ours: the followers of $celeb in $chunks chunks"
echo "ours, bytes by kind of key (MEMORY USAGE, every key):"
"$sc" -redis "127.0.0.1:$oport" -keys fg: | sed 's/^/  /'
echo "seeds, bytes by kind of key:"
"$sc" -redis "127.0.0.1:$sport" -keys sd: | sed 's/^/  /'

url="http://127.0.0.1:$port"
"$fg" serve --data "$work/d" --addr "127.0.0.1:$port" --redis "redis://127.0.0.1:$oport" >"$work/serve.log" 2>&1 &
srv=$!
until curl -sf "$url/readyz" >/dev/null; do
	kill -0 "$srv" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
	sleep 0.2
done
sleep 2
c0=$(cpu "$oport") d0=$(cpu "$sport")
sleep 5
c1=$(cpu "$oport") d1=$(cpu "$sport")
awk -v o="$(calc "$c1 - $c0" 6)" -v s="$(calc "$d1 - $d0" 6)" 'BEGIN {
	printf "idle Redis CPU (serve running, no requests): ours %.1f ms/s, seeds %.1f ms/s\n", o * 200, s * 200
}'

# ours MIX SECS SEED [JSON]: bench against serve; seeds MIX SECS SEED: seedcost.
ours() { "$fg" bench --url "$url" --mix "$1" --users "$users" --concurrency "$conc" --duration "$2s" --seed "$3" --rate "$fixed_rate" --json >"${4:-/dev/null}"; }
seeds() { "$sc" -redis "127.0.0.1:$sport" -prefix sd: -mix "$1" -users "$users" -concurrency "$conc" -duration "$2s" -seed "$3" "${@:4}"; }
# seedrun LABEL KEY MIX SEED [FLAGS...]: one measured run of seedcost with
# FLAGS; its Redis CPU per request goes in per[KEY.MIX].
seedrun() {
	local label=$1 key=$2 mix=$3 seed=$4
	shift 4
	resetstat "$sport"
	local d0 d1 out n rate bad
	d0=$(cpu "$sport") k0=$(ncmd "$sport")
	out=$(seeds "$mix" "$secs" "$seed" "$@")
	sleep 1
	d1=$(cpu "$sport") k1=$(ncmd "$sport")
	n=$(sed -n 's/^seeds [a-z]*: \([0-9]*\) requests.*/\1/p' <<<"$out" | head -1)
	rate=$(sed -n 's/.* \([0-9]*\) requests\/s.*/\1/p' <<<"$out" | head -1)
	bad=$(sed -n 's/.*errors \([0-9]*\).*/\1/p' <<<"$out" | head -1)
	per[$key.$mix]=$(calc "($d1 - $d0) * 1000000 / $n" 1)
	echo "round $round $mix, $label: $n requests, $rate/s, errors $bad; Redis CPU $(calc "$d1 - $d0") s = ${per[$key.$mix]} us/request, $(calc "($k1 - $k0) / $n" 1) commands/request"
	grep '^first error' <<<"$out" || true
	commandstats "$sport" "$n"
}
declare -A per
for round in $(seq 1 "$rounds"); do
	for mix in $mixes; do
		seed=$((round * 10))
		ours "$mix" 3 $((seed + 1))
		resetstat "$oport"
		c0=$(cpu "$oport") k0=$(ncmd "$oport")
		ours "$mix" "$secs" "$seed" "$work/ours.json"
		sleep 1
		c1=$(cpu "$oport") k1=$(ncmd "$oport")
		read -r n rate bad <<<"$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); t = r["total"]
print(t["requests"], round(t["requests"] / r["elapsed_seconds"]), t["non_2xx"] + t["errors"])' "$work/ours.json")"
		per[ours.$mix]=$(calc "($c1 - $c0) * 1000000 / $n" 1)
		echo "round $round $mix, ours:  $n requests, $rate/s, non-2xx or errors $bad; Redis CPU $(calc "$c1 - $c0") s = ${per[ours.$mix]} us/request, $(calc "($k1 - $k0) / $n" 1) commands/request"
		commandstats "$oport" "$n"
		seeds "$mix" 3 $((seed + 1)) >/dev/null
		seedrun "seeds" seeds "$mix" "$seed"
		if [[ $same_rate == 1 ]]; then
			seedrun "seeds at ours' rate" rate "$mix" "$seed" -rate "$rate"
			if [[ $mix == writes ]]; then
				seedrun "seeds with an outbox, at ours' rate" outbox "$mix" "$seed" -rate "$rate" -outbox
			fi
		fi
	done
	ratios=""
	for mix in $mixes; do
		ratios+=", $mix $(calc "${per[ours.$mix]} / ${per[seeds.$mix]}")"
		if [[ $same_rate == 1 ]]; then
			ratios+=" (at ours' rate $(calc "${per[ours.$mix]} / ${per[rate.$mix]}")"
			[[ $mix != writes ]] || ratios+=", with an outbox $(calc "${per[ours.$mix]} / ${per[outbox.$mix]}")"
			ratios+=")"
		fi
	done
	echo "round $round: Redis CPU per request ours/seeds${ratios}"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
