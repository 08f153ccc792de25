//go:build harness

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const mib = 1 << 20

// fakeTree is a fake cgroup tree for stepdrive's --cgroup-check: the
// hierarchies under root/, a process's /proc/PID/cgroup (task.cgroup) and
// a mountinfo.
type fakeTree struct {
	l   *lab
	dir string // in the lab
}

// newTree makes an empty fake tree in the lab's directory name.
func newTree(t *testing.T, l *lab, name string) fakeTree {
	t.Helper()
	ft := fakeTree{l, filepath.Join("fakecg", name)}
	l.mkdir(t, "fakecg", 0o755)
	os.RemoveAll(l.path(ft.dir))
	l.mkdir(t, ft.dir+"/root", 0o755)
	ft.write(t, "mountinfo", "")
	return ft
}

// path is name in the tree, as stepdrive sees it.
func (ft fakeTree) path(name string) string { return ft.l.path(filepath.Join(ft.dir, name)) }

// write writes the tree's file name.
func (ft fakeTree) write(t testing.TB, name, text string) {
	t.Helper()
	ft.l.write(t, filepath.Join(ft.dir, name), []byte(text))
}

// cg makes the cgroup directory root/path with files given as NAME=VALUE,
// each written as a line; its cgroup.procs lists the task, pid 4242,
// unless it exists already.
func (ft fakeTree) cg(t testing.TB, path string, files ...string) {
	t.Helper()
	d := filepath.Join("root", path)
	ft.l.mkdir(t, filepath.Join(ft.dir, d), 0o755)
	if _, err := os.Stat(ft.path(d + "/cgroup.procs")); err != nil {
		ft.write(t, d+"/cgroup.procs", "4242\n")
	}
	for _, f := range files {
		name, value, _ := strings.Cut(f, "=")
		ft.write(t, d+"/"+name, value+"\n")
	}
}

// check is a run of the cgroup code on the tree, as an unprivileged user.
func (ft fakeTree) check() func(t testing.TB) result {
	return func(t testing.TB) result {
		return run(nil, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			need(t, "stepdrive"), "--cgroup-check", ft.path(""), "--pid", "4242")
	}
}

// statV1 and statV2 are memory.stat files with that much page cache,
// active and inactive.
func statV1(active, inactive int) string {
	return fmt.Sprintf("memory.stat=cache 0\ntotal_active_file %d\ntotal_inactive_file %d", active, inactive)
}

func statV2(active, inactive int) string {
	return fmt.Sprintf("memory.stat=anon 0\nactive_file %d\ninactive_file %d", active, inactive)
}

// q quotes a path for a pattern.
func q(path string) string { return regexp.QuoteMeta(path) }

