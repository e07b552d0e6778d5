// Package redistest reaches the Redis servers redisgraph's tests run on: a
// standalone Redis named by FOLLOWGRAPH_TEST_REDIS, a Redis Cluster of three
// masters that the tests start themselves on free ports with redis-server
// and redis-cli (stopped by Main), and Redis servers of a test's own, which
// it may pause or kill. Without them the tests skip, saying how to run them
// (internal/testenv); under CI=true a skip is a failure.
package redistest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/internal/testenv"
)

// Main runs the tests of m, then stops the Cluster they started, if any,
// and exits: a package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	theCluster.stop()
	os.Exit(code)
}

// shared is a client made once and shared by the tests.
type shared struct {
	once sync.Once
	opt  rueidis.ClientOption
	c    rueidis.Client
	err  error
}

var standalone, cluster shared

// Standalone returns a client of the standalone Redis, or skips.
func Standalone(tb testing.TB) rueidis.Client {
	tb.Helper()
	url := testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	standalone.once.Do(func() {
		standalone.opt, standalone.err = rueidis.ParseURL(url)
		if standalone.err == nil {
			standalone.c, standalone.err = rueidis.NewClient(standalone.opt)
		}
	})
	if standalone.err != nil {
		tb.Fatalf("connecting to %s: %v", url, standalone.err)
	}
	if standalone.c.Mode() != rueidis.ClientModeStandalone {
		tb.Fatalf("%s is a %s Redis, want a standalone one", url, standalone.c.Mode())
	}
	return standalone.c
}

// Cluster returns a client of the test Cluster, starting the Cluster on
// first use, or skips.
func Cluster(tb testing.TB) rueidis.Client {
	tb.Helper()
	testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Skip(tb, bin+" is not on PATH: the Cluster tests start a Redis Cluster of their own with redis-server and redis-cli")
		}
	}
	cluster.once.Do(func() {
		addrs, err := theCluster.start()
		if err != nil {
			cluster.err = err
			return
		}
		cluster.opt = rueidis.ClientOption{InitAddress: addrs, ShuffleInit: true}
		cluster.c, cluster.err = rueidis.NewClient(cluster.opt)
	})
	if cluster.err != nil {
		tb.Fatalf("starting a Redis Cluster: %v", cluster.err)
	}
	return cluster.c
}

// A Mode is one of the two layouts, for the tests that run on both.
type Mode struct {
	Name   string
	Client func(testing.TB) rueidis.Client
	s      *shared
}

// Option returns the options of the mode's client, to make another
// client of the same Redis (once Client has made the first).
func (m Mode) Option() rueidis.ClientOption { return m.s.opt }

// Modes are the standalone Redis and the Cluster.
var Modes = []Mode{
	{"Standalone", Standalone, &standalone},
	{"Cluster", Cluster, &cluster},
}

// localCluster is a Redis Cluster of three masters in a temporary folder.
type localCluster struct {
	mu    sync.Mutex
	dir   string
	procs []*exec.Cmd
}

var theCluster localCluster

func (lc *localCluster) start() ([]string, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	dir, err := os.MkdirTemp("", "redisgraph-cluster-")
	if err != nil {
		return nil, err
	}
	lc.dir = dir
	// A port found free may be taken by another test's server before
	// redis-server binds it: then the nodes start again on other ports.
	for attempt := 1; ; attempt++ {
		addrs, err := lc.startNodes()
		if err != nil {
			return nil, err
		}
		stranger := ""
		for i, a := range addrs {
			host, port, _ := net.SplitHostPort(a)
			out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "info", "server").Output()
			if !strings.Contains(string(out), fmt.Sprintf("process_id:%d\r\n", lc.procs[i].Process.Pid)) {
				stranger = a
				break
			}
		}
		if stranger == "" {
			return lc.create(addrs)
		}
		if attempt == 3 {
			return nil, fmt.Errorf("another server answers at %s, where a node of the Cluster was started", stranger)
		}
		for _, p := range lc.procs {
			p.Process.Kill()
			p.Wait()
		}
		lc.procs = nil
	}
}

// startNodes starts three redis-server processes on free ports, and waits
// until something listens at each address.
func (lc *localCluster) startNodes() ([]string, error) {
	var addrs []string
	for range 3 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p := strconv.Itoa(port)
		cmd := exec.Command("redis-server", "--port", p, "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+p+".conf",
			"--save", "", "--appendonly", "no", "--dir", lc.dir, "--logfile", "redis-"+p+".log")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		lc.procs = append(lc.procs, cmd)
		addrs = append(addrs, "127.0.0.1:"+p)
	}
	for _, a := range addrs {
		if err := WaitFor(10*time.Second, func() bool { return dials(a) }); err != nil {
			return nil, fmt.Errorf("redis-server on %s did not start: %w", a, err)
		}
	}
	return addrs, nil
}

// create makes a Cluster of the nodes at addrs, and waits until it is ok.
func (lc *localCluster) create(addrs []string) ([]string, error) {
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		if err := WaitFor(30*time.Second, func() bool {
			out, err := exec.Command("redis-cli", "-h", host, "-p", port, "cluster", "info").Output()
			return err == nil && strings.Contains(string(out), "cluster_state:ok")
		}); err != nil {
			return nil, fmt.Errorf("the Cluster node %s is not ok: %w", a, err)
		}
	}
	return addrs, nil
}

func (lc *localCluster) stop() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if cluster.c != nil {
		cluster.c.Close()
	}
	for _, p := range lc.procs {
		p.Process.Kill()
		p.Wait()
	}
	if lc.dir != "" {
		os.RemoveAll(lc.dir)
	}
}

