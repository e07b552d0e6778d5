package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
)

// defaultMaxConns is the default of --max-connections: 10,000, or fewer
// when the process may open fewer files, keeping 1,000 descriptors for the
// backends (the event log's and the store's files, the Redis and database
// connections), so that clients cannot starve them.
func defaultMaxConns() int {
	const want, reserve = 10_000, 1_000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= want+reserve {
		return want
	}
	return max(int(lim.Cur)-reserve, 64)
}

// parseBytes reads a size such as 2GiB, 512MiB, 1.5GB or 1048576 (bytes);
// "" is 0.
func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		n      float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	num, mult := strings.TrimSpace(s), 1.0
	for _, u := range units {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || math.IsInf(f*mult, 0) || f*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: want a positive size such as 2GiB, 512MiB or 1073741824", s)
	}
	return int64(f * mult), nil
}

// formatBytes writes n bytes for a log line, in the largest binary unit
// that keeps it at 1 or more, to a tenth, such as 7.5MiB or 64MiB
// (parseBytes reads it back).
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n {
			return strconv.FormatFloat(math.Round(float64(n)*10/float64(u.n))/10, 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
