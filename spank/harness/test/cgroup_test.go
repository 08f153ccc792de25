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

	"golang.org/x/sys/unix"
)

const mib = 1 << 20

// fakeTree is a fake cgroup tree for the harness's --cgroup-check: the
// hierarchies under root/, the task's and the helper's /proc/PID/cgroup
// (task.cgroup, self.cgroup) and a mountinfo.
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
	ft.write(t, "self.cgroup", "")
	ft.write(t, "mountinfo", "")
	return ft
}

// path is name in the tree, as the harness sees it.
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

// check is a run of the harness's cgroup code on the tree, as an
// unprivileged user.
func (ft fakeTree) check(args ...string) func(t testing.TB) result {
	return func(t testing.TB) result {
		return run(nil, "setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups",
			ft.l.harness, "--cgroup-check", ft.path(""), "--pid", "4242"}, args...)...)
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
// user: where each cgroup of a task is, and whether the task's memory and
// pids cgroups have room for the helper (12 MiB, 16 tasks beyond what is in
// use, and 12 MiB more for each further helper of the step on the node).
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
	// The step's tasks start together, and their helpers run at once,
	// each within its own bound of 12 MiB: 60 MiB of room holds a step of
	// 5, not one of 6 (72 MiB).
	runChecks(t, []runCheck{{name: "cgroup v1: room for the step's 5 helpers on the node", run: v1.check("--local-tasks", "5"),
		want: []string{`^headroom=ok$`}}})
	runChecks(t, []runCheck{{name: "cgroup v1: no room for the step's 6 helpers on the node, each refused and the count named",
		run: v1.check("--local-tasks", "6"), want: []string{`^headroom=short memory cgroup ` + q(v1.path("root/"+job)) +
			` has 61440 KiB left of its 65536 KiB limit \(61440 KiB in use, 57344 KiB of that clean page cache\) and the step's 6 helpers on this node need about 73728 KiB$`}}})
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

	// Joining: the hierarchies whose path differs from the helper's own.
	jn := newTree(t, l, "join")
	jn.write(t, "task.cgroup", "5:memory:/job_1/task_0\n4:cpuset:/job_1\n3:pids:/\n0::/job_1\n")
	jn.write(t, "self.cgroup", "5:memory:/\n4:cpuset:/job_1\n3:pids:/\n0::/stepd\n")
	for _, c := range []string{"memory/job_1/task_0", "cpuset/job_1", "unified/job_1"} {
		jn.cg(t, c)
	}
	l.chmod(t, jn.dir+"/root/memory/job_1/task_0/cgroup.procs", 0o666)
	l.chmod(t, jn.dir+"/root/unified/job_1/cgroup.procs", 0o666)
	runChecks(t, []runCheck{{name: "cgroup join: the memory and unified cgroups, not those the helper shares",
		run: jn.check("--join"), want: []string{`^joined=2$`},
		then: []followUp{{`cgroup join: "0" written to cgroup.procs where joined, nowhere else`, func(t testing.TB, r result) {
			mem, _ := os.ReadFile(jn.path("root/memory/job_1/task_0/cgroup.procs"))
			cpuset, _ := os.ReadFile(jn.path("root/cpuset/job_1/cgroup.procs"))
			if !strings.HasSuffix(string(mem), "\n0") || string(cpuset) != "4242\n" {
				t.Errorf("memory cgroup.procs %q, cpuset cgroup.procs %q", mem, cpuset)
			}
		}}}}})
	l.chmod(t, jn.dir+"/root/unified/job_1/cgroup.procs", 0o444)
	runChecks(t, []runCheck{{name: "cgroup join: a cgroup that cannot be joined is named", run: jn.check("--join"),
		want: []string{`^join_error=cannot join the task's cgroup ` + q(jn.path("root/unified/job_1")) + `: Permission denied$`}}})

	// Slurm 22.05 gives the step's cgroup directories to the job's user
	// (their files stay root's: cgroupfs gives a cgroup's files to whoever
	// made it), so the task child can make x/ under the step and move into
	// it before task_init. The helper, root there, joins a cgroup whose
	// cgroup.procs is not root's only as the job's user could: here x/'s is
	// the user's but read-only, which root would write through.
	uc := newTree(t, l, "usercg")
	stepDir := "slurm/uid_65534/job_1/step_0"
	uc.write(t, "task.cgroup", "6:freezer:/"+stepDir+"/x\n5:memory:/"+stepDir+"/task_0\n4:pids:/"+stepDir+"\n")
	uc.write(t, "self.cgroup", "6:freezer:/\n5:memory:/\n4:pids:/\n")
	for _, c := range []string{"freezer/" + stepDir + "/x", "memory/" + stepDir + "/task_0", "pids/" + stepDir} {
		uc.cg(t, c)
	}
	for _, d := range []string{"freezer/" + stepDir, "freezer/" + stepDir + "/x", "memory/" + stepDir, "memory/" + stepDir + "/task_0", "pids/" + stepDir} {
		l.chown(t, uc.dir+"/root/"+d, 65534)
	}
	userProcs := uc.dir + "/root/freezer/" + stepDir + "/x/cgroup.procs"
	l.chown(t, userProcs, 65534)
	l.chmod(t, userProcs, 0o444)
	asRoot := func(t testing.TB) result {
		return l.run("--cgroup-check", uc.path(""), "--pid", "4242", "--join", "--as-user", "65534")
	}
	runChecks(t, []runCheck{{name: "cgroup join (22.05): a cgroup the user made under the step is joined only with the user's rights",
		run: asRoot, want: []string{`^join_error=cannot join the task's cgroup ` + q(uc.path("root/freezer/"+stepDir+"/x")) + `: Permission denied$`}}})
	l.chmod(t, userProcs, 0o644)
	runChecks(t, []runCheck{{name: "cgroup join (22.05): the user's own cgroup as the user, Slurm's (root's files in the user's directories) as root",
		run: asRoot, want: []string{`^joined=3$`},
		then: []followUp{{"cgroup join (22.05): \"0\" written to each cgroup.procs", func(t testing.TB, r result) {
			for _, c := range []string{"freezer/" + stepDir + "/x", "memory/" + stepDir + "/task_0", "pids/" + stepDir} {
				if b, _ := os.ReadFile(uc.path("root/" + c + "/cgroup.procs")); string(b) != "4242\n0" {
					t.Errorf("%s/cgroup.procs: %q", c, b)
				}
			}
		}}}}})
}

