package main

import "github.com/spank-otel/spank-otel/internal/cgotraceback"

// A crash report from the helper reaches the slurmd log; with this it names
// the C frames too (see internal/cgotraceback).
func init() {
	cgotraceback.Install()
}
