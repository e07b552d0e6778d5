//go:build !faultinject

package main

import "github.com/followgraph/followgraph/pipeline"

// withFaults returns o: a release build injects no faults (fault_inject.go).
func withFaults(o pipeline.Outbox) pipeline.Outbox { return o }