// TestCgroupFakeTrees: the cgroup code on fake trees, as an unprivileged
// user: where each cgroup of a process is, and whether its memory and pids
// cgroups have room for the step's helper (12 MiB, 16 tasks beyond what is
// in use).
// Each tree changes between checks, in order.
func TestCgroupFakeTrees(t *testing.T) {
	l := newLab(t)
	const unlimited = "9223372036854771712"

	v1 := newTree(t, l, "v1")
	v1.write(t, "task.cgroup", "4:memory:/slurm/uid_1000/job_1/step_0/task_0\n3:pids:/slurm/uid_1000/job_1/step_0\n"+
		"2:cpu,cpuacct:/\n1:name=systemd:/system.slice\n")
	job, task, step := "memory/slurm/uid_1000/job_1", "memory/slurm/uid_1000/job_1/step_0/task_0", "pids/slurm/uid_1000/job_1/step_0"
	v1.cg(t, job, fmt.Sprint("memory.limit_in_bytes=", 64*mib), fmt.Sprint("memory.usage_in_bytes=", 60*mib),
		statV1(10*mib, 46*mib))
	v1.cg(t, task, "memory.limit_in_bytes="+unlimited, fmt.Sprint("memory.usage_in_bytes=", 58*mib),
		statV1(10*mib, 46*mib))
	v1.cg(t, step, "pids.max=max", "pids.current=3")
	runChecks(t, []runCheck{{name: "cgroup v1: each hierarchy found where Slurm mounts it", run: v1.check(),
		want: []string{
			`^cgroup 4:memory:/slurm/uid_1000/job_1/step_0/task_0 dir=` + q(v1.path("root/"+task)) + `$`,
			`^cgroup 3:pids:/slurm/uid_1000/job_1/step_0 dir=` + q(v1.path("root/"+step)) + `$`},
		then: []followUp{{"cgroup v1: 60 of 64 MiB in use, 56 MiB of it page cache: room for the helper",
			expectAlso(0, `^headroom=ok$`)}}}})
	v1.cg(t, job, statV1(1*mib, 1*mib))
	runChecks(t, []runCheck{{name: "cgroup v1: 60 of 64 MiB in use, 2 MiB of it page cache: no room, the job's cgroup named",
		run: v1.check(), want: []string{`^headroom=short memory cgroup ` + q(v1.path("root/"+job)) +
			` has 6144 KiB left of its 65536 KiB limit \(61440 KiB in use, 2048 KiB of that clean page cache\) and the helper needs about 12288 KiB$`}}})
	// Dirty and writeback pages must reach the disk before they can go.
	v1.cg(t, job, statV1(10*mib, 46*mib)+fmt.Sprintf("\ntotal_dirty %d\ntotal_writeback %d", 30*mib, 20*mib))
	runChecks(t, []runCheck{{name: "cgroup v1: 56 MiB of page cache, 50 MiB of it dirty or under writeback: only 6 MiB counted free, no room",
		run: v1.check(), want: []string{`^headroom=short memory cgroup ` + q(v1.path("root/"+job)) +
			` has 10240 KiB left of its 65536 KiB limit \(61440 KiB in use, 6144 KiB of that clean page cache\)`}}})
	// Swap accounting: 30 MiB of memory, 26 MiB swapped out, under a
	// memory+swap limit of 64 MiB: room in memory, none in memory+swap.
	v1.cg(t, job, fmt.Sprint("memory.usage_in_bytes=", 30*mib), statV1(0, 0),
		fmt.Sprint("memory.memsw.limit_in_bytes=", 64*mib), fmt.Sprint("memory.memsw.usage_in_bytes=", 56*mib))
	runChecks(t, []runCheck{{name: "cgroup v1: room under memory.limit_in_bytes, 8 MiB under memory.memsw.limit_in_bytes: no room, that limit named",
		run: v1.check(), want: []string{`^headroom=short memory cgroup ` + q(v1.path("root/"+job)) +
			` has 8192 KiB left of its 65536 KiB memory\+swap limit \(57344 KiB in use, 0 KiB of that clean page cache\)`}}})
	for _, f := range []string{"memory.memsw.limit_in_bytes", "memory.memsw.usage_in_bytes"} {
		if err := os.Remove(v1.path("root/" + job + "/" + f)); err != nil {
			t.Fatal(err)
		}
	}
	runChecks(t, []runCheck{{name: "cgroup v1: the same without swap accounting (no memory.memsw files): room",
		run: v1.check(), want: []string{`^headroom=ok$`}}})
	v1.cg(t, job, "memory.limit_in_bytes="+unlimited)
	v1.cg(t, step, "pids.max=20", "pids.current=10")
	runChecks(t, []runCheck{{name: "cgroup v1: a pids cgroup running 10 of 20 tasks: no room", run: v1.check(),
		want: []string{`^headroom=short pids cgroup ` + q(v1.path("root/"+step)) + ` runs 10 of its 20 tasks and the helper needs up to 16$`}}})
	v1.cg(t, step, "pids.max=26")
	runChecks(t, []runCheck{{name: "cgroup v1: 10 of 26 tasks: room", run: v1.check(), want: []string{`^headroom=ok$`}}})
	// A directory at the usual place that does not list the task is someone
	// else's (a mount of another part of the hierarchy): not used.
	v1.write(t, "root/"+step+"/cgroup.procs", "1\n")
	v1.cg(t, step, "pids.max=12")
	runChecks(t, []runCheck{{name: "cgroup v1: a directory that does not list the task is not taken for its cgroup",
		run: v1.check(), want: []string{`^cgroup 3:pids:/slurm/uid_1000/job_1/step_0 dir=-$`, `^headroom=ok$`}}})

	v2 := newTree(t, l, "v2")
	v2.write(t, "task.cgroup", "0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0\n")
	v2.write(t, "root/cgroup.controllers", "")
	job, task = "system.slice/slurmstepd.scope/job_1", "system.slice/slurmstepd.scope/job_1/step_0/user/task_0"
	v2.cg(t, job, fmt.Sprint("memory.max=", 64*mib), fmt.Sprint("memory.current=", 60*mib), statV2(8*mib, 48*mib),
		"pids.max=max", "pids.current=4")
	v2.cg(t, task, "memory.max=max", fmt.Sprint("memory.current=", 59*mib), statV2(8*mib, 48*mib),
		"pids.max=max", "pids.current=2")
	runChecks(t, []runCheck{{name: "cgroup v2: found at the root of the unified hierarchy", run: v2.check(),
		want: []string{`^cgroup 0::/` + task + ` dir=` + q(v2.path("root/"+task)) + `$`},
		then: []followUp{{"cgroup v2: 60 of 64 MiB in use, 56 MiB of it page cache: room for the helper",
			expectAlso(0, `^headroom=ok$`)}}}})
	v2.cg(t, job, statV2(8*mib, 48*mib)+fmt.Sprintf("\nfile_dirty %d\nfile_writeback %d", 40*mib, 10*mib))
	runChecks(t, []runCheck{{name: "cgroup v2: 56 MiB of page cache, 50 MiB of it dirty or under writeback: no room",
		run: v2.check(), want: []string{`^headroom=short memory cgroup ` + q(v2.path("root/"+job)) +
			` has 10240 KiB left of its 65536 KiB limit \(61440 KiB in use, 6144 KiB of that clean page cache\)`}}})
	v2.cg(t, job, statV2(0, 2*mib))
	runChecks(t, []runCheck{{name: "cgroup v2: 60 of 64 MiB in use, 2 MiB of it page cache: no room", run: v2.check(),
		want: []string{`^headroom=short memory cgroup ` + q(v2.path("root/"+job)) +
			` has 6144 KiB left of its 65536 KiB limit \(61440 KiB in use, 2048 KiB of that clean page cache\)`}}})
	v2.cg(t, job, "memory.max=max", "pids.max=12", "pids.current=4")
	runChecks(t, []runCheck{{name: "cgroup v2: pids.max 12 with 4 running: no room", run: v2.check(),
		want: []string{`^headroom=short pids cgroup ` + q(v2.path("root/"+job)) + ` runs 4 of its 12 tasks`}}})

	// Hybrid: v1 controllers plus an empty unified hierarchy at unified/;
	// the limits are the v1 ones.
	hy := newTree(t, l, "hybrid")
	hy.write(t, "task.cgroup", "4:memory:/job_1\n0::/job_1\n")
	hy.cg(t, "memory/job_1", fmt.Sprint("memory.limit_in_bytes=", 20*mib), fmt.Sprint("memory.usage_in_bytes=", 9*mib),
		statV1(0, 0))
	hy.cg(t, "unified/job_1", fmt.Sprint("memory.max=", 1*mib), "memory.current=0")
	runChecks(t, []runCheck{{name: "cgroup hybrid: the unified hierarchy at unified/, the memory limit from v1 only",
		run: hy.check(), want: []string{`^cgroup 0::/job_1 dir=` + q(hy.path("root/unified/job_1")) + `$`,
			`^headroom=short memory cgroup ` + q(hy.path("root/memory/job_1")) + ` has 11264 KiB left`}}})

	// Mounted elsewhere and from a directory of the hierarchy (Docker
	// without a cgroup namespace): mountinfo says where, octal escapes and all.
	mv := newTree(t, l, "moved")
	mv.write(t, "task.cgroup", "7:memory:/docker/ab/job_1\n")
	mv.write(t, "mnt/my mem/job_1/cgroup.procs", "4242\n")
	mv.write(t, "mnt/my mem/job_1/memory.limit_in_bytes", fmt.Sprintln(20*mib))
	mv.write(t, "mnt/my mem/job_1/memory.usage_in_bytes", fmt.Sprintln(12*mib))
	mv.write(t, "mnt/my mem/job_1/memory.stat", strings.TrimPrefix(statV1(0, 10*mib), "memory.stat=")+"\n")
	mnt := mv.path("mnt")
	mv.write(t, "mountinfo", "30 20 0:26 / /sys rw - sysfs sysfs rw\n"+
		"40 30 0:30 /docker/other "+mnt+"/my\\040mem rw - cgroup cgroup rw,memory\n"+
		"41 30 0:31 /docker/ab "+mnt+"/my\\040mem rw shared:5 - cgroup cgroup rw,memory\n"+
		"42 30 0:32 / "+mnt+"/cpu rw - cgroup cgroup rw,cpu,cpuacct\n")
	runChecks(t, []runCheck{{name: "cgroup mounted elsewhere, from a subdirectory: found through mountinfo (the later mount wins)",
		run: mv.check(), want: []string{`^cgroup 7:memory:/docker/ab/job_1 dir=` + q(mnt+"/my mem/job_1") + `$`, `^headroom=ok$`}}})
	mv.write(t, "task.cgroup", "7:memory:/docker/ab/../../etc\n")
	runChecks(t, []runCheck{{name: "cgroup outside the namespace (a .. in its path): never looked for", run: mv.check(),
		want: []string{`^cgroup 7:memory:/docker/ab/\.\./\.\./etc dir=-$`}}})
}

