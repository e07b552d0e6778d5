# Sourced by job_reads.sh and redis_reads_ab.sh: the graph they serve.
# celeb is the user with 2M followers of its own.
celeb=9000000000

# celebrity_graph BIN EDGES WORK [FLAGS...]: BIN generates a graph of EDGES
# edges (seed 1), adds celeb's 2M followers (each following since a day
# ago, a millisecond apart), and imports it all into WORK/d and the
# engine FLAGS name (none: the embedded default).
celebrity_graph() {
	local bin=$1 edges=$2 work=$3
	shift 3
	"$bin" gen --edges "$edges" --seed 1 -o "$work/g.tsv" >/dev/null
	local now
	now=$(date +%s%3N)
	awk -v c="$celeb" -v t="$((now - 86400000))" 'BEGIN { for (i = 1; i <= 2000000; i++) printf "%d %d %d\n", 10000000000 + i, c, t + i }' >>"$work/g.tsv"
	"$bin" import "$work/g.tsv" --data "$work/d" "$@" >/dev/null
}

# unlink_prefix PREFIX: deletes the keys of PREFIX from the Redis of $REDIS.
unlink_prefix() {
	redis-cli -u "$REDIS" --scan --pattern "$1:*" | xargs -r -n 1000 redis-cli -u "$REDIS" unlink >/dev/null
}
