//go:build harness

package test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// TestShimFile: what spank_otel.so exports, links and how it is hardened.
func TestShimFile(t *testing.T) {
	runChecks(t, []runCheck{
		// slurm_spank_init_failure_mode from Slurm 25.05 on (the package tests
		// check which releases get it).
		{name: "shim: exports only Slurm's entry points",
			run: func(t testing.TB) result {
				r := run(nil, "nm", "-D", "--defined-only", need(t, "shim"))
				if r.code != 0 {
					return r
				}
				var syms []string
				for _, line := range r.lines() {
					if f := strings.Fields(line); len(f) >= 3 {
						syms = append(syms, f[2])
					} else {
						syms = append(syms, "")
					}
				}
				sort.Strings(syms)
				return result{0, strings.Join(syms, " ") + " "}
			},
			want: []string{`^plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init (slurm_spank_init_failure_mode )?slurm_spank_init_post_opt slurm_spank_task_init slurm_spank_task_init_privileged slurm_spank_user_init spank_plugin_version $`}},
		{name: "shim: BIND_NOW, RELRO, non-executable stack, needs only libc",
			run: func(t testing.TB) result { return run(nil, "readelf", "-dlW", need(t, "shim")) },
			want: []string{`BIND_NOW`, `GNU_RELRO`, `GNU_STACK +(0x0+ +){5}RW `, `\(NEEDED\).*\[libc\.so\.6\]`,
				`!\(NEEDED\).*\[(libspankotel|libgo|libdl|libpthread)`}},
	})
}

// mockCase is a run of spank_otel.so in spank-otel-mockslurm, which exits 0
// whatever the plugin does; the checks are on what it reports.
type mockCase struct {
	name string
	ctx  string                    // the SPANK context; remote when empty
	lib  func(t testing.TB) string // the plugstack argument lib=, first; none when nil
	args []string
	want []string
	then []followUp
}

