//go:build harness

package test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// setgidOnly is --watch-helper's report of a helper that kept CAP_SETGID
// (bit 6) alone, for its credential change, and nothing else.
const setgidOnly = `^helper_caps=CapInh=0+,CapPrm=0+40,CapEff=0+40,CapBnd=0+,CapAmb=0+$`

// capsCgroup makes a real cgroup for the task to be placed in, as
// TestPlacement does: v1's memory hierarchy where the host has one, else
// the v2 root.
func capsCgroup(t *testing.T) string {
	id := fmt.Sprint("spank-otel-caps.", os.Getpid())
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		return newCgroup(t, "/sys/fs/cgroup/memory/"+id)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return newCgroup(t, "/sys/fs/cgroup/"+id)
	}
	t.Fatal("no cgroup v1 memory hierarchy and no cgroup v2 at /sys/fs/cgroup")
	return ""
}

// TestHelperCaps: the helper keeps root's capabilities only until its
// descriptors are arranged; from then on, placement included, it holds
// CAP_SETGID alone (for setgroups and setresgid; it was born with the job's
// uid as its real uid, so setresuid needs no capability), with empty
// bounding, ambient and inheritable sets, and none at all when it changes
// no ids. Where it cannot narrow them it loads nothing.
func TestHelperCaps(t *testing.T) {
	l := newLab(t)
	report := []string{"FAKE_REPORT=1", "SLURM_JOB_ID=1"}
	cg := capsCgroup(t)
	runChecks(t, []runCheck{
		{name: "caps: before placing itself the helper holds CAP_SETGID alone, no bounding set; at the load none",
			run:  l.onFake(report, "--as-user", "65534", "--watch-helper", "2000"),
			want: []string{`^status=called$`, setgidOnly, noCaps, `^state=same$`}},
		{name: "caps: a job of uid 0: CAP_SETGID alone before placing, none at the load",
			run:  l.onFake(report, "--as-user", "0", "--watch-helper", "2000"),
			want: []string{`^status=called$`, setgidOnly, `^value=uid=0/0/0,`, noCaps}},
		{name: "caps: a helper that changes no ids holds no capability from its start",
			run: l.onFake(report, "--watch-helper", "2000"),
			want: []string{`^status=called$`,
				`^helper_caps=CapInh=0+,CapPrm=0+,CapEff=0+,CapBnd=0+,CapAmb=0+$`, `^state=same$`}},
		{name: "caps: placed in a real cgroup with CAP_SETGID alone: the helper joins it and the task gets its value",
			run:  l.onFake(report, "--as-user", "65534", "--place-cgroup", cg, "--place-pgid"),
			want: []string{`^status=called$`, `^value=uid=65534/`, noCaps, `^state=same$`},
			then: []followUp{{"caps: the helper is in the task's cgroup", sameCgroup}}},
		// Reading another user's /proc/PID where /proc hides it needs
		// CAP_SYS_PTRACE, or the group of gid=: the helper opens the task's
		// cgroup file with root's capabilities and reads it at placement.
		{name: "caps: /proc with hidepid=invisible,gid=10: the helper still reads the task's cgroups at placement",
			run: func(t testing.TB) result {
				return run(nil, "unshare", "-m", "--propagation", "private", "sh", "-c",
					`mount -t proc -o hidepid=invisible,gid=10 proc /proc && exec "$@"`, "sh",
					l.harness, "--lib", l.lib(t, "fake"), "--env-file", l.taskEnv(t, "fenv", report...),
					"--as-user", "65534", "--place-cgroup", cg)
			},
			want: []string{`^status=called$`, noCaps},
			then: []followUp{{"caps: hidepid: the helper joined the cgroup the task was moved to after its start", sameCgroup}}},
		{name: "caps: capset refused (seccomp): no library, one error line, the task as it was",
			run:  l.onFake(report, "--as-user", "65534", "--deny", "capset"),
			code: 3, want: []string{`^status=helper-failed$`, `^state=same$`, `!^value=`,
				`^msg error spank-otel: not loading the library: the helper process cannot narrow its capability sets: Operation not permitted; OTEL_RESOURCE_ATTRIBUTES left unchanged$`}},
		{name: "caps: the bounding set cannot be emptied (seccomp): no library, one error line, the task as it was",
			run:  l.onFake(report, "--as-user", "65534", "--deny", "capbset-drop"),
			code: 3, want: []string{`^status=helper-failed$`, `^state=same$`, `!^value=`,
				`^msg error spank-otel: not loading the library: the helper process cannot empty its capability bounding set: Operation not permitted; OTEL_RESOURCE_ATTRIBUTES left unchanged$`}},
	})

	// The order, traced: the narrowing comes before the first write to a
	// cgroup, no later capset raises anything, and the last one, after the
	// job's uid is taken, empties every set.
	check(t, "caps: traced: narrowed to CAP_SETGID before the first cgroup.procs write, emptied after setresuid", func(t *testing.T) {
		helper := helperCalls(t, "capset,prctl,setresuid,openat,write",
			l.harness, "--lib", l.lib(t, "fake"), "--env-file", l.jobEnv(t), "--as-user", "65534",
			"--place-cgroup", cg)
		inOrder(t, helper, []callStep{
			{"bounding set emptied", `prctl\(PR_CAPBSET_DROP, CAP_SYS_ADMIN\)\s+= 0`},
			{"narrowed to CAP_SETGID", `capset\(.*\{effective=1<<CAP_SETGID, permitted=1<<CAP_SETGID, inheritable=0\}\)\s+= 0`},
			{"a cgroup joined", `openat\(.*"cgroup\.procs", O_WRONLY`},
			{"the job's uid", `setresuid\(65534, 65534, 65534\)\s+= 0`},
			{"every set emptied", `capset\(.*\{effective=0, permitted=0, inheritable=0\}\)\s+= 0`},
		})
		// Between the narrowing and the end no capset names anything
		// but CAP_SETGID (nor CAP_SETPCAP, kept for the bounding set
		// only before it).
		narrowed := false
		for _, line := range helper {
			if !strings.Contains(line, "capset(") {
				continue
			}
			if narrowed && strings.Contains(line, "CAP_") && !strings.Contains(line, "{effective=1<<CAP_SETGID, permitted=1<<CAP_SETGID, inheritable=0}") {
				t.Errorf("a capset after the narrowing holds more: %s", line)
			}
			if strings.Contains(line, "{effective=1<<CAP_SETGID, permitted=1<<CAP_SETGID, inheritable=0}") {
				narrowed = true
			}
		}
	})
}
