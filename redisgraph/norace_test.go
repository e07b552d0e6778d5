//go:build !race

package redisgraph

// raceDetector is whether the tests run under the race detector.
const raceDetector = false
