package main

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/followgraph/followgraph/internal/testenv"
)

// TestFault_RedisDataLoss: Redis, keeping nothing on disk, is killed and
// started again empty while the node writes; `followgraph rebuild` brings
// the hot copy back from PostgreSQL and the log. Nothing acknowledged is
// lost because a Redis write is acknowledged only once its event is in the
// log (see redisEngine).
func TestFault_RedisDataLoss(t *testing.T) {
	r := startRedis(t)
	d := newDeployment(t, r.url(), "", "")
	node := d.node()
	l := startLoad([]*server{node}, 8, 5)
	time.Sleep(1500 * time.Millisecond)
	r.kill()
	r.start()
	over := time.Now()
	time.Sleep(2 * time.Second)
	rebuild(t, d) // while the load goes on
	l.finish()
	checkDeployment(t, "Redis restarted without persistence (data gone), then rebuild", d, node, l, over, 60*time.Second)
}

// TestFault_ClusterFailover: on a Redis Cluster of three masters and three
// replicas, a master is killed and its replica promoted; whatever the
// replica had not received is rebuilt from PostgreSQL and the log.
func TestFault_ClusterFailover(t *testing.T) {
	c := startCluster(t)
	d := newDeployment(t, "redis+cluster://"+strings.Join(c.addrs, ","), "", "")
	node := d.node()
	l := startLoad([]*server{node}, 8, 6)
	time.Sleep(1500 * time.Millisecond)
	c.killMaster(t) // returns once the replica is promoted
	over := time.Now()
	time.Sleep(2 * time.Second)
	rebuild(t, d) // while the load goes on
	l.finish()
	checkDeployment(t, "a Redis Cluster master killed, its replica promoted", d, node, l, over, 60*time.Second)
}

// rebuild runs `followgraph rebuild` on the deployment.
func rebuild(t *testing.T, d *deployment) {
	t.Helper()
	runBinary(t, append([]string{"rebuild"}, d.args()...)...)
}

// redisProc is a redis-server of the test's own, keeping nothing on disk.
type redisProc struct {
	t    *testing.T
	port string
	args []string
	cmd  *exec.Cmd
}

