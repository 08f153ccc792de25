package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// writeTree creates files (path relative to dir: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// summary is a plugin line as "file:line kind resolved args", paths
// relative to dir.
func summary(dir string, p Plugin) string {
	kind := "optional"
	if p.Required {
		kind = "required"
	}
	rel := func(s string) string { return strings.TrimPrefix(s, dir+"/") }
	return strings.TrimSpace(strings.Join(append([]string{fmt.Sprintf("%s:%02d", rel(p.File), p.Line), kind, rel(p.Resolved)}, p.Args...), " "))
}

func TestReadPlugstack(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		dirs     []string // plugin dirs, relative to the test's directory
		plugins  []string // summary of each plugin line, in load order
		includes []string // "pattern -> n matches"
		problems []string // substrings, one per problem
	}{{
		name:    "plugins inline, comments and blanks",
		files:   map[string]string{"plugstack.conf": "# spank\n\noptional /p/spank_otel.so lib=/l.so\t default=off # why\nrequired  /p/other.so\n"},
		plugins: []string{"plugstack.conf:03 optional /p/spank_otel.so lib=/l.so default=off", "plugstack.conf:04 required /p/other.so"},
	}, {
		name: "an include glob is read in sorted order, where the include stands",
		files: map[string]string{
			"plugstack.conf":                      "optional /p/first.so\ninclude " + "DIR/plugstack.conf.d/*.conf\noptional /p/last.so\n",
			"plugstack.conf.d/zz-spank-otel.conf": "optional /p/spank_otel.so\n",
			"plugstack.conf.d/pyxis.conf":         "required /p/spank_pyxis.so\n",
			"plugstack.conf.d/README":             "optional /p/not-read.so\n",
		},
		plugins: []string{
			"plugstack.conf:01 optional /p/first.so",
			"plugstack.conf.d/pyxis.conf:01 required /p/spank_pyxis.so",
			"plugstack.conf.d/zz-spank-otel.conf:01 optional /p/spank_otel.so",
			"plugstack.conf:03 optional /p/last.so",
		},
		includes: []string{"DIR/plugstack.conf.d/*.conf -> 2"},
	}, {
		name: "a relative include is taken from the including file's directory",
		files: map[string]string{
			"plugstack.conf":      "include conf.d/*.conf\n",
			"conf.d/a.conf":       "include ../more/b.conf\n",
			"more/b.conf":         "optional /p/spank_otel.so\n",
			"elsewhere/more/b.co": "",
		},
		plugins:  []string{"more/b.conf:01 optional /p/spank_otel.so"},
		includes: []string{"DIR/conf.d/*.conf -> 1", "DIR/more/b.conf -> 1"},
	}, {
		name:     "an include that matches nothing is no error, as in Slurm",
		files:    map[string]string{"plugstack.conf": "include /nonexistent/plugstack.conf.d/*.conf\n"},
		includes: []string{"/nonexistent/plugstack.conf.d/*.conf -> 0"},
	}, {
		name:  "a relative plugin path is looked up in PluginDir, first match wins",
		files: map[string]string{"plugstack.conf": "optional spank_otel.so\noptional missing.so\n", "d2/spank_otel.so": "x", "d3/spank_otel.so": "x"},
		dirs:  []string{"d1", "d2", "d3"},
		plugins: []string{
			"plugstack.conf:01 optional d2/spank_otel.so",
			"plugstack.conf:02 optional missing.so",
		},
	}, {
		name:     "lines Slurm ignores are problems",
		files:    map[string]string{"plugstack.conf": "optinal /p/spank_otel.so\nrequired\noptional /p/ok.so\n"},
		plugins:  []string{"plugstack.conf:03 optional /p/ok.so"},
		problems: []string{`plugstack.conf:1: invalid line, ignored by Slurm: "optinal"`, "plugstack.conf:2: invalid line"},
	}, {
		name:     "an include loop stops",
		files:    map[string]string{"plugstack.conf": "include plugstack.conf\n"},
		includes: make([]string, maxDepth+1),
		problems: []string{"included more than 16 levels deep"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			for name, content := range tc.files {
				files[name] = strings.ReplaceAll(content, "DIR", dir)
			}
			writeTree(t, dir, files)
			var dirs []string
			for _, d := range tc.dirs {
				dirs = append(dirs, filepath.Join(dir, d))
			}
			s, err := ReadPlugstack(filepath.Join(dir, "plugstack.conf"), dirs)
			assert.NilError(t, err)
			var got []string
			for _, p := range s.Plugins {
				got = append(got, summary(dir, p))
			}
			assert.DeepEqual(t, got, tc.plugins)
			if tc.name == "an include loop stops" {
				assert.Equal(t, len(s.Includes), maxDepth+1)
			} else {
				var incs []string
				for _, inc := range s.Includes {
					incs = append(incs, strings.ReplaceAll(inc.Pattern, dir, "DIR")+" -> "+fmt.Sprint(len(inc.Matches)))
				}
				assert.DeepEqual(t, incs, tc.includes)
			}
			assert.Equal(t, len(s.Problems), len(tc.problems), "%q", s.Problems)
			for i, want := range tc.problems {
				assert.Assert(t, strings.Contains(s.Problems[i], want), "problem %d: %q, want %q", i, s.Problems[i], want)
			}
		})
	}
}

