//go:build cluster

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuList expands "0-2,5" into its CPUs.
func cpuList(t testing.TB, s string) []int {
	t.Helper()
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			t.Fatalf("CPU list %q: %v", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				t.Fatalf("CPU list %q: %v", s, err)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// cgroupLines are the lines of a /proc/PID/cgroup joined by ';', sorted.
func cgroupLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, ";") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// stepTaskReport is the task command of TestStepHelperPlacement: the
// task's ids, cgroups and parent (the step parent), before it prints its
// environment.
const stepTaskReport = `bash -c 'export TASK_CGROUP="$(tr "\n" ";" </proc/self/cgroup)"
export TASK_PPID=$PPID
for k in Uid Gid Groups; do export TASK_$k="$(sed -n "s/^$k:[[:space:]]*//p" /proc/self/status | tr -s "[:space:]" " ")"; done
exec env -0'`

// stepHelperScan is what a node's spank-otel processes look like from
// outside, read as root: "KEY value" lines, a "--" line after each
// process, then slurmd's cgroups and CPUs.
const stepHelperScan = `field() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "/proc/$1/status"; }
for p in $(pgrep -x spank-otel); do
	pp=$(field $p PPid)
	echo "pid $p"
	echo "ppid $pp"
	echo "parent $(tr '\0' ' ' </proc/$pp/cmdline)"
	echo "exe $(readlink /proc/$p/exe)"
	for k in Uid Gid Groups NoNewPrivs CapInh CapPrm CapEff CapBnd CapAmb Cpus_allowed_list; do echo "$k $(field $p $k)"; done
	echo "cgroup $(tr '\n' ';' </proc/$p/cgroup)"
	echo "parent.cgroup $(tr '\n' ';' </proc/$pp/cgroup)"
	echo "parent.CapBnd $(field $pp CapBnd)"
	echo "--"
done
d=$(pgrep -xo slurmd)
echo "slurmd.cgroup $(tr '\n' ';' </proc/$d/cgroup)"
echo "slurmd.Cpus_allowed_list $(field $d Cpus_allowed_list)"`

// nodeScan is stepHelperScan's answer: one map per spank-otel process, and
// the node's own keys (slurmd's).
type nodeScan struct {
	helpers []map[string]string
	node    map[string]string
}

func scanStepHelpers(t testing.TB, node string) nodeScan {
	t.Helper()
	out, errOut, err := clusterCmd(t, node, true, nil, "bash", "-c", stepHelperScan)
	if err != nil {
		t.Fatalf("%s: scanning the helpers: %v\n%s", node, err, errOut)
	}
	s := nodeScan{node: map[string]string{}}
	cur := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if l == "--" {
			s.helpers = append(s.helpers, cur)
			cur = map[string]string{}
			continue
		}
		if k, v, ok := strings.Cut(l, " "); ok {
			if strings.HasPrefix(k, "slurmd.") {
				s.node[k] = strings.TrimSpace(v)
			} else {
				cur[k] = strings.TrimSpace(v)
			}
		}
	}
	return s
}

// freezerOf is the path of the freezer line of a /proc/PID/cgroup joined
// by ';' (cgroup v1), "" when there is none.
func freezerOf(cg string) string {
	for _, l := range cgroupLines(cg) {
		if parts := strings.SplitN(l, ":", 3); len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "freezer") {
			return parts[2]
		}
	}
	return ""
}

