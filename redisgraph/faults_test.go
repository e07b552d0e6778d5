package redisgraph

import fg "github.com/followgraph/followgraph"

// withSecondStepFault makes fault run before each attempt of a second step
// (Cluster only): an error fails the attempt. Only the tests can set it:
// a fault hook has no Option outside them.
func withSecondStepFault(fault func(fg.Event) error) Option {
	return func(g *Graph) { g.faults.secondStep = fault }
}

// withJobStepFault makes fault run before the second step of each batch
// of an account-state job on a Cluster, the user's side, once the
// counterparts' sides are written: an error fails the batch there.
func withJobStepFault(fault func(fg.UserID) error) Option {
	return func(g *Graph) { g.faults.job.Step = fault }
}

// withArchiveReplied makes f run once each batch of an account-state job
// has its reply, before the batch returns.
func withArchiveReplied(f func(user fg.UserID, ms []string)) Option {
	return func(g *Graph) { g.faults.job.Replied = f }
}
