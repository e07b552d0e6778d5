package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// NATSCluster is a JetStream cluster of nats-server processes of a test's
// own, on free loopback ports: one configuration file per node, with
// cluster { name, listen, routes } and jetstream { store_dir } in a
// temporary folder. Its nodes are killed when the test ends.
type NATSCluster struct {
	tb    testing.TB
	bin   string
	Nodes []*NATSNode
}

// NATSNode is a node of a NATSCluster.
type NATSNode struct {
	Name   string // its server name: n1, n2, …
	Client string // host:port its clients connect to
	conf   string
	cmd    *exec.Cmd
	done   chan struct{}
}

// NewNATSCluster writes the configuration of an n-node cluster, whose
// nodes Start runs. It skips tb (fails it in CI) when nats-server is not
// installed.
func NewNATSCluster(tb testing.TB, n int) *NATSCluster {
	tb.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		Skip(tb, "nats-server is not installed: apt-get install nats-server")
	}
	dir := tb.TempDir()
	c := &NATSCluster{tb: tb, bin: bin}
	routeAddrs := make([]string, n)
	var routes []string
	for i := range routeAddrs {
		routeAddrs[i] = FreeAddr(tb)
		routes = append(routes, "nats-route://"+routeAddrs[i])
	}
	for i := range n {
		node := &NATSNode{Name: fmt.Sprintf("n%d", i+1), Client: FreeAddr(tb), conf: filepath.Join(dir, fmt.Sprintf("n%d.conf", i+1))}
		conf := fmt.Sprintf("server_name: %s\nlisten: %s\njetstream { store_dir: %q }\ncluster {\n  name: fgtest\n  listen: %s\n  routes: [%s]\n}\n",
			node.Name, node.Client, filepath.Join(dir, node.Name), routeAddrs[i], strings.Join(routes, ", "))
		if err := os.WriteFile(node.conf, []byte(conf), 0o600); err != nil {
			tb.Fatal(err)
		}
		c.Nodes = append(c.Nodes, node)
	}
	tb.Cleanup(func() {
		for _, node := range c.Nodes {
			c.Kill(node)
		}
	})
	return c
}

// StartNATSCluster starts the nodes of a new n-node cluster (without
// waiting for them).
func StartNATSCluster(tb testing.TB, n int) *NATSCluster {
	tb.Helper()
	c := NewNATSCluster(tb, n)
	for _, node := range c.Nodes {
		c.Start(node)
	}
	return c
}

// URLs returns the nodes' client URLs, comma separated.
func (c *NATSCluster) URLs() string {
	var us []string
	for _, node := range c.Nodes {
		us = append(us, "nats://"+node.Client)
	}
	return strings.Join(us, ",")
}

// Start runs node: nats-server -c its configuration.
func (c *NATSCluster) Start(node *NATSNode) {
	c.tb.Helper()
	node.cmd = exec.Command(c.bin, "-c", node.conf)
	if err := node.cmd.Start(); err != nil {
		c.tb.Fatal(err)
	}
	node.done = make(chan struct{})
	go func() { node.cmd.Wait(); close(node.done) }()
}

// Kill kills node with SIGKILL, if it runs, and waits for it to end.
func (c *NATSCluster) Kill(node *NATSNode) {
	if node.cmd == nil {
		return
	}
	node.cmd.Process.Signal(syscall.SIGKILL)
	<-node.done
	node.cmd = nil
}

// Node returns the node whose server name is name.
func (c *NATSCluster) Node(name string) *NATSNode {
	c.tb.Helper()
	for _, node := range c.Nodes {
		if node.Name == name {
			return node
		}
	}
	c.tb.Fatalf("no node is named %q", name)
	return nil
}

// FreeAddr returns a loopback host:port that nothing listened on a moment
// ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