// dials reports whether something listens on addr.
func dials(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// FreePort returns a port that is free, and whose cluster bus port (the
// port + 10000) is free too.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port pair found")
}

// Private starts a standalone redis-server of the test's own on a free
// port, which the test may pause (SIGSTOP) without holding up other tests,
// and returns its address and process; it is stopped when the test ends.
// It skips as Cluster does.
func Private(tb testing.TB) (string, *os.Process) {
	tb.Helper()
	testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Skip(tb, "redis-server is not on PATH: this test starts a Redis of its own with it")
	}
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", tb.TempDir(), "--logfile", "redis.log")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := WaitFor(10*time.Second, func() bool { return dials(addr) }); err != nil {
		tb.Fatalf("redis-server on %s did not start: %v", addr, err)
	}
	return addr, cmd.Process
}

// SingleClient returns a client of the one Redis at addr, closed when the
// test ends.
func SingleClient(tb testing.TB, addr string) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// WaitFor calls ok every 50 ms until it returns true, or d has passed.
func WaitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// CommandStat returns the calls and usec of INFO commandstats' line of
// cmd (0, 0 when Redis has none yet).
func CommandStat(tb testing.TB, c rueidis.Client, cmd string) (calls, usec int64) {
	tb.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":"); ok {
			if _, err := fmt.Sscanf(strings.ReplaceAll(rest, ",", " "), "calls=%d usec=%d", &calls, &usec); err != nil {
				tb.Fatalf("cmdstat_%s %q: %v", cmd, rest, err)
			}
			return calls, usec
		}
	}
	return 0, 0
}

// SetSlowlog makes Redis log every command slower than a millisecond until
// the test ends, and returns the id of the last entry logged before.
func SetSlowlog(tb testing.TB, c rueidis.Client) int64 {
	tb.Helper()
	ctx := context.Background()
	old, err := c.Do(ctx, c.B().ConfigGet().Parameter("slowlog-log-slower-than").Build()).AsStrMap()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", old["slowlog-log-slower-than"]).Build())
	})
	if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", "1000").Build()).Error(); err != nil {
		tb.Fatal(err)
	}
	entries := SlowEntries(tb, c, -1)
	if len(entries) == 0 {
		return -1
	}
	return entries[0].ID
}

// SlowEntry is an entry of Redis's slow log.
type SlowEntry struct {
	ID   int64
	Took time.Duration
	Args []string
}

// SlowEntries returns the slow log entries after the one of id after,
// newest first.
func SlowEntries(tb testing.TB, c rueidis.Client, after int64) []SlowEntry {
	tb.Helper()
	vals, err := c.Do(context.Background(), c.B().SlowlogGet().Count(1024).Build()).ToArray()
	if err != nil {
		tb.Fatal(err)
	}
	var out []SlowEntry
	for _, v := range vals {
		f, err := v.ToArray()
		if err != nil || len(f) < 4 {
			tb.Fatalf("a slow log entry: %v %v", f, err)
		}
		id, _ := f[0].AsInt64()
		us, _ := f[2].AsInt64()
		args, _ := f[3].AsStrSlice()
		if id > after {
			out = append(out, SlowEntry{ID: id, Took: time.Duration(us) * time.Microsecond, Args: args})
		}
	}
	return out
}

// constantCost are the commands whose work is a few operations on one
// small value, whatever the data: one of them logged as slow was
// preempted, as a read of the graph's marker, made thousands of times a
// run, is in every run on a machine busy enough.
var constantCost = map[string]bool{"GET": true, "SET": true, "EXISTS": true, "HGET": true, "PING": true, "INCR": true, "TIME": true}

// NotSlowInEveryRun makes Redis log every command slower than a
// millisecond, calls run (with 1, 2, …) at least runs times, and fails tb
// if a command naming prefix, other than one of constant cost, was logged
// in every run. The slow log measures wall time, so on a busy machine a
// command that the scheduler preempts is logged too: a command slow in
// itself is logged in every run, a preempted one only while the machine
// is busy. So the runs are spread out, a few seconds apart, and go on
// while some command is still logged in every run, for a minute at most:
// CI runs packages side by side, and another package's burst of work
// can cover several runs in a row but not a minute of them.
func NotSlowInEveryRun(tb testing.TB, c rueidis.Client, prefix string, runs int, run func(n int)) {
	tb.Helper()
	const (
		pause  = 3 * time.Second
		window = time.Minute
	)
	last := SetSlowlog(tb, c)
	var always map[string]time.Duration // commands logged in every run so far
	began := time.Now()
	for n := 1; n <= runs || time.Since(began) < window; n++ {
		if n > 1 {
			time.Sleep(pause)
		}
		run(n)
		slow := make(map[string]time.Duration)
		for _, e := range SlowEntries(tb, c, last) {
			if len(e.Args) > 0 && constantCost[strings.ToUpper(e.Args[0])] {
				last = max(last, e.ID)
				continue // preempted: it does a constant, tiny amount of work
			}
			if strings.Contains(strings.Join(e.Args, " "), prefix) {
				slow[fmt.Sprintf("%q", e.Args[:min(len(e.Args), 5)])] = e.Took
			}
			last = max(last, e.ID)
		}
		if n == 1 {
			always = slow
		}
		maps.DeleteFunc(always, func(cmd string, _ time.Duration) bool { _, ok := slow[cmd]; return !ok })
		tb.Logf("run %d (%v in): %d commands logged as slower than 1 ms, %d of them in every run", n, time.Since(began).Round(time.Second), len(slow), len(always))
		if len(always) == 0 {
			return
		}
	}
	for cmd, took := range always {
		tb.Errorf("Redis logged this command in every run, the last time as %v: %s", took, cmd)
	}
}
