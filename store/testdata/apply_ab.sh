#!/bin/bash
# apply_ab.sh OLD.test NEW.test DIR BENCH BENCHTIME N
#
# Runs two builds of a store's test binary (go test -c) in turn, in ABBA
# order, N pairs, each for BENCHTIME of the benchmarks BENCH, from DIR (the
# store's package folder). Prints per run the benchmarks' rows/s and the
# CPU seconds (user+sys) the process used: on a machine shared with other
# work the CPU a fixed amount of work costs (BENCHTIME as 300x) is
# steadier than its wall time. The server stores need their
# FOLLOWGRAPH_TEST_* variable set.
set -e
old=$1 new=$2 dir=$3 bench=$4 bt=$5 n=$6
cd "$dir"
TIMEFORMAT='%U %S'
out=$(mktemp) times=$(mktemp)
trap 'rm -f "$out" "$times"' EXIT
one() {
  { time "$2" -test.run '^$' -test.bench "$bench" -test.benchtime "$bt" > "$out" 2>&1 ; } 2> "$times"
  echo "$1 $(grep -o '[0-9.]* rows/s' "$out" | tr '\n' ' ') cpu $(awk '{print $1+$2}' "$times")"
}
for i in $(seq 1 "$n"); do
  if [ $((i % 2)) = 1 ]; then one old "$old"; one new "$new"; else one new "$new"; one old "$old"; fi
done
