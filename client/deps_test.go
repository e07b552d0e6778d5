package client_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestDependencies checks that the client needs only the standard library
// and the domain package, so that a service that imports it does not pull
// in the server's dependencies (Prometheus, NATS, Redis and SQL drivers).
func TestDependencies(t *testing.T) {
	const module = "github.com/followgraph/followgraph"
	allowed := map[string]string{module: "..", module + "/client": "."} // import path → folder
	seen := make(map[string]bool)
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		pkg, err := build.ImportDir(allowed[path], 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if first, _, _ := strings.Cut(imp, "/"); !strings.Contains(first, ".") {
				continue // the standard library
			}
			if _, ok := allowed[imp]; !ok {
				t.Errorf("%s imports %s: the client may import only the standard library and %s", path, imp, module)
				continue
			}
			walk(imp)
		}
	}
	walk(module + "/client")
	if !seen[module] {
		t.Errorf("the walk did not reach %s: it no longer follows the client's imports", module)
	}
}
