// Command gpufind prints what package detect/gpu finds for the task whose
// environment it runs in: the GPU UUIDs on one line, comma-separated, or
// nothing; the warning, if any, on stderr. Tests use it where the plugin
// is not at hand: test/gpu/check.sh on a GPU machine, and the cluster
// tests before the plugin writes the keys.
//
// Usage: gpufind [ROOT]   (ROOT: the file system root to read, default /)
package main

import (
	"fmt"
	"os"

	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/environ"
)

func main() {
	root := "/"
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: gpufind [ROOT]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		root = os.Args[1]
	}
	uuids, warnings := gpu.Find(environ.List(os.Environ()), gpu.Root(root))
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "gpufind:", w)
	}
	fmt.Println(gpu.Join(uuids))
}
