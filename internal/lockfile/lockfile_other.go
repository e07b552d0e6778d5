//go:build !unix

package lockfile

// Name is the lock file's name in the folder.
const Name = "followgraph.lock"

// Lock does nothing where flock is not available: running two processes
// on one folder there is the operator's mistake to avoid.
func Lock(dir string) (unlock func() error, err error) {
	return func() error { return nil }, nil
}
