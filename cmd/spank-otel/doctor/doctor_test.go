package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// probeOK is spank-otel-probe's report on a line that passes.
const probeOK = `lib=/lib/libspankotel.so
lib_ok=1
default=on
rank=off
exclude=
max_env=0
timeout_ms=2000
lib_status=called
msg debug helper called in 9884 us (exited with status 0)
rc=1
value=slurm.job.id=4242,slurm.job.id.raw=4242
call_status=called
`

// fakeNode is a node for Diagnose: real files for plugstack.conf and the
// plugins (so the ELF reading is real), stand-ins for the programs.
type fakeNode struct {
	dir     string
	files   map[string]string  // written under dir; "DIR" stands for it
	outputs map[string]Command // by program base name
	kernel  string
	pidfd   error
	env     []string
	ran     [][]string // every argv run
	envs    [][]string // and its environment
}

func (n *fakeNode) system(t *testing.T) System {
	files := map[string]string{}
	for name, content := range n.files {
		files[name] = strings.ReplaceAll(content, "DIR", n.dir)
	}
	writeTree(t, n.dir, files)
	return System{
		Env:               n.env,
		SlurmConf:         filepath.Join(n.dir, "slurm.conf"),
		DefaultPluginDirs: []string{filepath.Join(n.dir, "lib")},
		Euid:              0,
		ProbeUser:         65534,
		Run: func(argv, env []string) Command {
			n.ran = append(n.ran, argv)
			n.envs = append(n.envs, env)
			if c, ok := n.outputs[filepath.Base(argv[0])]; ok {
				return c
			}
			return Command{Err: errors.New("executable file not found")}
		},
		KernelRelease: func() (string, error) { return n.kernel, nil },
		PidfdOpen:     func() error { return n.pidfd },
		CgroupVersion: func() (string, error) { return "cgroup v2", nil },
	}
}

// newNode is a healthy node: pyxis, then spank-otel from an include
// directory, Slurm 26.05 everywhere.
func newNode(t *testing.T) *fakeNode {
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	assert.NilError(t, os.MkdirAll(lib, 0o755))
	buildPlugin(t, lib, "spank_otel.so", "spank-otel", 26, 5)
	buildPlugin(t, lib, "spank_pyxis.so", "pyxis", 26, 5)
	buildPlugin(t, lib, "old_spank_otel.so", "spank-otel", 25, 11)
	return &fakeNode{
		dir: dir,
		files: map[string]string{
			"slurm.conf":                       "PlugStackConfig=DIR/plugstack.conf\nSlurmdLogFile=/var/log/slurm/slurmd.log\n",
			"plugstack.conf":                   "include plugstack.conf.d/*.conf\n",
			"plugstack.conf.d/pyxis.conf":      "required DIR/lib/spank_pyxis.so\n",
			"plugstack.conf.d/spank-otel.conf": "optional DIR/lib/spank_otel.so lib=/lib/libspankotel.so\n",
			"lib/spank-otel-probe":             "#!/bin/false\n",
		},
		outputs: map[string]Command{
			"slurmd":           {Stdout: "slurm 26.05.1\n"},
			"spank-otel-probe": {Stdout: probeOK},
		},
		kernel: "6.1.0-18-amd64",
	}
}

// want is a check's expected status and a part of its message.
type want struct {
	status Status
	part   string
}

