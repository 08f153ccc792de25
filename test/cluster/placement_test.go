//go:build cluster

package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// taskPlacement is a task script that records where the task runs before
// it prints its environment: its cgroups, CPU list and process group.
const taskPlacement = `bash -c 'export TASK_CGROUP="$(tr "\n" ";" </proc/self/cgroup)"
export TASK_CPUS="$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"
export TASK_PGID="$(cut -d" " -f5 /proc/$$/stat)"
exec env -0'`

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

// helperReport parses test/faultlib's placement value.
func helperReport(t testing.TB, tk task) map[string]string {
	t.Helper()
	v := tk.env["OTEL_RESOURCE_ATTRIBUTES"]
	r := map[string]string{}
	for _, f := range strings.Fields(v) {
		if k, val, ok := strings.Cut(f, "="); ok {
			r[k] = val
		}
	}
	if r["helper.cgroup"] == "" {
		t.Fatalf("%s: no helper report in OTEL_RESOURCE_ATTRIBUTES=%q", tk.name, v)
	}
	return r
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

// TestHelperPlacement: with helper=task, the helper process of every task
// runs where the task runs, as Slurm placed it (its cgroups, so that the job's memory and
// pids limits and proctrack cover it; one CPU of its mask; its process
// group), as the job's user with no capability. The library that reports
// this is test/faultlib's placement mode.
func TestHelperPlacement(t *testing.T) {
	setPlugstack(t, "lib="+faultLib+" timeout=20000 helper=task")
	defer restorePlugstack(t)
	tag := outDir(t)
	tasks := runJob(t, tag, 5, fmt.Sprintf(`export SPANK_OTEL_TEST_FAULT=placement
sbatch --wait -N2 -n4 -c1 -o /shared/out/%[1]s/slurm.out <<'EOF'
#!/bin/bash
%[2]s > /shared/out/%[1]s/batch.env
srun -N2 -n4 -c1 -o /shared/out/%[1]s/step.%%t.env %[2]s
EOF`, tag, taskPlacement))
	for _, tk := range tasks {
		r := helperReport(t, tk)
		helperCG, taskCG := cgroupLines(r["helper.cgroup"]), cgroupLines(tk.env["TASK_CGROUP"])
		if !slices.Equal(helperCG, taskCG) {
			t.Errorf("%s: the helper's cgroups are not the task's:\nhelper %v\ntask   %v", tk.name, helperCG, taskCG)
		}
		if *profile == "site" {
			// Slurm's task/cgroup put the task in cgroups of its own: the
			// comparison above is not between two of slurmd's.
			if !strings.Contains(tk.env["TASK_CGROUP"], "job_"+tk.env["SLURM_JOB_ID"]) {
				t.Errorf("%s: site profile, but the task is in no cgroup of job %s: %s", tk.name, tk.env["SLURM_JOB_ID"], tk.env["TASK_CGROUP"])
			}
		}
		helperCPUs, taskCPUs := cpuList(t, r["helper.cpus"]), cpuList(t, tk.env["TASK_CPUS"])
		if len(helperCPUs) != 1 || !slices.Contains(taskCPUs, helperCPUs[0]) {
			t.Errorf("%s: the helper runs on CPUs %v, want one of the task's %v", tk.name, helperCPUs, taskCPUs)
		}
		if r["helper.pgid"] != tk.env["TASK_PGID"] {
			t.Errorf("%s: the helper is in process group %s, the task in %s", tk.name, r["helper.pgid"], tk.env["TASK_PGID"])
		}
		if r["helper.uid"] != "1000/1000/1000/1000" || strings.Trim(r["helper.capeff"], "0") != "" ||
			strings.Trim(r["helper.capprm"], "0") != "" || r["helper.nnp"] != "1" {
			t.Errorf("%s: the helper is not alice without capabilities: uid %s CapEff %s CapPrm %s NoNewPrivs %s",
				tk.name, r["helper.uid"], r["helper.capeff"], r["helper.capprm"], r["helper.nnp"])
		}
		t.Logf("%s: helper on CPU %v of the task's %v, process group %s, %d cgroups as the task's", tk.name, helperCPUs, taskCPUs, r["helper.pgid"], len(helperCG))
	}
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
