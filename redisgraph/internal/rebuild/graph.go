// Package rebuild restores the graph in Redis from its source of truth,
// the durable store and the event log's tail (Rebuild), and compares
// Redis with it, edge by edge and counter by counter, repairing what
// differs (Reconcile). Both write through the same version-aware scripts
// as the service (lua/bulk.lua, lua/effects.lua, lua/links.lua), so they
// run while the service writes, and never undo a newer change.
package rebuild

import (
	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
)

// Graph is the graph in Redis that a rebuild writes and a reconcile
// reads: the keys of ks, through c and lua, its lists read by lists, its
// effects written by fx, its keys holding at most maxKey entries.
type Graph struct {
	c      rueidis.Client
	ks     keyspace.Space
	lua    *scripts.Runner
	lists  *lists.Lists
	fx     *effects.Effects
	maxKey int
}

// New returns the graph in Redis of ks.
func New(c rueidis.Client, ks keyspace.Space, lua *scripts.Runner, l *lists.Lists, fx *effects.Effects, maxKey int) *Graph {
	return &Graph{c: c, ks: ks, lua: lua, lists: l, fx: fx, maxKey: maxKey}
}
