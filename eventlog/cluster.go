package eventlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultClusterName is Cluster.Name's default.
const DefaultClusterName = "followgraph"

// Cluster is the embedded server's part in a JetStream cluster of embedded
// servers, one in each process: every node lists every node's route URL,
// its own among them, and listens on its own. The cluster elects a leader
// once a majority of its nodes run, and places a stream's replicas on
// distinct nodes.
type Cluster struct {
	// Name is the cluster's name, the same on every node; default
	// DefaultClusterName.
	Name string
	// Node is this node's server name: unique in the cluster, and the same
	// across restarts (JetStream knows its peers by it). Default: Listen's
	// host:port, with the machine's host name for a Listen on every
	// interface ("", 0.0.0.0 or ::).
	Node string
	// Listen is the host:port this node takes the other nodes' routes on.
	Listen string
	// Routes are the route URLs of every node of the cluster, this one's
	// included (nats-route://host:port; the same list on every node), at
	// least three: a cluster of two stops when either node stops. A user
	// and password in them (nats-route://user:password@host:port), the
	// same in every URL, are then required of the other nodes' routes.
	Routes []string
}

// clusterOptions is a Cluster checked and taken apart.
type clusterOptions struct {
	name, node string
	host       string
	port       int
	routes     []*url.URL
	user, pass string
}

// options checks c and returns what the server is configured with.
func (c *Cluster) options() (clusterOptions, error) {
	o := clusterOptions{name: c.Name, node: c.Node}
	if o.name == "" {
		o.name = DefaultClusterName
	}
	if o.name == "" || strings.ContainsAny(o.name, " \t\r\n") {
		return o, fmt.Errorf("eventlog: cluster name %q: it must have no spaces", o.name)
	}
	host, port, err := hostPort(c.Listen)
	if err != nil {
		return o, fmt.Errorf("eventlog: cluster listen address %w", err)
	}
	o.host, o.port = host, port
	if o.node == "" {
		if host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
			if host, err = os.Hostname(); err != nil {
				return o, fmt.Errorf("eventlog: naming the cluster node after the host: %w", err)
			}
		}
		o.node = net.JoinHostPort(host, strconv.Itoa(port))
	}
	if strings.ContainsAny(o.node, " \t\r\n") {
		return o, fmt.Errorf("eventlog: cluster node name %q: it must have no spaces", o.node)
	}
	if len(c.Routes) < 3 {
		return o, fmt.Errorf("eventlog: a cluster needs the routes of at least 3 nodes, this one's included (it has %d): with 2, the log stops when either stops", len(c.Routes))
	}
	seen := map[string]bool{}
	for i, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats-route" || u.Port() == "" || u.Hostname() == "" {
			return o, fmt.Errorf("eventlog: cluster route %d: want nats-route://[user:password@]host:port", i+1)
		}
		if seen[u.Host] {
			return o, fmt.Errorf("eventlog: cluster route %s is listed twice", u.Host)
		}
		seen[u.Host] = true
		user, pass := u.User.Username(), ""
		if u.User != nil {
			pass, _ = u.User.Password()
		}
		if i > 0 && (user != o.user || pass != o.pass) {
			return o, errors.New("eventlog: cluster routes: every route must have the same user and password, or none")
		}
		o.user, o.pass = user, pass
		o.routes = append(o.routes, u)
	}
	return o, nil
}

// apply configures opts for o: routes on o's address, and, since routing
// needs the client listener, a client listener on a random loopback port
// that takes only the in-process connection (it requires token, known to
// this process only).
func (o clusterOptions) apply(opts *server.Options) (token string, err error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token = hex.EncodeToString(b)
	opts.ServerName = o.node
	opts.DontListen = false
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.Authorization = token
	opts.Cluster = server.ClusterOpts{Name: o.name, Host: o.host, Port: o.port, Username: o.user, Password: o.pass}
	opts.Routes = o.routes
	// A node that is down is reported when it goes, then once a minute
	// (the server tries its routes every second).
	opts.ReconnectErrorReports = 60
	return token, nil
}

// errNoLeader is waitForCluster's error while the cluster has no leader.
var errNoLeader = errors.New("no JetStream leader elected yet")

// clusterPoll is how often waitForCluster looks for a leader.
const clusterPoll = 50 * time.Millisecond

// waitForCluster returns once the embedded server's JetStream cluster has
// a leader, which it needs before it takes any request, or as retry
// does.
func (l *Log) waitForCluster(ctx context.Context) error {
	nodes := len(l.cfg.Cluster.Routes)
	return l.retry(ctx, "JetStream cluster", func(ctx context.Context) error {
		for {
			if info, err := l.srv.Jsz(nil); err == nil && info.Meta != nil && info.Meta.Leader != "" {
				l.log.Info("the JetStream cluster has a leader", "leader", info.Meta.Leader, "node", l.srv.Name(),
					"nodes_connected", l.srv.NumRemotes()+1, "nodes", nodes)
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %d of %d nodes connected (a majority must run): %w",
					errNoLeader, l.srv.NumRemotes()+1, nodes, ctx.Err())
			case <-time.After(clusterPoll):
			}
		}
	})
}