func TestReadPlugstackMissing(t *testing.T) {
	s, err := ReadPlugstack(filepath.Join(t.TempDir(), "plugstack.conf"), nil)
	assert.NilError(t, err, "Slurm reads a missing plugstack.conf as an empty one")
	assert.Equal(t, len(s.Files), 0)
}

func TestReadPlugstackLongLine(t *testing.T) {
	// fgets with a 4096-byte buffer reads a longer line as two: the rest
	// is a line of its own, here an invalid one.
	dir := t.TempDir()
	line := "optional /p/spank_otel.so " + strings.Repeat("a", maxLine) + " optional /p/x.so\n"
	writeTree(t, dir, map[string]string{"plugstack.conf": line})
	s, err := ReadPlugstack(filepath.Join(dir, "plugstack.conf"), nil)
	assert.NilError(t, err)
	assert.Equal(t, len(s.Plugins), 1)
	assert.Equal(t, s.Plugins[0].Path, "/p/spank_otel.so")
	assert.Equal(t, len(s.Problems), 1, "%q", s.Problems)
}

func TestReadSlurmConf(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"slurm.conf": "ClusterName=x # c\nPLUGINDIR=/a:/b\nSlurmdLogFile = /var/log/slurmd.log\nplugstackconfig=/etc/x/plugstack.conf\nPluginDir=/second\n"})
	c := ReadSlurmConf(filepath.Join(dir, "slurm.conf"), []string{"/default"})
	assert.DeepEqual(t, c, SlurmConf{Path: filepath.Join(dir, "slurm.conf"), PlugStack: "/etc/x/plugstack.conf",
		PluginDirs: []string{"/a", "/b"}, SlurmdLogFile: "/var/log/slurmd.log"})

	writeTree(t, dir, map[string]string{"bare/slurm.conf": "ClusterName=x\n"})
	c = ReadSlurmConf(filepath.Join(dir, "bare", "slurm.conf"), []string{"/default"})
	assert.Equal(t, c.PlugStack, filepath.Join(dir, "bare", "plugstack.conf"), "the default is beside slurm.conf")
	assert.DeepEqual(t, c.PluginDirs, []string{"/default"})

	c = ReadSlurmConf(filepath.Join(dir, "none", "slurm.conf"), nil)
	assert.Equal(t, c.Path, "")
	assert.Equal(t, c.PlugStack, filepath.Join(dir, "none", "plugstack.conf"))
}
