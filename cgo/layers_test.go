package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/spank-otel/spank-otel/"

// TestLayers checks every package of the module against the code map of
// docs/design.md: each is in the table, and each import of the module's
// own packages is of a lower layer.
func TestLayers(t *testing.T) {
	layer := codeMap(t)
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		name := strings.TrimPrefix(p.ImportPath, module)
		own, ok := layer[name]
		if !ok {
			t.Errorf("%s is not in docs/design.md's code map", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if l, ok := layer[dep]; ok && l >= own {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", name, own, dep, l)
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list gave %d packages", n)
	}
}

// codeMap reads the table of docs/design.md's "Code map": a row is
// "| layer | `pkg`, `pkg` | what |".
func codeMap(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layer := map[string]int{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Code map"
			continue
		}
		cells := strings.Split(line, "|")
		if !in || len(cells) < 4 {
			continue
		}
		l, err := strconv.Atoi(strings.TrimSpace(cells[1]))
		if err != nil {
			continue // the header and its rule
		}
		for _, pkg := range strings.Split(cells[2], ",") {
			layer[strings.Trim(strings.TrimSpace(pkg), "`")] = l
		}
	}
	if len(layer) == 0 {
		t.Fatal("docs/design.md has no code map table")
	}
	return layer
}
