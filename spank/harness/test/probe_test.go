//go:build harness

package test

import (
	"flag"
	"testing"
)

// The doctor's probe (spank/probe_main.c) is checked here, on the lab's
// files, because its verdicts are the shim's own (args.c, libfile.c, the
// helper); cmd/spank-otel/doctor reads its report.
func init() {
	files["probe"] = flag.String("probe", "", "spank-otel-probe, spank-otel doctor's checks (make -C spank probe)")
}

func TestProbe(t *testing.T) {
	l := newLab(t)
	probe := need(t, "probe")
	real := l.lib(t, "real")
	l.mkdir(t, "gw", 0o775)
	gw := l.copy(t, real, "gw/lib.so")
	l.chmod(t, "gw", 0o775)
	env := []string{"PATH=/usr/bin", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURM_CLUSTER_NAME=doctor"}
	probeRun := func(args ...string) func(t testing.TB) result {
		return func(t testing.TB) result { return run(env, probe, args...) }
	}
	runChecks(t, []runCheck{
		{name: "probe: a library that passes, the arguments as the shim reads them",
			run:  probeRun("--", "lib="+real, "default=off", "timeout=150", "exclude=a,b"),
			want: []string{"^lib=" + real + "$", "^lib_ok=1$", "^default=off$", "^timeout_ms=150$", "^exclude=a,b$", "^lib_status=called$", "!^msg error", "!^call_status="}},
		{name: "probe: a relative lib= is refused by args.c",
			run: probeRun("lib=relative/lib.so"), code: 1,
			want: []string{"^msg error lib=relative/lib.so is not an absolute path; the plugin does nothing$", "^lib_ok=0$", "^lib_status=refused$"}},
		{name: "probe: bad and unknown arguments are named",
			run:  probeRun("lib="+real, "timeout=soon", "x=1"),
			want: []string{"^msg error timeout=soon: expected milliseconds", `^msg info ignoring unknown plugstack.conf argument "x=1"`, "^timeout_ms=2000$", "^lib_status=called$"}},
		{name: "probe: a group-writable directory is refused by libfile.c",
			run: probeRun("lib=" + gw), code: 1,
			want: []string{"^msg error refusing to load " + gw + ": directory " + l.path("gw") + " is writable by group or others \\(mode 0775\\)$", "^lib_status=refused$"}},
		{name: "probe: a missing library",
			run: probeRun("lib=" + l.path("none/lib.so")), code: 2,
			want: []string{"^msg error cannot open " + l.path("none/lib.so") + ": No such file or directory$", "^lib_status=open-failed$"}},
		{name: "probe: --call runs the library as the user, on the probe's environment",
			run:  probeRun("--call", "--as-user", "65534", "--", "lib="+real),
			want: []string{"^lib_status=called$", "^rc=1$", "^value=.*slurm\\.job\\.id\\.raw=4242", "^call_status=called$"}},
		{name: "probe: --call: the step's helper beside the library, checked, started and asked",
			run: probeRun("--call", "--as-user", "65534", "--", "lib="+real),
			want: []string{"^step_helper=" + l.path("real/spank-otel-helper") + "$", "^step_helper_status=called$",
				"^rc=1$", "^value=.*slurm\\.job\\.id\\.raw=4242", "^call_status=called$", "!^helper="}},
		// An old plugstack.conf line: the same, and one info line.
		{name: "probe: helper=task: one info line, the step's helper asked",
			run: probeRun("--call", "--as-user", "65534", "--", "lib="+real, "helper=task"),
			want: []string{"^msg info helper=task: the task's helper was removed; the step's helper serves every task \\(the argument can go\\)$",
				"^step_helper_status=called$", "^call_status=called$", "!^msg error"}},
		{name: "probe: helper=step accepted silently, any other value an error line",
			run:  probeRun("lib="+real, "helper=step", "helper=fork"),
			want: []string{"^msg error helper=fork: ignored \\(the step's helper serves every task\\)$", "!^msg info", "^lib_status=called$"}},
		// srun spank-otel doctor in a job: the probe runs as the user, who
		// cannot set SECBIT_NOROOT and needs not.
		{name: "probe: --call as a user: the step's helper started and asked without root",
			run: func(t testing.TB) result {
				return run(env, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", probe, "--call", "--", "lib="+real)
			},
			want: []string{"^step_helper_status=called$", "^rc=1$", "^call_status=called$", "!^msg error"}},
		{name: "probe: --call without spank-otel-helper beside the library: named, not called",
			run: func(t testing.TB) result {
				l.mkdir(t, "nohelper", 0o755)
				lib := l.copy(t, real, "nohelper/lib.so")
				return run(env, probe, "--call", "--as-user", "65534", "--", "lib="+lib)
			}, code: 2,
			want: []string{"^lib_status=called$", "^msg error cannot open " + l.path("nohelper/spank-otel-helper") + ": No such file or directory$",
				"^step_helper_status=open-failed$", "^call_status=open-failed$", "!^rc="}},
		{name: "probe: --call with the fake library's crash",
			run: func(t testing.TB) result {
				return run(append(env, "FAKE_CRASH=1"), probe, "--call", "--as-user", "65534", "--", "lib="+l.lib(t, "fake"))
			},
			code: 8, want: []string{"^msg error the step's helper was killed by signal 6", "^call_status=helper-died$"}},
		{name: "probe: usage", run: probeRun("--as-user", "x"), code: 64},
	})
}