// TestStepHelperPlacement (issue 43, section 3): the step's helper as
// the kernel shows it, seen from outside as root while every task of a
// step of 4 on two nodes is held before spank-otel's task_init
// (test/spankprobe role=hold), so that the helper has not yet been asked
// and cannot have ended. On each node exactly one helper, a child of the
// step's slurmstepd (the tasks' parent) executing spank-otel-helper
// beside the library; the job's user on every uid and gid, the job's
// groups, no_new_privs, no capability in any set, the bounding set
// included (its starter empties it before the exec); on one of
// slurmd's CPUs; in slurmd's cgroups, as the step parent was when it
// started the helper (init_post_opt), but on cgroup v1 (site profile) the
// job's freezer cgroup, where proctrack/cgroup puts the step parent, so
// that a suspended job's helper is frozen with it. Where the step parent
// is by the time its tasks run differs (25.11 moves it into the step's
// cpuset, memory and devices cgroups, 26.05 does not): the test logs it.
// TestStepHelperMode covers what the tasks get from the helper,
// TestCancelledStepLeavesNoHelper its end with a cancelled step.
func TestStepHelperPlacement(t *testing.T) {
	if left := waitNoHelper(10 * time.Second); len(left) > 0 {
		t.Fatalf("helpers running before the test: %v", left)
	}
	withStack(t, map[string]string{"00-hold.conf": "required " + probeSo + " role=hold ms=15000"})
	tag := outDir(t)
	name := fmt.Sprintf("placement-%d", os.Getpid())
	alice(t, submit(fmt.Sprintf(`setsid -f srun -N2 -n4 -J %s -o /shared/out/%s/step.%%t.env %s >/dev/null 2>&1 </dev/null`,
		name, tag, stepTaskReport)))
	defer clusterCmd(t, "", false, nil, "scancel", "-u", "alice", "-n", name)
	scans := map[string]nodeScan{}
	for _, node := range strings.Fields(computeNodes) {
		deadline := time.Now().Add(90 * time.Second)
		for {
			s := scanStepHelpers(t, node)
			if len(s.helpers) > 0 || time.Now().After(deadline) {
				scans[node] = s
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	alice(t, fmt.Sprintf(`end=$((SECONDS + 120))
while [ $SECONDS -lt $end ]; do squeue -h -n %[1]s 2>/dev/null | grep -q . || exit 0; sleep 0.5; done
echo "job %[1]s still listed after 120 s" >&2; exit 1`, name))
	tasks := collectN(t, tag, 4)
	byNode := map[string][]task{}
	for _, tk := range tasks {
		checkIdentity(t, tk, tk.attrs(t))
		byNode[nodeOf(tk)] = append(byNode[nodeOf(tk)], tk)
	}
	wantExe := filepath.Join(filepath.Dir(installedLib), "spank-otel-helper")
	for _, node := range strings.Fields(computeNodes) {
		s, mine := scans[node], byNode[node]
		if len(s.helpers) != 1 || len(mine) == 0 {
			t.Errorf("%s: %d helpers while %d tasks of the step were held there, want 1: %v", node, len(s.helpers), len(mine), s.helpers)
			continue
		}
		h, tk := s.helpers[0], mine[0]
		step := "[" + tk.env["SLURM_JOB_ID"] + "." + tk.env["SLURM_STEP_ID"] + "]"
		t.Logf("%s: helper %s, parent %s %q, exe %s; Uid %s Gid %s Groups %q NoNewPrivs %s; CapEff %s CapPrm %s CapBnd %s (its parent's %s); CPUs %s of slurmd's %s; cgroups %s; the step parent's now %s; slurmd's %s",
			node, h["pid"], h["ppid"], h["parent"], h["exe"], h["Uid"], h["Gid"], h["Groups"], h["NoNewPrivs"],
			h["CapEff"], h["CapPrm"], h["CapBnd"], h["parent.CapBnd"], h["Cpus_allowed_list"], s.node["slurmd.Cpus_allowed_list"],
			h["cgroup"], h["parent.cgroup"], s.node["slurmd.cgroup"])
		if !strings.HasPrefix(h["parent"], "slurmstepd") || !strings.Contains(h["parent"], step) {
			t.Errorf("%s: the helper's parent is %q, not the slurmstepd of step %s", node, h["parent"], step)
		}
		for _, tk := range mine {
			if tk.env["TASK_PPID"] != h["ppid"] {
				t.Errorf("%s: %s's parent is %s, the helper's %s: not the same step parent", node, tk.name, tk.env["TASK_PPID"], h["ppid"])
			}
		}
		if h["exe"] != wantExe {
			t.Errorf("%s: /proc/%s/exe is %q, want %s", node, h["pid"], h["exe"], wantExe)
		}
		uid, gid := strings.Fields(tk.env["TASK_Uid"]), strings.Fields(tk.env["TASK_Gid"])
		if len(uid) == 0 || len(gid) == 0 || h["Uid"] != strings.Repeat(uid[0]+" ", 3)+uid[0] || h["Gid"] != strings.Repeat(gid[0]+" ", 3)+gid[0] {
			t.Errorf("%s: the helper's Uid %q Gid %q, want the job's user's on all four (the task's Uid %q Gid %q)",
				node, h["Uid"], h["Gid"], tk.env["TASK_Uid"], tk.env["TASK_Gid"])
		}
		if hg, tg := strings.Fields(h["Groups"]), strings.Fields(tk.env["TASK_Groups"]); !sameSet(hg, tg) {
			t.Errorf("%s: the helper's groups %v, the task's %v", node, hg, tg)
		}
		if h["NoNewPrivs"] != "1" {
			t.Errorf("%s: NoNewPrivs %q, want 1", node, h["NoNewPrivs"])
		}
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if h[k] == "" || strings.Trim(h[k], "0") != "" {
				t.Errorf("%s: %s %q, want no capability (its parent's CapBnd %s)", node, k, h[k], h["parent.CapBnd"])
			}
		}
		cpus := cpuList(t, h["Cpus_allowed_list"])
		if len(cpus) != 1 || !slices.Contains(cpuList(t, s.node["slurmd.Cpus_allowed_list"]), cpus[0]) {
			t.Errorf("%s: the helper runs on CPUs %v, want one of slurmd's %s", node, cpus, s.node["slurmd.Cpus_allowed_list"])
		}
		// Its cgroups: slurmd's, but for the freezer hierarchy, where
		// the site profile's proctrack/cgroup (v1) had put the step
		// parent in the job's cgroup before init_post_opt.
		helperCG, slurmdCG := cgroupLines(h["cgroup"]), cgroupLines(s.node["slurmd.cgroup"])
		if *profile == "site" {
			// The task sees its path from its cgroup namespace, rooted
			// at the node's (slurmd's) cgroup; the scan sees the whole.
			jobFreezer, _, _ := strings.Cut(freezerOf(tk.env["TASK_CGROUP"]), "/step_")
			if fz := freezerOf(h["cgroup"]); !strings.HasSuffix(jobFreezer, "/job_"+tk.env["SLURM_JOB_ID"]) ||
				!strings.HasSuffix(fz, jobFreezer) || !strings.HasPrefix(fz, freezerOf(s.node["slurmd.cgroup"])+"/") {
				t.Errorf("%s: the helper's freezer cgroup is %q, want the job's %q under slurmd's %q (the task's is %q)",
					node, fz, jobFreezer, freezerOf(s.node["slurmd.cgroup"]), freezerOf(tk.env["TASK_CGROUP"]))
			}
			helperCG = slices.DeleteFunc(helperCG, func(l string) bool { return strings.Contains(l, ":freezer:") })
			slurmdCG = slices.DeleteFunc(slurmdCG, func(l string) bool { return strings.Contains(l, ":freezer:") })
		}
		if !slices.Equal(helperCG, slurmdCG) {
			t.Errorf("%s: the helper's cgroups are not slurmd's:\nhelper %v\nslurmd %v", node, helperCG, slurmdCG)
		}
	}
}

// sameSet: a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// TestMemoryPageCache: a job whose step wrote files close to its memory
// limit still gets its attributes in the next step. The page cache counts
// in the cgroup's usage, but the kernel takes clean pages back before it
// would kill anything, so the helper's room check does not count them as
// used. Dirty ones it does (they must reach the disk first): the file is
// synced, as a job's finished output is within the kernel's writeback
// interval.
func TestMemoryPageCache(t *testing.T) {
	needSite(t)
	tag := outDir(t)
	mark := logMark(t)
	fill := "/tmp/spank-otel-" + tag + ".fill"
	alice(t, submit(fmt.Sprintf(`sbatch --wait -N1 -n1 --mem=64M -o /shared/out/%[1]s/slurm.out <<'EOF'
#!/bin/bash
srun -n1 dd if=/dev/zero of=%[2]s bs=1M count=56 conv=fsync status=none
srun -n1 bash -c 'grep -E "^(total_)?(in)?active_file |^hierarchical_memory_limit " /sys/fs/cgroup/memory/slurm*/uid_*/job_$SLURM_JOB_ID/memory.stat 2>/dev/null | tr "\n" " " > /shared/out/%[1]s/memory.stat; cat /sys/fs/cgroup/memory/slurm*/uid_*/job_$SLURM_JOB_ID/memory.usage_in_bytes >> /shared/out/%[1]s/memory.stat 2>/dev/null; true'
srun -n1 -o /shared/out/%[1]s/after-fill.%%t.env env -0
rm -f %[2]s
EOF`, tag, fill)))
	stat := alice(t, fmt.Sprintf("cat /shared/out/%s/memory.stat 2>/dev/null || true", tag))
	t.Logf("the job's memory cgroup after writing 56 MiB: %s", strings.TrimSpace(stat))
	tasks := collectN(t, tag, 1)
	checkIdentity(t, tasks[0], tasks[0].attrs(t))
	for _, l := range newLogLines(t, mark) {
		if strings.Contains(l, "error: spank-otel:") {
			t.Errorf("an error line for a job with 56 MiB of page cache in 64 MiB: %s", l)
		}
	}
}