// placement reads the fake library's report of the helper (FAKE_REPORT)
// and the harness's of the task.
type placement struct{ r result }

// helper is the field name of the helper's report (value=a=1,b=2,...),
// up to the next field: a cgroup line may hold commas (cpu,cpuacct).
func (p placement) helper(name string) string {
	v, _ := p.r.value(`^value=(?:.*,)?` + name + `=(.*?)(?:,[a-z_]+=.*)?$`)
	return v
}

// task is the harness's task_NAME= line, without the ';' that ends it.
func (p placement) task(name string) string {
	v, _ := p.r.value(`^task_` + name + `=(.*)$`)
	return strings.TrimSuffix(v, ";")
}

// sameCgroup is a follow-up check that the helper ran in every cgroup of
// the task.
func sameCgroup(t testing.TB, r result) {
	p := placement{r}
	if p.helper("cgroup") != p.task("cgroup") {
		t.Errorf("helper %s task %s", p.helper("cgroup"), p.task("cgroup"))
		r.show(t)
	}
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

// lastCPU is the highest CPU this process may run on.
func lastCPU(t testing.TB) int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	for cpu := len(set)*64 - 1; cpu >= 0; cpu-- {
		if set.IsSet(cpu) {
			return cpu
		}
	}
	t.Fatal("no CPU in this process's affinity mask")
	return -1
}

// TestPlacement: the same in real cgroups. Between the callbacks the task
// moves into a cgroup and onto one CPU, as slurmstepd's parent does; the
// helper follows it before it loads the library, and checks the room there.
// cgroup v1 (memory and pids hierarchies) or v2, whichever the host has;
// neither is a failure.
func TestPlacement(t *testing.T) {
	l := newLab(t)
	id := fmt.Sprint("spank-otel-test.", os.Getpid())
	_, errMem := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes")
	_, errPids := os.Stat("/sys/fs/cgroup/pids/cgroup.procs")
	_, errV2 := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	switch {
	case errMem == nil && errPids == nil:
		placementV1(t, l, id)
	case errV2 == nil:
		placementV2(t, l, id)
	default:
		t.Fatal("placement in real cgroups: no cgroup v1 memory and pids hierarchies and no cgroup v2 at /sys/fs/cgroup")
	}
}