// TestShim: the plugin itself, in a stand-in for Slurm.
func TestShim(t *testing.T) {
	l := newLab(t)
	kind := func(k string) func(t testing.TB) string { return func(t testing.TB) string { return l.lib(t, k) } }
	fake := kind("fake")
	// beside is a file next to the fake library, with data and mode.
	beside := func(name string, data []byte, mode os.FileMode) func(t testing.TB) string {
		return func(t testing.TB) string {
			l.lib(t, "fake")
			p := l.write(t, "fake/"+name, data)
			l.chmod(t, "fake/"+name, mode)
			return p
		}
	}
	missing := func(testing.TB) string { return l.path("fake/missing.so") }
	watch := []string{"--watch-lib", l.dir + "/"}
	job := []string{"--env", "SLURM_JOB_ID=77"}
	written := `^env=OTEL_RESOURCE_ATTRIBUTES=fake.job=77$`
	lines := func(pattern string, want int, what string) func(t testing.TB, r result) {
		return func(t testing.TB, r result) {
			if n := r.count(pattern); n != want {
				t.Errorf("%d %s, want %d", n, what, want)
				r.show(t)
			}
		}
	}
	cases := []mockCase{
		{name: "shim: plugin name, type and version; option registered with its usage", ctx: "local",
			want: []string{`^plugin_name=spank-otel$`, `^plugin_type=spank$`, `^plugin_version_ok=yes$`, `^init=0$`,
				`^options=--otel-attrs=on\|off has_arg=1 usage=Write this job's Slurm identity into OTEL_RESOURCE_ATTRIBUTES of every task \(default here: on\)$`}},
		{name: "shim: with default=off the help says the default is off", ctx: "local", args: []string{"--arg", "default=off"},
			want: []string{`usage=.*\(default here: off\)$`, `!^log `}},
	}
	for _, ctx := range []string{"local", "allocator"} {
		cases = append(cases, mockCase{name: "shim: " + ctx + ": --otel-attrs=maybe rejected, naming option and values",
			ctx: ctx, args: []string{"--option", "maybe"},
			want: []string{`^option_cb=-1$`,
				`log error spank-otel: --otel-attrs: invalid value "maybe"; accepted values are on and off`}})
		for _, v := range []string{"on", "off", "OFF"} {
			cases = append(cases, mockCase{name: "shim: " + ctx + ": --otel-attrs=" + v + " accepted",
				ctx: ctx, args: []string{"--option", v}, want: []string{`^option_cb=0$`, `!log error`}})
		}
	}
	cases = append(cases, []mockCase{
		{name: "shim: local context says nothing about plugstack arguments", ctx: "local",
			args: []string{"--arg", "lib=relative.so", "--arg", "bogus"}, want: []string{`^init=0$`, `!^log `}},
		{name: "shim: remote: every task gets the value; neither the parent nor a task maps the library", lib: fake,
			args: append([]string{"--arg", "bogus=1", "--env", "SLURM_JOB_ID=77", "--argv", "/bin/true", "--tasks", "2"}, watch...),
			want: []string{`^init=0$`, `^init_post_opt=0$`, `^exit=0$`, `^parent_mapped_lib=no$`,
				`^task_init_privileged=0$`, `!^task_mapped_lib=yes`, `^task_mapped_lib=no$`,
				`!^task_threads=[^1]`, `!^task_children=[^0]`,
				`log info spank-otel: ignoring unknown plugstack.conf argument "bogus=1"`, `!_SLURM_SPANK_OPTION`},
			then: []followUp{
				{"shim: remote: both tasks set OTEL_RESOURCE_ATTRIBUTES", lines(written, 2, "tasks set it")},
				{"shim: unknown argument logged once per step", lines(`ignoring unknown`, 1, "lines")}}},
		{name: "shim: the job's uid unknown: no helper, one error, and the task keeps no descriptor of the library", lib: fake,
			args: append(append(job, "--fail-item", "uid"), watch...),
			want: []string{`log error spank-otel: cannot read the job's uid and gid`, `^task_lib_fd=no$`, `^task_init=0$`, `!^env=OTEL`}},
		// The node's files are recorded for a step that has GPUs on the
		// node only (this machine has no driver: recorded as such).
		{name: "shim: a step without GPUs on the node records none of the node's files", lib: fake,
			args: job, want: []string{`^user_init=0$`, `log debug spank-otel: node files: not recorded, the step has no GPUs on this node$`, written}},
		{name: "shim: a step with GPUs on the node looks for them", lib: fake,
			args: append(job, "--env", "SLURM_STEP_GPUS=0,1"),
			want: []string{`^user_init=0$`, `log debug spank-otel: node files: [1-9][0-9]* recorded for the tasks \([0-9]+ bytes\) in [0-9]+ us; no NVIDIA GPU on this node$`, written}},
		// Another plugin between the callbacks closes the helper's
		// descriptors and opens /dev/null at their numbers: the task
		// must not send its environment to /dev/null, nor signal or wait
		// on what is not its helper, which ends with the task it watches
		// (the suite ends by checking that nothing it started runs).
		{name: "shim: the task's socket to the step's helper replaced by another plugin: one error, nothing written", lib: fake,
			args: append(job, "--clobber-fds"),
			want: []string{`log error spank-otel: a plugin that ran between task_init_privileged and task_init closed or replaced the socket [0-9]+ to the step's helper; OTEL_RESOURCE_ATTRIBUTES left unchanged`,
				`^task_init=0$`, `!^env=OTEL`}},
		{name: "shim: the task keeps no descriptor of the library after a normal call", lib: fake,
			args: append(job, watch...), want: []string{`^task_lib_fd=no$`, written}},
		{name: "shim: the budget's inputs: the stack limit and the task's arguments", lib: fake,
			args: append(job, "--argv", "/bin/true", "--argv", "x"),
			want: []string{fmt.Sprintf("max_env=0 stack=%d argc=2 argv_bytes=12 ", stackLimit(t))}},
		{name: "shim: the stack limit follows the propagated SLURM_RLIMIT_STACK", lib: fake,
			args: append(job, "--env", "SLURM_RLIMIT_STACK=U1048576", "--argv", "/bin/true"),
			want: []string{"max_env=0 stack=1048576 argc=1 argv_bytes=10 "}},
		{name: "shim: a larger SLURM_RLIMIT_STACK does not raise it", lib: fake,
			args: append(job, "--env", fmt.Sprintf("SLURM_RLIMIT_STACK=%d", stackLimit(t)+4096), "--argv", "/bin/true"),
			want: []string{fmt.Sprintf("max_env=0 stack=%d argc=1 ", stackLimit(t))}},
		{name: "shim: the step id Slurm gives goes to the library", lib: fake,
			args: append([]string{"--step-id", "5"}, job...), want: []string{" flags=1 step=5 "}},
		{name: "shim: rank=on asks the library for the rank keys", lib: fake,
			args: append([]string{"--arg", "rank=on", "--step-id", "5"}, job...), want: []string{" flags=3 step=5 "}},
		{name: "shim: --otel-rank (no value) asks for them", lib: fake,
			args: append([]string{"--option", "otel-rank=", "--step-id", "5"}, job...), want: []string{" flags=3 step=5 ", "!option_cb=-1"}},
		{name: "shim: --otel-rank as Slurm passes a missing value to srun in a job, \"(null)\": on", lib: fake,
			args: append([]string{"--option", "otel-rank=(null)", "--step-id", "5"}, job...), want: []string{" flags=3 step=5 ", "!option_cb=-1"}},
		// A user's option value is quoted in slurmd's log: a newline in it
		// must not start a line of its own.
		{name: "shim: remote: an invalid value with a newline is logged on one line", lib: fake,
			args: append([]string{"--option", "on\nerror: forged line"}, job...),
			want: []string{`log error spank-otel: --otel-attrs: ignoring invalid value "on\?error: forged line"`, `!^error: forged line`}},
		{name: "shim: local: --otel-rank=maybe rejected", ctx: "local", args: []string{"--option", "otel-rank=maybe"},
			want: []string{`^option_cb=-1$`, `log error spank-otel: --otel-rank: invalid value "maybe"`}},
		{name: "shim: --otel-rank registered, its value optional", ctx: "local",
			want: []string{`^options=--otel-rank=on\|off has_arg=2 usage=Also write each task's rank .*\(default here: off\)$`}},
		{name: "shim: --otel-rank=off wins over rank=on", lib: fake,
			args: append([]string{"--arg", "rank=on", "--option", "otel-rank=off", "--step-id", "5"}, job...),
			want: []string{" flags=1 step=5 ", `^env=_SLURM_SPANK_OPTION_spank_otel_otel_rank=off$`}},
		{name: "shim: bad rank= logged, off", lib: fake,
			args: append([]string{"--arg", "rank=yes", "--step-id", "5"}, job...), want: []string{`rank=yes: expected on or off`, " flags=1 step=5 "}},
		{name: "shim: max_env= and exclude= arguments reach the library", lib: fake,
			args: append([]string{"--arg", "max_env=5000", "--arg", "exclude=x.y"}, job...),
			want: []string{`exclude=x.y max_env=5000 `}},
		{name: "shim: bad max_env= logged, limit computed instead", lib: fake,
			args: append([]string{"--arg", "max_env=lots"}, job...), want: []string{`max_env=lots: expected a positive`, written}},
		{name: "shim: srun --otel-attrs=off: step untouched, choice passed on to later steps", lib: fake,
			args: append([]string{"--option", "off"}, job...),
			want: []string{`^option_cb=0$`, `disabled for this step \(--otel-attrs=off\)`, `!^env=OTEL_RESOURCE_ATTRIBUTES`,
				`^env=_SLURM_SPANK_OPTION_spank_otel_otel_attrs=off$`}},
		{name: "shim: off inherited from sbatch (job environment): step untouched", lib: fake,
			args: append([]string{"--env", "_SLURM_SPANK_OPTION_spank_otel_otel_attrs=off"}, job...),
			want: []string{`^option_cb_env=0$`, `!^env=OTEL_RESOURCE_ATTRIBUTES`, `^env=_SLURM_SPANK_OPTION_spank_otel_otel_attrs=off$`}},
		{name: "shim: a step's --otel-attrs=on wins over an inherited off", lib: fake,
			args: append([]string{"--option", "on", "--env", "_SLURM_SPANK_OPTION_spank_otel_otel_attrs=off"}, job...),
			want: []string{written, `^env=_SLURM_SPANK_OPTION_spank_otel_otel_attrs=on$`}},
		{name: "shim: default=off: nothing written without the option", lib: fake,
			args: append([]string{"--arg", "default=off"}, job...),
			want: []string{`disabled for this step \(default=off\)`, `!^env=OTEL_RESOURCE_ATTRIBUTES`}},
		{name: "shim: default=off with --otel-attrs=on: written", lib: fake,
			args: append([]string{"--arg", "default=off", "--option", "on"}, job...), want: []string{written}},
		{name: "shim: bad default= logged, treated as on", lib: fake,
			args: append([]string{"--arg", "default=maybe"}, job...), want: []string{`default=maybe: expected on or off`, written}},
		{name: "shim: relative lib= logged, plugin does nothing, callbacks return 0",
			args: append([]string{"--arg", "lib=relative/lib.so"}, job...),
			want: []string{`lib=relative/lib.so is not an absolute path`, `^task_init=0$`, `!^env=OTEL`}},
		{name: "shim: missing library: callbacks return 0, task untouched", lib: missing,
			args: append(job, "--tasks", "2"),
			want: []string{`^init_post_opt=0$`, `^task_init=0$`, `!^env=OTEL`, `cannot open .*missing.so`},
			then: []followUp{{"shim: missing library reported once per step, not per task", lines(`cannot open`, 1, "lines")}}},
		{name: "shim: unsafe library refused, task untouched", lib: beside("ww.so", nil, 0o666),
			args: job, want: []string{`refusing to load .*ww.so`, `^task_init=0$`, `!^env=OTEL`}},
		{name: "shim: broken library: one error, task untouched", lib: beside("empty.so", nil, 0o644),
			args: job, want: []string{`cannot load .*empty.so`, `^task_init=0$`, `!^env=OTEL`}},
		{name: "shim: rc 0 leaves the variable exactly as it was", lib: fake,
			args: []string{"--env", "FAKE_RC=0", "--env", "OTEL_RESOURCE_ATTRIBUTES=a=1"},
			want: []string{`^env=OTEL_RESOURCE_ATTRIBUTES=a=1$`, `left unchanged`}},
		{name: "shim: rc -1: library log and one line of its own", lib: fake,
			args: []string{"--env", "FAKE_RC=-1", "--env", "FAKE_LOG=E panic: x"},
			want: []string{`log error spank-otel: panic: x`, `log error spank-otel: the library failed \(rc=-1\)`, `!^env=OTEL`}},
		{name: "shim: rc 1 without a value handled", lib: fake, args: []string{"--env", "FAKE_NULL=1"},
			want: []string{`returned no value`, `!^env=OTEL`, `^task_init=0$`}},
		{name: "shim: rc 2 unsets the variable", lib: fake,
			args: []string{"--env", "FAKE_RC=2", "--env", "OTEL_RESOURCE_ATTRIBUTES=a=1"},
			want: []string{`!^env=OTEL`, `log debug spank-otel: unset OTEL_RESOURCE_ATTRIBUTES`}},
		// One entry "OTEL_RESOURCE_ATTRIBUTES=value" with its NUL must stay
		// under 131072 bytes: 26 bytes of it are the name, '=' and the NUL.
		{name: "shim: an entry of 131071 bytes is written", lib: fake,
			args: []string{"--env", fmt.Sprint("FAKE_VALUE_LEN=", 131072-27), "--env", "OTEL_RESOURCE_ATTRIBUTES=a=1"},
			want: []string{`^env=OTEL_RESOURCE_ATTRIBUTES=xxxx`, `!log error`}},
		{name: "shim: an entry of 131072 bytes is never written, and never logged as set", lib: fake,
			args: []string{"--env", fmt.Sprint("FAKE_VALUE_LEN=", 131072-26), "--env", "OTEL_RESOURCE_ATTRIBUTES=a=1"},
			want: []string{`^env=OTEL_RESOURCE_ATTRIBUTES=a=1$`,
				`log error spank-otel: OTEL_RESOURCE_ATTRIBUTES would be 131072 bytes with its name and NUL, over the 131072-byte limit`,
				`!log debug spank-otel: set `, `!environment variable .* is too long`}},
		// Slurm drops an entry it finds too long and still reports success.
		{name: "shim: a value Slurm silently refuses is reported, not logged as set", lib: fake,
			args: append(job, "--max-entry", "20", "--env", "OTEL_RESOURCE_ATTRIBUTES=a=1"),
			want: []string{`^env=OTEL_RESOURCE_ATTRIBUTES=a=1$`, `log error spank-otel: Slurm did not store OTEL_RESOURCE_ATTRIBUTES`,
				`!log debug spank-otel: set `}},
		{name: "shim: extern step: the library is not even opened", lib: fake,
			args: append(append(job, "--step-id", "0xfffffffc"), watch...),
			want: []string{`extern step: no tasks, library not opened`, `^parent_mapped_lib=no$`}},
		{name: "shim: extern step: a missing library is not reported there", lib: missing,
			args: append(job, "--step-id", "0xfffffffc", "--tasks", "0"), want: []string{`!cannot open`}},
		{name: "shim: timeout= bounds a hanging library; the task goes on", lib: fake,
			// 1000 ms, not less: a tenth of it (100 ms) is kept for killing
			// and reaping the helper, which on a loaded machine (load 12 on
			// two cores) took over the 15 ms a timeout of 150 leaves.
			args: []string{"--arg", "timeout=1000", "--env", "FAKE_HANG=1"},
			// The helper's alarm is due at the task's deadline: by the
			// step's end it may have fired or not, so how the helper
			// ended is not checked here (TestStepHelper checks the alarm).
			want: []string{`^task_init=0$`, `the step's helper did not answer within 1000 ms`, `^task_children=0$`, `!^env=OTEL`}},
		// An old plugstack.conf line that chose the task's helper: it
		// still works, and the log says the argument can go.
		{name: "shim, helper=task: one info line per step, the step's helper serves every task", lib: fake,
			args: append([]string{"--arg", "helper=task", "--tasks", "2"}, job...),
			want: []string{`^log info spank-otel: helper=task: the task's helper was removed; the step's helper serves every task \(the argument can go\)$`,
				`^log debug[0-9]* spank-otel: step helper: started for 2 tasks \(pid [0-9]+\)$`, written},
			then: []followUp{
				{"shim, helper=task: both tasks set OTEL_RESOURCE_ATTRIBUTES", lines(written, 2, "tasks set it")},
				{"shim, helper=task: the info line once per step", lines(`helper=task: the task's helper was removed`, 1, "lines")}}},
		{name: "shim: helper= of another value: one error line, the step's helper serves the task", lib: fake,
			args: append([]string{"--arg", "helper=fork"}, job...),
			want: []string{`^log error spank-otel: helper=fork: ignored \(the step's helper serves every task\)$`, written}},
		{name: "shim: bad timeout= logged, default used", lib: fake,
			args: append([]string{"--arg", "timeout=soon"}, job...), want: []string{`timeout=soon: expected milliseconds`, written}},
		{name: "shim: a crash of the library costs the task nothing but the attributes", lib: fake,
			args: []string{"--env", "FAKE_CRASH=1", "--ignore-sigpipe"},
			want: []string{`^task_init=0$`, `the step's helper ended before it answered`, `the step's helper was killed by signal 6 \(Aborted\)$`,
				`^sigpipe=ignored$`, `^task_children=0$`, `!task_killed`}},
		{name: "shim: task running as a user; SIGPIPE still ignored after task_init", lib: fake,
			args: append(job, "--as-user", "65534", "--ignore-sigpipe"), want: []string{written, `^sigpipe=ignored$`}},
		{name: "shim: default SIGPIPE stays default after task_init", lib: fake, args: job,
			want: []string{`^sigpipe=default$`}},
		{name: "shim + Go runtime: tasks keep SIGPIPE and one thread; Go only in the helpers", lib: kind("go"),
			args: append(append(job, "--ignore-sigpipe", "--tasks", "3"), watch...),
			want: []string{`^sigpipe=ignored$`, `!^sigpipe=(handler|default)`, `^parent_mapped_lib=no$`,
				`^task_mapped_lib=no$`, `!^task_mapped_lib=yes`, `!^task_threads=[^1]`, `!task_killed`}},
		{name: "shim + faulting library: the task runs; the log names the C function", lib: kind("fault"),
			args: append(job, "--env", "SPANK_OTEL_TEST_FAULT=segv"),
			want: []string{`^log error spank-otel: the step's helper was killed by signal [0-9]+ \(.*\): SIGSEGV: segmentation violation$`,
				`^log debug[0-9]* spank-otel: helper stderr: spank_otel_fault_segv\+0x[0-9a-f]+ \(/.*/fault/lib\.so\+0x[0-9a-f]+\)$`,
				`!^env=OTEL_RESOURCE_ATTRIBUTES`}},
		{name: "shim + real library: value written, SIGPIPE kept, one thread", lib: kind("real"),
			args: []string{"--env", "SLURM_JOB_ID=12345", "--env", "SLURM_CLUSTER_NAME=cluster-a", "--ignore-sigpipe",
				"--as-user", "65534"},
			want: []string{`^env=OTEL_RESOURCE_ATTRIBUTES=.*slurm\.job\.id=12345`, `^sigpipe=ignored$`, `^task_threads=1$`,
				`go runtime: GOMAXPROCS=1 `}},
		// The step's helper (issue 43, section 3), found beside the
		// library, started in init_post_opt; helper=step, the choice
		// there once was, is accepted silently.
		{name: "shim, the step's helper + real library: every task gets its value; one thread, no child, Go only in the step's helper",
			lib: kind("real"),
			args: append([]string{"--arg", "helper=step", "--env", "SLURM_JOB_ID=12345", "--env",
				"SLURM_CLUSTER_NAME=cluster-a", "--ignore-sigpipe", "--as-user", "65534", "--tasks", "3"}, watch...),
			want: []string{`^log debug[0-9]* spank-otel: step helper: started for 3 tasks \(pid [0-9]+\)$`,
				`^env=OTEL_RESOURCE_ATTRIBUTES=.*slurm\.job\.id=12345`, `!^task_threads=[^1]`, `!^task_children=[^0]`,
				`^task_mapped_lib=no$`, `!^task_mapped_lib=yes`, `^parent_mapped_lib=no$`, `^sigpipe=ignored$`,
				`step helper: library loaded and started in [0-9]+ us \(once for the step\)`, `!task_killed`,
				`!^log (info|error) spank-otel: helper=`},
			then: []followUp{{"shim, the step's helper: all three tasks got their value", func(t testing.TB, r result) {
				if n := r.count(`^env=OTEL_RESOURCE_ATTRIBUTES=.*slurm\.job\.id=12345`); n != 3 {
					t.Errorf("%d tasks got the value, want 3", n)
					r.show(t)
				}
			}}, {"shim, the step's helper: none is left running", func(t testing.TB, r result) {
				noneRunning(t, l.path("real/spank-otel-helper"))
			}}}},
		{name: "shim without spank-otel-helper beside the library: refused and logged, the tasks run without attributes",
			lib: func(t testing.TB) string {
				l.mkdir(t, "nohelper", 0o755)
				return l.copy(t, l.lib(t, "go"), "nohelper/lib.so")
			},
			args: append([]string{"--tasks", "2"}, job...),
			want: []string{`^log error spank-otel: cannot open ` + q(l.path("nohelper/spank-otel-helper")) + `: No such file or directory$`, `^task_init=0$`,
				`!^env=OTEL_RESOURCE_ATTRIBUTES`, `!task_killed`}},
		{name: "shim + faulting library, two tasks: the tasks run; the log says the step's helper ended and why",
			lib: kind("fault"), args: append([]string{"--env", "SPANK_OTEL_TEST_FAULT=segv",
				"--tasks", "2"}, job...),
			want: []string{`^log error spank-otel: the step's helper ended before it answered`,
				`^log error spank-otel: the step's helper was killed by signal [0-9]+ \(.*\): SIGSEGV: segmentation violation$`,
				`!^env=OTEL_RESOURCE_ATTRIBUTES`, `^task_init=0$`, `!task_killed`}},
		// What slurmd logs for a refused library: the rule and the path.
		{name: "shim: a refusal is logged as an error naming the rule and the path",
			lib: func(t testing.TB) string {
				l.lib(t, "fake")
				l.mkdir(t, "fake/open", 0o777)
				return l.copy(t, l.path("fake/lib.so"), "fake/open/lib.so")
			},
			args: job, want: []string{`^log error spank-otel: refusing to load ` + q(l.path("fake/open/lib.so")) +
				`: directory ` + q(l.path("fake/open")) + ` is writable by group or others \(mode 0777\)$`,
				`^task_init=0$`, `!^env=OTEL`}},
	}...)

	var checks []runCheck
	for _, c := range cases {
		checks = append(checks, runCheck{name: c.name, want: c.want, then: c.then, run: func(t testing.TB) result {
			ctx := c.ctx
			if ctx == "" {
				ctx = "remote"
			}
			args := []string{"--plugin", need(t, "shim"), "--context", ctx}
			if c.lib != nil {
				args = append(args, "--arg", "lib="+c.lib(t))
			}
			return run(nil, need(t, "mock"), append(args, c.args...)...)
		}})
	}
	runChecks(t, checks)
}