func TestDiagnose(t *testing.T) {
	jobEnv := []string{"SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURMD_NODENAME=c1", "SLURM_CLUSTER_NAME=x"}
	tests := []struct {
		name   string
		change func(n *fakeNode)
		ok     bool
		checks map[string]want
		absent []string // checks that must not run
	}{{
		name: "healthy node",
		ok:   true,
		checks: map[string]want{
			"plugstack": {StatusOK, "spank-otel.conf:1 loads DIR/lib/spank_otel.so as optional"},
			"order":     {StatusOK, "comes after pyxis (DIR/plugstack.conf.d/pyxis.conf:1)"},
			"release":   {StatusOK, "built for Slurm 26.05, this node runs 26.05.1"},
			"arguments": {StatusOK, "default=on rank=off timeout=2000 ms"},
			"library":   {StatusOK, "/lib/libspankotel.so passes the shim's checks"},
			"helper":    {StatusOK, "answered for a synthetic task"},
			"kernel":    {StatusOK, "Linux 6.1.0-18-amd64 has pidfd_open"},
			"cgroup":    {StatusInfo, "cgroup v2"},
		},
		absent: []string{"task"},
	}, {
		name:   "missing include",
		change: func(n *fakeNode) { n.files["plugstack.conf"] = "include /nonexistent/plugstack.conf.d/*.conf\n" },
		checks: map[string]want{"plugstack": {StatusFail, "no line of DIR/plugstack.conf loads spank_otel.so; include /nonexistent/plugstack.conf.d/*.conf (DIR/plugstack.conf:1) matches no file"}},
		absent: []string{"order", "release", "library", "helper"},
	}, {
		name:   "no include line",
		change: func(n *fakeNode) { n.files["plugstack.conf"] = "# nothing\n" },
		checks: map[string]want{"plugstack": {StatusFail, "it has no include line"}},
	}, {
		name:   "no plugstack.conf",
		change: func(n *fakeNode) { n.files["slurm.conf"] = "PlugStackConfig=DIR/none.conf\n" },
		checks: map[string]want{"plugstack": {StatusFail, "DIR/none.conf does not exist"}},
	}, {
		name: "listed as required",
		change: func(n *fakeNode) {
			n.files["plugstack.conf.d/spank-otel.conf"] = "required DIR/lib/spank_otel.so lib=/lib/libspankotel.so\n"
		},
		checks: map[string]want{
			"plugstack": {StatusFail, "spank-otel.conf:1 lists DIR/lib/spank_otel.so as required"},
			"library":   {StatusOK, ""},
		},
	}, {
		name: "listed twice",
		change: func(n *fakeNode) {
			n.files["plugstack.conf"] = "include plugstack.conf.d/*.conf\noptional spank_otel.so\n"
		},
		checks: map[string]want{"plugstack": {StatusFail, "listed 2 times (DIR/plugstack.conf.d/spank-otel.conf:1, DIR/plugstack.conf:2)"}},
	}, {
		name: "before pyxis",
		change: func(n *fakeNode) {
			n.files["plugstack.conf"] = "optional DIR/lib/spank_otel.so\ninclude plugstack.conf.d/pyxis.conf\n"
			delete(n.files, "plugstack.conf.d/spank-otel.conf")
		},
		checks: map[string]want{
			"plugstack": {StatusOK, "plugstack.conf:1 loads"},
			"order":     {StatusWarn, "spank-otel comes before pyxis (DIR/plugstack.conf.d/pyxis.conf:1)"},
		},
	}, {
		name: "no container plugin",
		change: func(n *fakeNode) {
			delete(n.files, "plugstack.conf.d/pyxis.conf")
		},
		ok:     true,
		checks: map[string]want{"order": {StatusInfo, "no container plugin"}},
	}, {
		name: "a shim of another release",
		change: func(n *fakeNode) {
			n.files["plugstack.conf.d/spank-otel.conf"] = "optional DIR/lib/old_spank_otel.so\n"
		},
		checks: map[string]want{"release": {StatusFail, "old_spank_otel.so was built for Slurm 25.11, this node runs 26.05.1 (slurmd -V): " +
			"Slurm skips it (\"Incompatible Slurm plugin\""}},
	}, {
		name: "a login node has scontrol, no slurmd",
		change: func(n *fakeNode) {
			delete(n.outputs, "slurmd")
			n.outputs["scontrol"] = Command{Stdout: "slurm 26.05.0\n"}
		},
		ok:     true,
		checks: map[string]want{"release": {StatusOK, "this node runs 26.05.0"}},
	}, {
		name: "no plugin file",
		change: func(n *fakeNode) {
			n.files["plugstack.conf.d/spank-otel.conf"] = "optional DIR/lib/gone/spank_otel.so\n"
		},
		checks: map[string]want{
			"plugstack": {StatusOK, ""},
			"release":   {StatusFail, "cannot read the plugin DIR/lib/gone/spank_otel.so"},
			"library":   {StatusFail, "DIR/lib/gone/spank-otel-probe is missing"},
		},
	}, {
		name: "the shim refuses lib=",
		change: func(n *fakeNode) {
			n.outputs["spank-otel-probe"] = Command{ExitCode: 1, Stdout: strings.Replace(probeOK, "lib_status=called\n",
				"msg error refusing to load /lib/libspankotel.so: directory /lib is writable by group or others (mode 0775)\nlib_status=refused\n", 1)}
		},
		checks: map[string]want{
			"arguments": {StatusOK, ""},
			"library":   {StatusFail, "the shim refuses /lib/libspankotel.so: refusing to load /lib/libspankotel.so: directory /lib is writable by group or others (mode 0775)"},
		},
		absent: []string{"helper"},
	}, {
		name: "no library",
		change: func(n *fakeNode) {
			n.outputs["spank-otel-probe"] = Command{ExitCode: 2, Stdout: strings.Replace(probeOK, "lib_status=called\n",
				"msg error cannot open /lib/libspankotel.so: No such file or directory\nlib_status=open-failed\n", 1)}
		},
		checks: map[string]want{"library": {StatusFail, "cannot open /lib/libspankotel.so: No such file or directory"}},
	}, {
		name: "bad arguments",
		change: func(n *fakeNode) {
			n.outputs["spank-otel-probe"] = Command{Stdout: "msg error timeout=soon: expected milliseconds from 1 to 60000; using 2000\n" +
				"msg info ignoring unknown plugstack.conf argument \"x=1\"\n" + probeOK}
		},
		checks: map[string]want{
			"arguments": {StatusWarn, "timeout=soon: expected milliseconds from 1 to 60000; using 2000; ignoring unknown"},
			"library":   {StatusOK, ""},
		},
	}, {
		name: "the helper fails",
		change: func(n *fakeNode) {
			n.outputs["spank-otel-probe"] = Command{ExitCode: 7, Stdout: strings.Replace(probeOK, "rc=1\nvalue=slurm.job.id=4242,slurm.job.id.raw=4242\ncall_status=called\n",
				"msg error the step's helper did not answer within 2000 ms (timeout=)\ncall_status=timeout\n", 1)}
		},
		checks: map[string]want{"helper": {StatusFail, "no value for a synthetic task: the step's helper did not answer within 2000 ms"}},
	}, {
		name:   "an old kernel",
		change: func(n *fakeNode) { n.kernel = "4.18.0-553.el8_10.x86_64" },
		checks: map[string]want{"kernel": {StatusFail, "Linux 4.18.0-553.el8_10.x86_64: the step's helper needs waitid on a pidfd, Linux 5.4 or later"}},
	}, {
		name:   "a kernel with pidfd_open but not waitid on a pidfd (5.3)",
		change: func(n *fakeNode) { n.kernel = "5.3.18-lp152.19-default" },
		checks: map[string]want{"kernel": {StatusFail, "Linux 5.3.18-lp152.19-default: the step's helper needs waitid on a pidfd, Linux 5.4 or later"}},
	}, {
		name:   "a kernel without close_range (Ubuntu 20.04's 5.4): enough",
		change: func(n *fakeNode) { n.kernel = "5.4.0-216-generic" },
		ok:     true,
		checks: map[string]want{"kernel": {StatusOK, "Linux 5.4.0-216-generic has pidfd_open"}},
	}, {
		name:   "pidfd_open filtered",
		change: func(n *fakeNode) { n.pidfd = errors.New("operation not permitted") },
		checks: map[string]want{"kernel": {StatusFail, "but pidfd_open fails (operation not permitted)"}},
	}, {
		name: "in a job: attributes there",
		change: func(n *fakeNode) {
			n.env = append(jobEnv, "OTEL_RESOURCE_ATTRIBUTES=slurm.job.id=77,slurm.job.id.raw=77")
		},
		ok:     true,
		checks: map[string]want{"task": {StatusOK, "this task got its attributes (slurm.job.id=77)"}},
	}, {
		name:   "in a job: turned off",
		change: func(n *fakeNode) { n.env = append(jobEnv, OptionEnv+"=off") },
		ok:     true,
		checks: map[string]want{"task": {StatusInfo, "this task has no attributes of job 77: the job or step turned them off (--otel-attrs=off)"}},
	}, {
		name: "in a job: default=off",
		change: func(n *fakeNode) {
			n.env = jobEnv
			n.outputs["spank-otel-probe"] = Command{Stdout: strings.Replace(probeOK, "default=on", "default=off", 1)}
		},
		ok:     true,
		checks: map[string]want{"task": {StatusInfo, "default=off and the job did not ask with --otel-attrs=on"}},
	}, {
		name: "in a job: default=off, asked for, not got",
		change: func(n *fakeNode) {
			n.env = append(jobEnv, OptionEnv+"=on")
			n.outputs["spank-otel-probe"] = Command{Stdout: strings.Replace(probeOK, "default=on", "default=off", 1)}
		},
		checks: map[string]want{"task": {StatusFail, "cause: none visible from inside the job; slurmd's log on c1 (/var/log/slurm/slurmd.log) says why"}},
	}, {
		name: "in a job: the variable over its limit",
		change: func(n *fakeNode) {
			n.env = append(jobEnv, "OTEL_RESOURCE_ATTRIBUTES=big="+strings.Repeat("x", 131072))
		},
		checks: map[string]want{"task": {StatusFail, "131072"}},
	}, {
		name: "in a job: the plugin of another release",
		change: func(n *fakeNode) {
			n.env = jobEnv
			n.files["plugstack.conf.d/spank-otel.conf"] = "optional DIR/lib/old_spank_otel.so\n"
			delete(n.files, "slurm.conf")
			n.files["plugstack.conf"] = "include plugstack.conf.d/*.conf\n"
		},
		checks: map[string]want{"task": {StatusFail, "cause: the release check above; slurmd's log on c1 (the journal (journalctl -u slurmd))"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			if tc.change != nil {
				tc.change(n)
			}
			sys := n.system(t)
			if _, ok := n.files["slurm.conf"]; !ok {
				sys.Plugstack = filepath.Join(n.dir, "plugstack.conf")
			}
			r := Diagnose(sys)
			for name, w := range tc.checks {
				c, ok := r.Get(name)
				assert.Assert(t, ok, "no %s check in %+v", name, r.Checks)
				assert.Equal(t, c.Status, w.status, "%s: %s", name, c.Message)
				part := strings.ReplaceAll(w.part, "DIR", n.dir)
				assert.Assert(t, strings.Contains(c.Message, part), "%s: %q\nwant a part %q", name, c.Message, part)
			}
			for _, name := range tc.absent {
				_, ok := r.Get(name)
				assert.Assert(t, !ok, "%s ran: %+v", name, r.Checks)
			}
			assert.Equal(t, r.OK, tc.ok, "%+v", r.Checks)
			assert.Equal(t, r.InJob, n.env != nil)
		})
	}
}

func TestDiagnoseRunsProbeAsTask(t *testing.T) {
	n := newNode(t)
	Diagnose(n.system(t))
	i := slices.IndexFunc(n.ran, func(argv []string) bool { return filepath.Base(argv[0]) == ProbeFile })
	assert.Assert(t, i >= 0, "the probe did not run: %q", n.ran)
	assert.DeepEqual(t, n.ran[i][1:], []string{"--call", "--as-user", "65534", "--", "lib=/lib/libspankotel.so"})
	assert.Assert(t, slices.Contains(n.envs[i], "SLURM_JOB_ID="+SyntheticJobID), "%q", n.envs[i])
	assert.Assert(t, slices.Contains(n.envs[i], "SLURM_STEP_ID=0"), "%q", n.envs[i])
}

func TestParseProbe(t *testing.T) {
	r, err := ParseProbe("msg error lib=x is not an absolute path; the plugin does nothing\nlib=/d.so\nlib_ok=0\ndefault=on\nexclude=a,b\nmax_env=0\ntimeout_ms=100\n" +
		"lib_status=refused\n")
	assert.NilError(t, err)
	assert.DeepEqual(t, r.ArgProblems(), []string{"lib=x is not an absolute path; the plugin does nothing"})
	assert.DeepEqual(t, r.Errors(), r.ArgProblems())
	assert.Equal(t, r.LibStatus, "refused")
	assert.Equal(t, r.TimeoutMS(), 100)
	assert.Equal(t, r.Args["exclude"], "a,b")
	assert.Equal(t, r.CallStatus, "")

	_, err = ParseProbe("Usage: spank-otel-probe\n")
	assert.ErrorContains(t, err, "no lib_status")
}

func TestKernelAtLeast(t *testing.T) {
	for rel, want := range map[string]bool{"5.3.0": true, "5.2.21": false, "4.18.0-553.el8": false, "6.1.0-18-amd64": true, "10.0": true, "x": false} {
		assert.Equal(t, kernelAtLeast(rel, 5, 3), want, rel)
	}
}
