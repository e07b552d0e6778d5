package redisgraph

import fg "github.com/followgraph/followgraph"

// withSecondStepFault makes fault run before each attempt of a second step
// (Cluster only): an error fails the attempt. Only the tests can set it:
// a fault hook has no Option outside them.
func withSecondStepFault(fault func(fg.Event) error) Option {
	return func(g *Graph) { g.secondStepFault = fault }
}
