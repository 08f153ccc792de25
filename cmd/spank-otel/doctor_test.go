package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/cmd/spank-otel/doctor"
)

func TestDoctorCommand(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	assert.NilError(t, os.WriteFile(conf, []byte("PlugStackConfig="+dir+"/plugstack.conf\n"), 0o644))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "plugstack.conf"), []byte("optional /p/other.so\n"), 0o644))

	code, stdout, stderr := invoke([]string{"doctor", "--slurm-conf", conf}, nil)
	assert.Equal(t, code, exitFail, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	assert.Assert(t, strings.HasPrefix(lines[0], "fail plugstack no line of "+dir+"/plugstack.conf loads spank_otel.so"), stdout)
	assert.Assert(t, strings.Contains(stdout, "\n"+"ok   kernel    Linux "), "the real kernel is checked: %s", stdout)

	// SLURM_CONF, as slurmstepd sets it in a task, is read when no flag says.
	code, stdout, _ = invoke([]string{"doctor", "--json"}, []string{"SLURM_CONF=" + conf})
	assert.Equal(t, code, exitFail)
	var r doctor.Report
	assert.NilError(t, json.Unmarshal([]byte(stdout), &r), stdout)
	c, ok := r.Get("plugstack")
	assert.Assert(t, ok)
	assert.Equal(t, c.Status, doctor.StatusFail)
	assert.Assert(t, !r.OK && !r.InJob)

	code, _, stderr = invoke([]string{"doctor", "extra"}, nil)
	assert.Equal(t, code, exitUsage)
	assert.Assert(t, strings.Contains(stderr, `unexpected argument "extra"`), stderr)

	code, stdout, _ = invoke([]string{"doctor", "--help"}, nil)
	assert.Equal(t, code, exitOK)
	for _, f := range []string{"-json", "-slurm-conf", "-plugstack", "-probe"} {
		assert.Assert(t, strings.Contains(stdout, f), "%s not in --help: %s", f, stdout)
	}
	code, stdout, _ = invoke([]string{"--help"}, nil)
	assert.Equal(t, code, exitOK)
	assert.Assert(t, strings.Contains(stdout, "  doctor "), "the manual page (help2man) lists doctor: %s", stdout)
}

func TestDefaultSlurmConf(t *testing.T) {
	dir := t.TempDir()
	own, cached := filepath.Join(dir, "etc", "slurm.conf"), filepath.Join(dir, "run", "slurm.conf")
	assert.Equal(t, defaultSlurmConf([]string{own, cached}), own, "neither exists")
	assert.NilError(t, os.MkdirAll(filepath.Dir(cached), 0o755))
	assert.NilError(t, os.WriteFile(cached, nil, 0o644))
	assert.Equal(t, defaultSlurmConf([]string{own, cached}), cached, "a configless node")
	assert.NilError(t, os.MkdirAll(filepath.Dir(own), 0o755))
	assert.NilError(t, os.WriteFile(own, nil, 0o644))
	assert.Equal(t, defaultSlurmConf([]string{own, cached}), own, "the node's own wins")
}