func startRedis(t *testing.T, extra ...string) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Skip(t, "redis-server is not installed: apt-get install redis-server")
	}
	_, port, _ := strings.Cut(freeAddr(t), ":")
	for i, a := range extra { // "PORT" in extra is the port (a --tls-port, say)
		if a == "PORT" {
			extra[i] = port
		}
	}
	r := &redisProc{t: t, port: port, args: append([]string{"--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) url() string { return "redis://127.0.0.1:" + r.port }

func (r *redisProc) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", r.args...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	waitTCP(r.t, "127.0.0.1:"+r.port)
}

func (r *redisProc) kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
	r.cmd = nil
}

// testCluster is a Redis Cluster of three masters, each with a replica,
// on loopback, keeping nothing on disk.
type testCluster struct {
	addrs []string
	procs map[string]*exec.Cmd
}

// startCluster starts the Cluster, its redis-server processes given the
// extra arguments too (such as a longer --cluster-node-timeout, or
// --appendonly yes), which take precedence.
func startCluster(t *testing.T, extra ...string) *testCluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		testenv.Skip(t, "redis-cli is not installed: apt-get install redis-tools")
	}
	dir := t.TempDir()
	c := &testCluster{procs: map[string]*exec.Cmd{}}
	t.Cleanup(func() {
		for _, p := range c.procs {
			p.Process.Kill()
			p.Wait()
		}
	})
	// A port found free may be taken by another test's server before
	// redis-server binds it (its own, or its bus port): then the node
	// exits, or that server answers there, and the nodes start again on
	// other ports.
	for attempt := 1; ; attempt++ {
		stranger := c.start(t, dir, extra)
		if stranger == "" {
			stranger = c.stranger(t)
		}
		if stranger == "" {
			break
		}
		if attempt == 3 {
			t.Fatalf("three times, a node of the Cluster did not start, or another server answered at its address (%s)", stranger)
		}
		for a, p := range c.procs {
			p.Process.Kill()
			p.Wait()
			delete(c.procs, a)
		}
		c.addrs = nil
	}
	args := append([]string{"--cluster", "create"}, c.addrs...)
	if out, err := exec.Command("redis-cli", append(args, "--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitOK(t)
	// A replica can take over only once it has synced with its master.
	for _, a := range c.addrs {
		host, port, _ := net.SplitHostPort(a)
		for deadline := time.Now().Add(30 * time.Second); ; {
			out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "info", "replication").Output()
			if strings.Contains(string(out), "role:master") || strings.Contains(string(out), "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the replica %s has not synced after 30 s:\n%s", a, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return c
}

// start starts the six nodes' redis-server processes on free ports, with
// their files in dir, and waits until something listens at each address;
// it returns the first where nothing does after 5 s ("": none).
func (c *testCluster) start(t *testing.T, dir string, extra []string) string {
	t.Helper()
	for range 6 {
		port := clusterPort(t)
		cmd := exec.Command("redis-server", append([]string{"--port", port, "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + port + ".conf",
			"--cluster-node-timeout", "1000", "--save", "", "--appendonly", "no",
			"--repl-diskless-sync-delay", "0", "--appendfilename", "aof-" + port,
			"--dir", dir, "--logfile", "redis-" + port + ".log"}, extra...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + port
		c.addrs = append(c.addrs, addr)
		c.procs[addr] = cmd
	}
	for _, a := range c.addrs {
		if !listensWithin(a, 5*time.Second) {
			return a
		}
	}
	return ""
}

// listensWithin reports whether something listens at addr within d.
func listensWithin(addr string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

// stranger returns the first address of c where the server that answers
// is not the process c started there ("": none).
func (c *testCluster) stranger(t *testing.T) string {
	t.Helper()
	for _, a := range c.addrs {
		host, port, _ := net.SplitHostPort(a)
		out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "info", "server").Output()
		if !strings.Contains(string(out), fmt.Sprintf("process_id:%d\r\n", c.procs[a].Process.Pid)) {
			return a
		}
	}
	return ""
}

// clusterPort returns a free port whose cluster bus port (+10000) is free.
func clusterPort(t *testing.T) string {
	t.Helper()
	for range 100 {
		_, port, _ := strings.Cut(freeAddr(t), ":")
		p, _ := strconv.Atoi(port)
		if p+10000 > 65535 {
			continue
		}
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			ln.Close()
			if reservePort(p + 10000) {
				return port
			}
		}
	}
	t.Fatal("no free port pair for a Cluster node")
	return ""
}

// waitOK waits until every live node says the cluster is ok.
func (c *testCluster) waitOK(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range c.addrs {
		if c.procs[a] == nil {
			continue
		}
		host, port, _ := net.SplitHostPort(a)
		for {
			out, err := exec.Command("redis-cli", "-h", host, "-p", port, "cluster", "info").Output()
			if err == nil && strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Cluster is not ok at %s after 30 s: %s", a, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// killMaster kills a master with SIGKILL and waits for its replica to be
// promoted and the cluster to be ok again.
func (c *testCluster) killMaster(t *testing.T) {
	t.Helper()
	host, port, _ := net.SplitHostPort(c.addrs[0])
	out, err := exec.Command("redis-cli", "-h", host, "-p", port, "cluster", "nodes").Output()
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.Contains(f[2], "master") {
			victim, _, _ = strings.Cut(f[1], "@")
			break
		}
	}
	p := c.procs[victim]
	if p == nil {
		t.Fatalf("no master found in:\n%s", out)
	}
	p.Process.Kill()
	p.Wait()
	delete(c.procs, victim)
	// The others first see it fail (after the node timeout), then promote
	// its replica, then say ok again.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var live string
		for a := range c.procs {
			live = a
			break
		}
		h, p, _ := net.SplitHostPort(live)
		out, _ := exec.Command("redis-cli", "-h", h, "-p", p, "cluster", "nodes").Output()
		failed := false
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[1], victim+"@") && strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?") {
				failed = true
			}
		}
		if failed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Cluster did not mark %s failed within 30 s:\n%s", victim, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.waitOK(t)
}
