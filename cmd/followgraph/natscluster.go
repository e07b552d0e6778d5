package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/followgraph/followgraph/eventlog"
)

// The event log's start-up and its embedded cluster, as serve is told:
// --start-timeout, and --nats-cluster with --nats-cluster-listen and
// --nats-node-name, which make the embedded NATS server of each serve
// node one node of a JetStream cluster (docs/design/eventlog.md, "A NATS
// cluster as the log").

// defaultStartTimeout is --start-timeout's default.
const defaultStartTimeout = time.Minute

// clusterFlags registers serve's flags of the log's start-up and its
// embedded cluster.
func clusterFlags(f *pflag.FlagSet, s *servers, startTimeout *time.Duration) {
	f.DurationVar(startTimeout, "start-timeout", defaultStartTimeout, "longest serve waits at start for each backend that is not available yet (the database, NATS or Redis starting, no JetStream leader yet), logging each try")
	f.StringVar(&s.NATSCluster, "nats-cluster", "", "route URLs of the nodes of an embedded NATS cluster, this one's included (nats-route://host:6222,...): each serve node runs one node, instead of --nats; needs --nats-cluster-listen, and --redis and --db, which the nodes share")
	f.StringVar(&s.NATSClusterListen, "nats-cluster-listen", "", "host:port this node takes the other nodes' routes on (with --nats-cluster)")
	f.StringVar(&s.NATSClusterPasswordFile, "nats-cluster-password-file", "", "file holding the password of the user of --nats-cluster's route URLs (instead of putting it in them)")
	f.StringVar(&s.NATSNode, "nats-node-name", "", "this node's unique name in the NATS cluster (default: --nats-cluster-listen's host:port, or the host name and port)")
}

// natsReplicas is the stream's replica count: --nats-replicas, or when
// it is 0, 3 with --nats-cluster and 1 otherwise.
func natsReplicas(s servers, flag int) int {
	switch {
	case flag != 0:
		return flag
	case s.NATSCluster != "":
		return 3
	}
	return 1
}

// natsCluster returns the embedded cluster of --nats-cluster, or nil.
func (s *servers) natsCluster() *eventlog.Cluster {
	if s.NATSCluster == "" {
		return nil
	}
	return &eventlog.Cluster{Node: s.NATSNode, Listen: s.NATSClusterListen, Routes: strings.Split(s.NATSCluster, ",")}
}

// checkCluster reports an embedded cluster configuration that cannot
// work, or that would expose the log (insecure is --insecure-no-auth).
func (s *servers) checkCluster(replicas int, insecure bool) error {
	if s.NATSCluster == "" {
		if s.NATSClusterListen != "" || s.NATSNode != "" {
			return errors.New("--nats-cluster-listen and --nats-node-name need --nats-cluster")
		}
		return nil
	}
	switch {
	case s.NATS != "":
		return errors.New("--nats-cluster runs the log in the serve nodes: it cannot go with --nats")
	case s.NATSClusterListen == "":
		return errors.New("--nats-cluster needs --nats-cluster-listen, the host:port this node takes routes on")
	case s.Redis == "" || s.DB == "":
		return errors.New("--nats-cluster needs --redis and --db: the nodes of a cluster share the hot copy and the durable store " +
			"(the embedded engine and SQLite are each node's own)")
	}
	cluster := s.natsCluster()
	if err := (eventlog.Config{Dir: s.Data, Cluster: cluster, Replicas: replicas}).Validate(); err != nil {
		return fmt.Errorf("--nats-cluster: %w", err)
	}
	if !loopback(s.NATSClusterListen) && !strings.Contains(s.NATSCluster, "@") && !insecure {
		return fmt.Errorf("refusing to take NATS routes on %s without authentication: anyone who reaches it could join the cluster and read or write the log. "+
			"Put a user and password in every route URL (nats-route://user:password@host:port), listen on 127.0.0.1, "+
			"or say --insecure-no-auth if only the nodes can reach the network", s.NATSClusterListen)
	}
	return nil
}
