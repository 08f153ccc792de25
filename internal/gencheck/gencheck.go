// Package gencheck keeps a generated Go file in step with its generator,
// for the tests that generate the package's tables: they build the source,
// and File either rewrites the file (go generate runs the test with
// -update) or fails the test when the file differs.
package gencheck

import (
	"bytes"
	"go/format"
	"os"
	"testing"
)

// File formats src and, with update, writes it to the file name; without,
// it fails t when name does not hold exactly that. from says what the file
// is generated from and pkg which package to run go generate in, for the
// message.
func File(t testing.TB, name string, src []byte, update bool, from, pkg string) {
	t.Helper()
	want, err := format.Source(src)
	if err != nil {
		t.Fatalf("generated code: %v\n%s", err, src)
	}
	if update {
		if err := os.WriteFile(name, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(name)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not what %s give (err %v): run go generate %s", name, from, err, pkg)
	}
}
