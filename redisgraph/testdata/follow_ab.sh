#!/bin/sh
# follow_ab.sh OLD.test NEW.test PAIRS [PORT]: BenchmarkFollow/Ours of two
# redisgraph test binaries (go test -c) in turn, PAIRS times, on a private
# Redis at PORT (default 6391; start one with
# `redis-server --port 6391 --save '' --appendonly no`), flushed and its
# stats reset before each run. Prints each run's follows/s and Redis's
# microseconds per EVALSHA (INFO commandstats): the time a follow costs
# inside Redis.
set -eu
old=$1 new=$2 pairs=$3 port=${4:-6391}
for i in $(seq 1 "$pairs"); do
	for v in old new; do
		bin=$old
		[ "$v" = new ] && bin=$new
		redis-cli -p "$port" flushall >/dev/null
		redis-cli -p "$port" config resetstat >/dev/null
		r=$(FOLLOWGRAPH_TEST_REDIS="redis://127.0.0.1:$port" "$bin" -test.run '^$' -test.bench 'BenchmarkFollow$/Ours$' -test.benchtime 2s |
			awk '{for (i = 1; i < NF; i++) if ($(i+1) == "follows/s") print $i}')
		us=$(redis-cli -p "$port" info commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
		echo "pair $i $v $r follows/s $us us/evalsha"
	done
done
