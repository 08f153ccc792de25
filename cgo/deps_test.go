package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deniedPackages are packages the per-task library must not link. Every
// package linked is initialised in every task, so each one costs every
// task of every job step: fmt and reflect for their tables, os for its
// files and environment, the crypto packages for the FIPS 140 module they
// bring (the UUIDv5 digest comes from internal/sha1 instead), and strings
// and bytes for unicode, whose maps are built at start (internal/strs
// instead). A subtree is written with "/...".
var deniedPackages = []string{
	"fmt",
	"reflect",
	"strings",
	"bytes",
	"unicode",
	"os",
	"os/exec",
	"net",
	"encoding/json",
	"crypto",
	"crypto/...",
}

// denied reports whether pkg is on the deny list.
func denied(pkg string) bool {
	for _, d := range deniedPackages {
		if tree, ok := strings.CutSuffix(d, "/..."); ok {
			if strings.HasPrefix(pkg, tree+"/") {
				return true
			}
		} else if pkg == d {
			return true
		}
	}
	return false
}

func TestDenied(t *testing.T) {
	tests := []struct {
		pkg  string
		want bool
	}{
		{"fmt", true},
		{"os", true},
		{"os/exec", true},
		{"crypto", true},
		{"crypto/sha1", true},
		{"crypto/internal/fips140/sha256", true},
		{"strings", true},
		{"unicode", true},
		{"unicode/utf8", false},
		{"strconv", false},
		{"os/signal", false}, // not linked today, but os would be
		{"cryptography", false},
		{"internal/reflectlite", false},
		{"github.com/spank-otel/spank-otel/internal/sha1", false},
	}
	for _, tt := range tests {
		if got := denied(tt.pkg); got != tt.want {
			t.Errorf("denied(%q) = %v, want %v", tt.pkg, got, tt.want)
		}
	}
}

// TestTaskPathDeps fails when the library links a denied package, and
// names the chain of imports that brings it in.
func TestTaskPathDeps(t *testing.T) {
	gocmd := goCommand(t)
	// One line per package: its path, then what it imports.
	cmd := exec.Command(gocmd, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	imports := map[string][]string{}
	var order []string // dependencies first, the library last
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		imports[fields[0]] = fields[1:]
		order = append(order, fields[0])
	}
	if len(order) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	root := order[len(order)-1]
	for _, pkg := range order {
		if denied(pkg) {
			t.Errorf("the library links %s: %s", pkg, strings.Join(importChain(imports, root, pkg), " -> "))
		}
	}
}

// importChain returns a shortest chain of imports from root to pkg.
func importChain(imports map[string][]string, root, pkg string) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == pkg {
			var chain []string
			for ; p != ""; p = from[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range imports[p] {
			if _, seen := from[next]; !seen {
				from[next] = p
				queue = append(queue, next)
			}
		}
	}
	return []string{root, "?", pkg}
}

// allowedInits are the package initialisers of this module that the
// library may run: the one that switches the collector off and the one
// that installs the C traceback symbolizer, both in cgo/.
var allowedInits = []string{"main.init.0", "main.init.1"}

// TestTaskPathInit fails when a package of this module needs code run at
// start, such as a table built by a function: each step's helper would run
// it. It builds the library and reads its symbols: the compiler names a
// package initialiser pkg.init, or pkg.init.N for an init function.
func TestTaskPathInit(t *testing.T) {
	lib := buildLibrary(t)
	syms := librarySymbols(t, lib)
	const module = "github.com/spank-otel/spank-otel/"
	var inits []string
	for _, sym := range syms {
		name, ok := strings.CutPrefix(sym.Name, module)
		if !ok && !strings.HasPrefix(name, "main.") || elf.ST_TYPE(sym.Info) != elf.STT_FUNC {
			continue
		}
		// After the package path: "pkg.init" or "pkg.init.N".
		_, fn, _ := strings.Cut(name[strings.LastIndex(name, "/")+1:], ".")
		if fn == "init" || strings.HasPrefix(fn, "init.") {
			inits = append(inits, name)
		}
	}
	if len(inits) == 0 {
		t.Fatalf("no initialiser found in %s: the names have changed", lib)
	}
	for _, name := range inits {
		if !slices.Contains(allowedInits, name) {
			t.Errorf("the library runs %s at start in every step's helper", name)
		}
	}
}

// TestLoadOnlyLinksTheTaskPath checks the variant make bench builds with
// -tags spankotel_loadonly: its export returns early, and it must still
// link every function the library links, or the bench would time the
// loading of a smaller library than the one installed.
func TestLoadOnlyLinksTheTaskPath(t *testing.T) {
	funcs := func(lib string) []string {
		var names []string
		for _, sym := range librarySymbols(t, lib) {
			if elf.ST_TYPE(sym.Info) == elf.STT_FUNC {
				names = append(names, sym.Name)
			}
		}
		slices.Sort(names)
		return slices.Compact(names)
	}
	lib, loadOnly := funcs(buildLibrary(t)), funcs(buildLibrary(t, "-tags", "spankotel_loadonly"))
	for _, name := range []string{"taskenv.(*Runner).Run", "taskenv.(*scratch).findGPUs", "detect/gpu.Find"} {
		if !slices.Contains(loadOnly, "github.com/spank-otel/spank-otel/"+name) {
			t.Fatalf("the load-only library does not link %s", name)
		}
	}
	for _, name := range lib {
		if _, found := slices.BinarySearch(loadOnly, name); !found {
			t.Errorf("the load-only library lacks %s", name)
		}
	}
}

// buildLibrary builds the library, with its symbols, with the extra go
// build arguments args, and returns its path.
func buildLibrary(t *testing.T, args ...string) string {
	t.Helper()
	gocmd := goCommand(t)
	lib := filepath.Join(t.TempDir(), "libspankotel.so")
	build := append([]string{"build", "-buildmode=c-shared", "-o", lib}, args...)
	cmd := exec.Command(gocmd, append(build, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return lib
}

// goCommand returns the path of the go command, which the guards of the
// library's link set need: without it they fail, for a guard that is
// skipped guards nothing.
func goCommand(t *testing.T) string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list, build or test the library: %v", err)
	}
	return gocmd
}

// librarySymbols returns the symbol table of the library lib.
func librarySymbols(t *testing.T, lib string) []elf.Symbol {
	t.Helper()
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	return syms
}
