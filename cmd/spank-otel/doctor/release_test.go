package doctor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseRelease(t *testing.T) {
	tests := []struct {
		out     string
		want    Release
		wantErr bool
	}{
		{out: "slurm 26.05.1\n", want: Release{26, 5, 1}},
		{out: "slurm-wlm 24.11.5\n", want: Release{24, 11, 5}},
		{out: "slurm 25.11.0-0rc1\n", want: Release{25, 11, 0}},
		{out: "slurmd: error: no slurm.conf\n", wantErr: true},
		{out: "", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseRelease(tc.out)
		if tc.wantErr {
			assert.Assert(t, err != nil, "%q", tc.out)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got, tc.want)
	}
}

func TestReleaseLoads(t *testing.T) {
	node := Release{26, 5, 1}
	assert.Assert(t, node.Loads(Release{26, 5, 0}), "a micro release loads plugins of its series")
	assert.Assert(t, !node.Loads(Release{25, 11, 7}))
	assert.Assert(t, !node.Loads(Release{26, 11, 1}))
	assert.Equal(t, node.Series(), "26.05")
	assert.Equal(t, node.String(), "26.05.1")
}

// buildPlugin compiles a shared object with the symbols SPANK_PLUGIN
// defines (spank.h), as Slurm's headers of release major.minor would.
func buildPlugin(t *testing.T, dir, file, name string, major, minor int) string {
	t.Helper()
	src := filepath.Join(dir, file+".c")
	code := fmt.Sprintf("const char plugin_name[] = %q;\nconst char plugin_type[] = \"spank\";\n"+
		"const unsigned int plugin_version = (%d << 16) + (%d << 8) + 3;\n", name, major, minor)
	assert.NilError(t, os.WriteFile(src, []byte(code), 0o644))
	out := filepath.Join(dir, file)
	if b, err := exec.Command("cc", "-shared", "-fPIC", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("cc (the doctor's tests build small plugins with it): %v\n%s", err, b)
	}
	return out
}

func TestReadPluginInfo(t *testing.T) {
	dir := t.TempDir()
	so := buildPlugin(t, dir, "spank_otel.so", "spank-otel", 25, 11)
	info, err := ReadPluginInfo(so)
	assert.NilError(t, err)
	assert.DeepEqual(t, info, PluginInfo{Name: "spank-otel", Release: Release{25, 11, 3}})

	notPlugin := filepath.Join(dir, "lib.c")
	assert.NilError(t, os.WriteFile(notPlugin, []byte("int f(void) { return 1; }\n"), 0o644))
	assert.NilError(t, exec.Command("cc", "-shared", "-fPIC", "-o", notPlugin+".so", notPlugin).Run())
	_, err = ReadPluginInfo(notPlugin + ".so")
	assert.ErrorContains(t, err, "no plugin_version symbol")

	_, err = ReadPluginInfo(notPlugin)
	assert.ErrorContains(t, err, "bad magic", "a file that is not ELF")
	_, err = ReadPluginInfo(filepath.Join(dir, "missing.so"))
	assert.Assert(t, os.IsNotExist(err))
}

func ExampleParseRelease() {
	node, _ := ParseRelease("slurm 26.05.1")
	plugin := Release{Major: 25, Minor: 11}
	fmt.Println(node.Series(), node.Loads(plugin))
	// Output: 26.05 false
}