// writeFile writes a control file of a real cgroup.
func writeFile(t testing.TB, path string, v any) {
	t.Helper()
	if err := os.WriteFile(path, []byte(fmt.Sprintln(v)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newCgroup makes the cgroup dir, removed at the end of the test.
func newCgroup(t *testing.T, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	return dir
}

// inCgroup is a run of a command inside the cgroup dir.
func inCgroup(dir string, args ...string) result {
	return run(nil, "sh", append([]string{"-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "incg", dir}, args...)...)
}

// TestHelperCgroups: the same in real cgroups. The step's helper runs in
// the step parent's cgroups (stepdrive's here), and loads the library only
// when they have room for it. cgroup v1 (memory and pids hierarchies) or
// v2, whichever the host has; neither is a failure.
func TestHelperCgroups(t *testing.T) {
	l := newLab(t)
	id := fmt.Sprint("spank-otel-test.", os.Getpid())
	_, errMem := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes")
	_, errPids := os.Stat("/sys/fs/cgroup/pids/cgroup.procs")
	_, errV2 := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	switch {
	case errMem == nil && errPids == nil:
		cgroupsV1(t, l, id)
	case errV2 == nil:
		cgroupsV2(t, l, id)
	default:
		t.Fatal("the helper in real cgroups: no cgroup v1 memory and pids hierarchies and no cgroup v2 at /sys/fs/cgroup")
	}
}

// inCg is a step of one task on the fake library, run in the cgroup dir.
func (l *lab) inCg(dir string) func(t testing.TB) result {
	return func(t testing.TB) result {
		exe := l.helper(t)
		return inCgroup(dir, need(t, "stepdrive"), "--helper", exe, "--tasks", "1", "--lib", l.lib(t, "fake"),
			"--env-file", l.jobEnv(t))
	}
}

func cgroupsV1(t *testing.T, l *lab, id string) {
	mem := newCgroup(t, "/sys/fs/cgroup/memory/"+id)
	pids := newCgroup(t, "/sys/fs/cgroup/pids/"+id)
	// withMemory is a run of cmd with the memory cgroup limited to n MiB.
	withMemory := func(n int, cmd func(t testing.TB) result) func(t testing.TB) result {
		return func(t testing.TB) result {
			writeFile(t, mem+"/memory.limit_in_bytes", n*mib)
			return cmd(t)
		}
	}
	noRoom := `^task=0 log=error not loading the library: memory cgroup ` + q(mem) + ` has [0-9]+ KiB left of its 8192 KiB limit`
	runChecks(t, []runCheck{
		{name: "memory cgroup with 8 MiB: the library is not loaded, the task told why", run: withMemory(8, l.inCg(mem)),
			want: []string{`^task=0 status=helper-failed `, noRoom, `^task=0 state=same$`}},
		// Page cache: a file of 56 MiB written in the cgroup (and synced: dirty
		// pages count as used) leaves its usage near the 64 MiB limit, and the
		// kernel takes the clean cache back on demand.
		{name: "memory cgroup of 64 MiB, mostly clean page cache in use: the helper runs",
			run: withMemory(64, func(t testing.TB) result {
				pc, err := os.MkdirTemp("/var/tmp", "spank-otel-pc.")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(pc)
				if r := inCgroup(mem, "dd", "if=/dev/zero", "of="+pc+"/file", "bs=1M", "count=56", "conv=fsync", "status=none"); r.code != 0 {
					t.Fatalf("dd: %s", r.out)
				}
				used, _ := os.ReadFile(mem + "/memory.usage_in_bytes")
				t.Logf("memory.usage_in_bytes %s", used)
				return l.inCg(mem)(t)
			}),
			want: []string{`^task=0 status=called rc=1 `}},
		{name: "pids cgroup with room for 6 tasks: the library is not loaded",
			run: func(t testing.TB) result {
				writeFile(t, pids+"/pids.max", 6)
				return l.inCg(pids)(t)
			},
			want: []string{`^task=0 status=helper-failed `,
				`^task=0 log=error not loading the library: pids cgroup ` + q(pids) + ` runs [0-9]+ of its 6 tasks`}},
	})
	memoryBoundV1(t, l, mem)
}

// oomKills is the oom_kill counter of a v1 memory cgroup's
// memory.oom_control: the OOM kills of its own processes.
func oomKills(t testing.TB, dir string) int {
	t.Helper()
	b, err := os.ReadFile(dir + "/memory.oom_control")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("%s/memory.oom_control has no oom_kill counter (Linux 4.13 or later has it)", dir)
	return 0
}

// memoryBoundV1: the helper's own memory bound (spank/membound.h), in the
// real v1 memory cgroup mem. A library that allocates 64 MiB in a cgroup
// of 48 MiB, room enough for the helper's 12 MiB, dies at its bound: the
// cgroup never reaches its limit, no OOM kill, the task runs unchanged and
// one error line of the step names the bound. The control shows that the same
// allocation by a process without the bound is an OOM kill the counter
// sees.
func memoryBoundV1(t *testing.T, l *lab, mem string) {
	var kills int
	alloc := func(n int) func(t testing.TB) result {
		return func(t testing.TB) result {
			writeFile(t, mem+"/memory.limit_in_bytes", 48*mib)
			writeFile(t, mem+"/memory.failcnt", 0)
			kills = oomKills(t, mem)
			exe := l.helper(t)
			return inCgroup(mem, need(t, "stepdrive"), "--helper", exe, "--tasks", "1", "--lib", l.lib(t, "fault"),
				"--as-user", "65534", "--env-file", l.taskEnv(t, "allocenv", "SLURM_JOB_ID=1", "SPANK_OTEL_TEST_FAULT=alloc",
					fmt.Sprint("SPANK_OTEL_TEST_ALLOC_MIB=", n)))
		}
	}
	untouched := func(t testing.TB, r result) {
		if n := oomKills(t, mem); n != kills {
			t.Errorf("oom_kill of %s went from %d to %d", mem, kills, n)
		}
		if b, _ := os.ReadFile(mem + "/memory.failcnt"); strings.TrimSpace(string(b)) != "0" {
			t.Errorf("%s/memory.failcnt is %s: the cgroup reached its limit", mem, strings.TrimSpace(string(b)))
		}
	}
	runChecks(t, []runCheck{
		{name: "memory bound: a library that allocates 4 MiB, within its bound, answers",
			run: alloc(4), want: []string{`^task=0 status=called rc=1 value=fault\.alloc=4$`, `^task=0 state=same$`}},
		{name: "memory bound: a library that allocates 64 MiB in a cgroup of 48 MiB dies at the helper's bound; the task runs unchanged",
			run: alloc(64), want: []string{`^task=0 status=helper-died rc=-1 value=-$`, `^task=0 state=same$`,
				`^error: the step's helper .*: fatal error: .*(out of memory|cannot allocate memory).* ` +
					`\(over the helper's own memory bound, RLIMIT_DATA: 8 MiB for the library's call; not the job's memory limit\)$`},
			then: []followUp{
				{"memory bound: one error line for the step", func(t testing.TB, r result) {
					if n := r.count(`^error:`); n != 1 {
						t.Errorf("%d error lines", n)
						r.show(t)
					}
				}},
				{"memory bound: no OOM kill, the cgroup never at its limit", untouched}}},
		{name: "memory bound: control: 64 MiB allocated in that cgroup without the bound is an OOM kill",
			run: func(t testing.TB) result {
				writeFile(t, mem+"/memory.limit_in_bytes", 48*mib)
				kills = oomKills(t, mem)
				return inCgroup(mem, "sh", "-c", "head -c 67108864 /dev/zero | tail")
			},
			code: 137,
			then: []followUp{{"memory bound: control: the OOM kill is counted", func(t testing.TB, r result) {
				if n := oomKills(t, mem); n != kills+1 {
					t.Errorf("oom_kill of %s went from %d to %d, want one more", mem, kills, n)
				}
			}}}},
	})
}

// cgroupsV2 is TestHelperCgroups on cgroup v2 (a systemd host), in a child
// of the root cgroup.
func cgroupsV2(t *testing.T, l *lab, id string) {
	cg := newCgroup(t, "/sys/fs/cgroup/"+id)
	controllers, _ := os.ReadFile(cg + "/cgroup.controllers")
	if f := strings.Fields(string(controllers)); !slices.Contains(f, "memory") || !slices.Contains(f, "pids") {
		t.Fatal("the helper in cgroup v2: the memory and pids controllers are not enabled below /sys/fs/cgroup; " +
			"enable them: echo +memory +pids > /sys/fs/cgroup/cgroup.subtree_control")
	}
	runChecks(t, []runCheck{
		{name: "memory cgroup (v2) with 8 MiB: the library is not loaded",
			run: func(t testing.TB) result {
				writeFile(t, cg+"/memory.max", 8*mib)
				return l.inCg(cg)(t)
			},
			want: []string{`^task=0 status=helper-failed `, `not loading the library: memory cgroup ` + q(cg) + ` has`}},
	})
}
