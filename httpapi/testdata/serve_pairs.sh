#!/usr/bin/env bash
# pairs.sh OLD NEW N: N pairs of runs of BenchmarkServe/Bounded and of
# BenchmarkServe_Relations, old and new in turn (ABBA order), from httpapi/.
set -euo pipefail
old=$1 new=$2 n=$3
run() {
	"$1" -test.run '^$' -test.bench 'BenchmarkServe$/^Bounded$' -test.benchtime 3000x | awk -v who="$2" '/^Benchmark/ {print who, $1, $3}'
	"$1" -test.run '^$' -test.bench 'BenchmarkServe_Relations$' -test.benchtime 3000x | awk -v who="$2" '/^Benchmark/ {print who, $1, $3}'
}
for i in $(seq 1 "$n"); do
	if (( i % 2 )); then run "$old" old; run "$new" new; else run "$new" new; run "$old" old; fi
done
