#!/bin/sh
# follow_bench.sh: the reference figures of the follow-throughput target.
#
#   redisgraph/testdata/follow_bench.sh [redis-url] [requests] [seeds|seeds-event|ours]
#
# Loads a follow script with SCRIPT LOAD and drives it with redis-benchmark:
# 64 connections, pipelines of 16 (-c 64 -P 16), random users among 1M, keys
# under a random prefix that is deleted afterwards. Prints redis-benchmark's
# CSV; the rps is the second field of the last line.
#
#   seeds (default): the seeds' follow script, testdata/seeds_follow.lua, the
#          same file the Go baseline runs: the target's reference.
#   seeds-event: the seeds' script plus an XADD of the change event to a
#          stream (testdata/seeds_follow_event.lua): what writing the event
#          in the same atomic step, as the engine must, costs their design.
#   ours:  the engine's follow script as the engine sends it on a standalone
#          Redis (printed by redisgraph/internal/scripts/gen, for the
#          default bound of a key; 8 keys, 12 arguments, no write rate):
#          what Redis alone can do with it, without the Go client.
#
# The URL defaults to $FOLLOWGRAPH_TEST_REDIS, then redis://127.0.0.1:6379;
# requests to 1000000.
#
# __rand_int__ is replaced by an independent random 12-digit number at each
# place of each call, so a call makes a random user follow a random user;
# the ids in one call's keys and arguments differ, which changes nothing of
# the script's work (every key it touches is a random user's).
set -eu
url=${1:-${FOLLOWGRAPH_TEST_REDIS:-redis://127.0.0.1:6379}}
n=${2:-1000000}
mode=${3:-seeds}
dir=$(dirname "$0")
# Not under fgbench:, whose stale keys the Go benchmarks sweep.
prefix="fgbench-rb:$$$(date +%s%N):"
now=$(date +%s000)

cleanup() {
	redis-cli -u "$url" --scan --pattern "$prefix*" |
		xargs -r -n 1000 redis-cli -u "$url" UNLINK >/dev/null
}
trap cleanup EXIT

r=__rand_int__
case $mode in
seeds)
	sha=$(redis-cli -u "$url" SCRIPT LOAD "$(cat "$dir/seeds_follow.lua")")
	set -- 4 "${prefix}following:$r" "${prefix}follower:$r" \
		"${prefix}follow:count" "${prefix}following:count" \
		$r $r "$now"
	;;
seeds-event)
	sha=$(redis-cli -u "$url" SCRIPT LOAD "$(cat "$dir/seeds_follow_event.lua")")
	set -- 5 "${prefix}following:$r" "${prefix}follower:$r" \
		"${prefix}follow:count" "${prefix}following:count" "${prefix}events" \
		$r $r "$now"
	;;
ours)
	src=$(cd "$dir/../.." && go run ./redisgraph/internal/scripts/gen -print change)
	sha=$(redis-cli -u "$url" SCRIPT LOAD "$src")
	# The outbox stream exists, as InitOutbox makes it (the script refuses
	# to write without it).
	redis-cli -u "$url" XADD "${prefix}outbox" MAXLEN 0 '*' created 1 >/dev/null
	# Members are 12 decimal digits here, 8 bytes in the engine: the same
	# work for Redis. The time is now's, in ms, as a live follow's.
	set -- 8 "${prefix}{$r}:out" "${prefix}{$r}:ov" "${prefix}{$r}:h" "${prefix}outbox" "${prefix}{$r}:rf" \
		"${prefix}{$r}:in" "${prefix}{$r}:iv" "${prefix}{$r}:h" \
		follow $r "$now" 0 100000000 $r $r 0 0 $r 0 0
	;;
*)
	echo "follow_bench.sh: unknown mode $mode: seeds, seeds-event or ours" >&2
	exit 2
	;;
esac

redis-benchmark -u "$url" -n "$n" -c 64 -P 16 -r 1000000 --csv EVALSHA "$sha" "$@"
