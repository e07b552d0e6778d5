//go:build !unix

package eventlog

// lockDir does nothing where flock is not available: running two
// processes on one Dir there is the operator's mistake to avoid.
func lockDir(dir string) (unlock func() error, err error) {
	return func() error { return nil }, nil
}