func placementV1(t *testing.T, l *lab, id string) {
	mem := newCgroup(t, "/sys/fs/cgroup/memory/"+id)
	pids := newCgroup(t, "/sys/fs/cgroup/pids/"+id)
	cpu := fmt.Sprint(lastCPU(t))
	moved := func(t testing.TB) result {
		writeFile(t, mem+"/memory.limit_in_bytes", 64*mib)
		writeFile(t, pids+"/pids.max", 100)
		return l.onFake([]string{"FAKE_REPORT=1"}, "--as-user", "65534", "--place-cgroup", mem,
			"--place-cgroup", pids, "--place-cpus", cpu, "--place-pgid")(t)
	}
	// withMemory is a run of cmd with the memory cgroup limited to n MiB.
	withMemory := func(n int, cmd func(t testing.TB) result) func(t testing.TB) result {
		return func(t testing.TB) result {
			writeFile(t, mem+"/memory.limit_in_bytes", n*mib)
			return cmd(t)
		}
	}
	// inCg is a run of the harness in the cgroup dir.
	inCg := func(dir string) func(t testing.TB) result {
		return func(t testing.TB) result {
			return inCgroup(dir, l.harness, "--lib", l.lib(t, "fake"), "--env-file", l.jobEnv(t))
		}
	}
	noRoom := `msg error spank-otel: not loading the library: memory cgroup ` + q(mem) + ` has [0-9]+ KiB left of its 8192 KiB limit`
	runChecks(t, []runCheck{
		{name: "placement (cgroup v1): the task was moved", run: moved,
			want: []string{`^status=called$`, `^task_cgroup=.*:memory:/` + q(id) + `;`, `^task_cpus=` + cpu + `$`},
			then: []followUp{
				{"placement (cgroup v1): the helper is in every cgroup of the task", sameCgroup},
				{"placement: the helper on the task's CPU, in its process group", func(t testing.TB, r result) {
					p := placement{r}
					if p.helper("cpus") != cpu || p.helper("pgid") != p.task("pgid") {
						t.Errorf("cpus=%s pgid=%s, task pgid %s", p.helper("cpus"), p.helper("pgid"), p.task("pgid"))
						r.show(t)
					}
				}}}},
		{name: "placement: room is checked in the cgroup the task ends up in (8 MiB: none)",
			run:  withMemory(8, l.onFake([]string{"SLURM_JOB_ID=1"}, "--place-cgroup", mem)),
			code: 3, want: []string{`^status=helper-failed$`, `^state=same$`, noRoom}},
		{name: "memory cgroup with 8 MiB: the library is not loaded", run: withMemory(8, inCg(mem)),
			code: 3, want: []string{`^status=helper-failed$`, noRoom}},
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
				return inCg(mem)(t)
			}),
			want: []string{`^status=called$`}},
		{name: "pids cgroup with room for 6 tasks: the library is not loaded",
			run: func(t testing.TB) result {
				writeFile(t, pids+"/pids.max", 6)
				return inCg(pids)(t)
			},
			code: 3, want: []string{`^status=helper-failed$`,
				`msg error spank-otel: not loading the library: pids cgroup ` + q(pids) + ` runs [0-9]+ of its 6 tasks`}},
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
// one error line names the bound. The control shows that the same
// allocation by a process without the bound is an OOM kill the counter
// sees.
func memoryBoundV1(t *testing.T, l *lab, mem string) {
	var kills int
	alloc := func(n int) func(t testing.TB) result {
		return func(t testing.TB) result {
			writeFile(t, mem+"/memory.limit_in_bytes", 48*mib)
			writeFile(t, mem+"/memory.failcnt", 0)
			kills = oomKills(t, mem)
			return l.run("--lib", l.lib(t, "fault"), "--as-user", "65534", "--place-cgroup", mem,
				"--env-file", l.taskEnv(t, "allocenv", "SLURM_JOB_ID=1", "SPANK_OTEL_TEST_FAULT=alloc",
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
			run: alloc(4), want: []string{`^status=called$`, `^value=fault\.alloc=4$`, `^state=same$`}},
		{name: "memory bound: a library that allocates 64 MiB in a cgroup of 48 MiB dies at the helper's bound; the task runs unchanged",
			run: alloc(64), code: 8, want: []string{`^status=helper-died$`, `^state=same$`, `!^value=`,
				`^msg error spank-otel: the helper process .* before it answered: fatal error: .*(out of memory|cannot allocate memory) ` +
					`\(over the helper's own memory bound, RLIMIT_DATA: 8 MiB for the library's call; not the job's memory limit\); ` +
					`OTEL_RESOURCE_ATTRIBUTES left unchanged$`},
			then: []followUp{
				{"memory bound: one error line", func(t testing.TB, r result) {
					if n := r.count(`^msg error`); n != 1 {
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

// placementV2 is TestPlacement on cgroup v2 (a systemd host), in a child of
// the root cgroup.
func placementV2(t *testing.T, l *lab, id string) {
	cg := newCgroup(t, "/sys/fs/cgroup/"+id)
	controllers, _ := os.ReadFile(cg + "/cgroup.controllers")
	if f := strings.Fields(string(controllers)); !slices.Contains(f, "memory") || !slices.Contains(f, "pids") {
		t.Fatal("placement (cgroup v2): the memory and pids controllers are not enabled below /sys/fs/cgroup; " +
			"enable them: echo +memory +pids > /sys/fs/cgroup/cgroup.subtree_control")
	}
	runChecks(t, []runCheck{
		{name: "placement (cgroup v2): the task was moved",
			run: func(t testing.TB) result {
				writeFile(t, cg+"/memory.max", 64*mib)
				return l.onFake([]string{"FAKE_REPORT=1"}, "--as-user", "65534", "--place-cgroup", cg, "--place-pgid")(t)
			},
			want: []string{`^status=called$`, `^task_cgroup=0::/` + q(id) + `;`},
			then: []followUp{{"placement (cgroup v2): the helper is in the task's cgroup", sameCgroup}}},
		{name: "placement (cgroup v2): room is checked in the task's final cgroup (8 MiB: none)",
			run: func(t testing.TB) result {
				writeFile(t, cg+"/memory.max", 8*mib)
				return l.onFake([]string{"SLURM_JOB_ID=1"}, "--place-cgroup", cg)(t)
			},
			code: 3, want: []string{`^status=helper-failed$`, `not loading the library: memory cgroup ` + q(cg) + ` has`}},
	})
}
