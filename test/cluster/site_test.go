//go:build cluster

package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The cases of a site-shaped cluster: many tasks per node, memory limits,
// heterogeneous jobs, export modes, requeue, the interactive step. Most
// need the site profile (cgroups, binding, memory as a resource).

func needSite(t *testing.T) {
	t.Helper()
	if *profile == "site" {
		return
	}
	if slices.Contains(basicTests, t.Name()) {
		t.Fatalf("%s is one of basicTests but needs the site profile", t.Name())
	}
	// Only when -run names a site test on a basic cluster.
	t.Skipf("needs the site profile (cgroups, binding, memory); this cluster runs %q", *profile)
}

// timedSteps runs srun with args in one allocation, alternately with the
// plugin on and off, and returns the median wall time of each in ms.
func timedSteps(t *testing.T, salloc, srun string, pairs int) (on, off int) {
	t.Helper()
	out := alice(t, fmt.Sprintf(`salloc -Q %s bash -c '
srun %[2]s true; srun --otel-attrs=off %[2]s true
for i in $(seq %[3]d); do
  t0=$(date +%%s%%N); srun %[2]s true; t1=$(date +%%s%%N)
  srun --otel-attrs=off %[2]s true; t2=$(date +%%s%%N)
  echo $(( (t1 - t0) / 1000000 )) $(( (t2 - t1) / 1000000 ))
done'`, salloc, srun, pairs))
	var ons, offs []int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var a, b int
		if n, _ := fmt.Sscan(l, &a, &b); n == 2 {
			ons, offs = append(ons, a), append(offs, b)
		}
	}
	if len(ons) != pairs {
		t.Fatalf("want %d timings, got %q", pairs, out)
	}
	return median(ons), median(offs)
}

func median(v []int) int {
	s := append([]int(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func TestManyTasksPerNode(t *testing.T) {
	cases := []struct {
		name, alloc, step string
		tasks             int
	}{
		// Each helper of a step on a node needs 12 MiB of the job's room
		// (spank/membound.h): 384 MiB for 32, more than DefMemPerCPU gives
		// this job on a node of 2 CPUs.
		{"32 tasks on one node", "-N1 -n32 -O --mem=512M", "-N1 -n32 -O --mem=512M", 32},
		{"16 tasks on two nodes", "-N2 -n16 -O", "-N2 -n16 -O", 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tag := outDir(t)
			tasks := runJob(t, tag, c.tasks, fmt.Sprintf(`srun %s -o /shared/out/%s/%%j.%%s.%%t.env env -0`, c.step, tag))
			ranks := map[string]bool{}
			for _, tk := range tasks {
				attrs := tk.attrs(t)
				checkIdentity(t, tk, attrs)
				expect(t, tk.name, attrs, map[string]string{
					"slurm.ntasks":        strconv.Itoa(c.tasks),
					"slurm.topology.addr": tk.env["SLURM_TOPOLOGY_ADDR"],
				})
				ranks[tk.env["SLURM_PROCID"]] = true
			}
			if len(ranks) != c.tasks {
				t.Errorf("%d distinct ranks among %d tasks", len(ranks), c.tasks)
			}
			on, off := timedSteps(t, c.alloc, c.step, 5)
			t.Logf("srun %s true: median %d ms with the plugin, %d ms without (%.2fx), 5 pairs", c.step, on, off, float64(on)/float64(off))
		})
	}
}

func TestCPUBinding(t *testing.T) {
	needSite(t)
	withStack(t, map[string]string{"zz-probe.conf": "required " + probeSo + " role=probe name=AFTER"})
	tag := outDir(t)
	mark := logMark(t)
	tasks := runJob(t, tag, 1, fmt.Sprintf(`srun -N1 -n1 -c2 --cpu-bind=cores -o /shared/out/%s/task.env env -0`, tag))
	if cpus := probeOf(t, tasks[0], "AFTER")["cpus"]; cpus != "2" {
		t.Errorf("srun -c2 gave the task %s CPUs; want 2 (the machine has 2)", cpus)
	}
	var lines []string
	for _, l := range newLogLines(t, mark) {
		if m := goRuntimeLine.FindStringSubmatch(l); m != nil {
			lines = append(lines, l)
			if m[1] != "1" {
				t.Errorf("a task bound to 2 CPUs: the helper's GOMAXPROCS is %s, want 1: %s", m[1], l)
			}
		}
	}
	if len(lines) != 1 {
		t.Errorf("want one go runtime line, got %v", lines)
	}
}

// memoryFloor finds, by bisection, the smallest --mem (MB) with which
// "srun ARGS --mem=M /bin/true" succeeds with the given plugin option.
// Slurm raises a limit below MinRAMSpace (30 MB by default) to it.
func memoryFloor(t *testing.T, args, opt string) int {
	t.Helper()
	runs := func(mb int) bool {
		// A step starved of memory can hang in Slurm itself.
		_, _, err := clusterCmd(t, "", false, nil, "bash", "-c",
			fmt.Sprintf("timeout -s KILL 30 srun -J floor %s %s --mem=%dM /bin/true || { scancel -u alice -n floor; false; }", args, opt, mb))
		return err == nil
	}
	lo, hi := 0, 256 // lo fails (or is 0), hi runs
	if !runs(hi) {
		t.Fatalf("srun %s --mem=%dM fails with %q", args, hi, opt)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if runs(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func TestMemoryLimit(t *testing.T) {
	needSite(t)
	for _, c := range []struct{ name, args string }{
		{"1 task per node", "-N1 -n1"},
		{"8 tasks per node", "-N1 -n8 -O"},
	} {
		t.Run(c.name, func(t *testing.T) {
			floor := memoryFloor(t, c.args, "--otel-attrs=off")
			mark := logMark(t)
			tag := outDir(t)
			// At the floor, with the plugin: the job must run; the
			// helper either fits or is not started, never an OOM kill.
			out, errOut, err := clusterCmd(t, "", false, nil, "bash", "-c", submit(fmt.Sprintf(
				"timeout -s KILL 60 srun %s --mem=%dM -o /shared/out/%s/%%t.env env -0", c.args, floor, tag)))
			if err != nil {
				t.Fatalf("srun %s --mem=%dM runs with the plugin off and fails with it on: %v\n%s%s", c.args, floor, err, out, errOut)
			}
			tasks := collect(t, tag)
			written := 0
			for _, tk := range tasks {
				if attrs, _ := parseLoose(tk.env["OTEL_RESOURCE_ATTRIBUTES"]); attrs["slurm.job.id"] == tk.env["SLURM_JOB_ID"] {
					written++
				}
			}
			var skipped, oom []string
			for _, l := range newLogLines(t, mark) {
				if strings.Contains(l, "not loading the library: memory cgroup") {
					skipped = append(skipped, l)
				}
			}
			for _, node := range []string{"c1"} {
				logs, _, _ := clusterCmd(t, node, true, nil, "bash", "-c", "grep -ai 'oom' /var/log/slurm/slurmd.log | tail -n 5 || true")
				for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
					if l != "" && !mark[l] && strings.Contains(strings.ToLower(l), "oom-kill") {
						oom = append(oom, l)
					}
				}
			}
			if len(oom) > 0 {
				t.Errorf("OOM kills at --mem=%dM: %v", floor, oom)
			}
			if written+len(skipped) < len(tasks) {
				t.Errorf("%d of %d tasks got attributes and %d helpers were skipped for memory: the rest are unexplained", written, len(tasks), len(skipped))
			}
			t.Logf("%s: the smallest --mem with the plugin off is %d MB; with it on the job runs there, %d of %d tasks carry the identity, %d helpers skipped for lack of memory",
				c.name, floor, written, len(tasks), len(skipped))
			// With room to spare every task gets its identity.
			tag2 := outDir(t) + "-room"
			alice(t, submit(fmt.Sprintf("mkdir -p /shared/out/%[1]s; srun %[2]s --mem=%[3]dM -o /shared/out/%[1]s/%%t.env env -0", tag2, c.args, floor+256)))
			for _, tk := range collect(t, tag2) {
				checkIdentity(t, tk, tk.attrs(t))
			}
		})
	}
}

func TestHeterogeneousJob(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 6, fmt.Sprintf(`sbatch --wait -o /shared/out/%[1]s/slurm.out <<'EOF'
#!/bin/bash
#SBATCH -N1 -n1
#SBATCH hetjob
#SBATCH -N1 -n2
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun --het-group=0,1 -o /shared/out/%[1]s/step.%%j.%%s.%%t.env env -0
EOF
srun -N1 -n1 -o /shared/out/%[1]s/srun0.%%t.env env -0 : -N1 -n1 -o /shared/out/%[1]s/srun1.%%t.env env -0`, tag))
	uuids := map[string][]string{}
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		// Each task carries what SPEC section 4's rule gives for its own
		// environment.
		checkIdentity(t, tk, attrs)
		group := strings.SplitN(tk.name, ".", 2)[0]
		uuids[attrs["nv.dl.job.uuid"]] = append(uuids[attrs["nv.dl.job.uuid"]], group+" (SLURM_JOB_ID="+tk.env["SLURM_JOB_ID"]+", het group "+tk.env["SLURM_HET_JOB_ID"]+"/"+tk.env["SLURM_HET_JOB_OFFSET"]+")")
	}
	for u, who := range uuids {
		t.Logf("nv.dl.job.uuid %s: %v", u, who)
	}
	// sbatch's components: one job id for every task, so one UUID.
	batchUUIDs := map[string]bool{}
	for _, tk := range tasks {
		if !strings.HasPrefix(tk.name, "srun") {
			batchUUIDs[tk.attrs(t)["nv.dl.job.uuid"]] = true
		}
	}
	if len(batchUUIDs) != 1 {
		t.Errorf("the tasks of one heterogeneous batch job carry %d job UUIDs: %v", len(batchUUIDs), uuids)
	}
}

func TestExportModes(t *testing.T) {
	tag := outDir(t)
	alice(t, submit(fmt.Sprintf(`
sbatch --wait --export=NONE -o /dev/null --wrap 'env -0 > /shared/out/%[1]s/none.batch.env; srun --export=ALL -o /shared/out/%[1]s/none.step.%%t.env /usr/bin/env -0'
sbatch --wait --export=ALL,OTEL_RESOURCE_ATTRIBUTES=user.team=ml%%2Cinfra -o /dev/null --wrap 'env -0 > /shared/out/%[1]s/all.batch.env'
`, tag)))
	// Every release tested (22.05 on) has --export=NIL.
	if out, errOut, err := clusterCmd(t, "", false, nil, "bash", "-c", fmt.Sprintf(`srun --export=NIL -o /shared/out/%s/nil.%%t.env /usr/bin/env -0`, tag)); err != nil {
		t.Fatalf("srun --export=NIL failed: %v\n%s\n%s", err, out, errOut)
	}
	tasks := collectN(t, tag, 4) // none.batch, none.step, all.batch, nil
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		switch {
		case strings.HasPrefix(tk.name, "none."):
			// --export=NONE: the user's attributes stay behind; the
			// identity is written.
			expect(t, tk.name, attrs, map[string]string{"slurm.job.id": tk.env["SLURM_JOB_ID"], "nv.dl.job.uuid": jobUUID(tk.env["SLURM_CLUSTER_NAME"], tk.env["SLURM_JOB_ID"])})
		case strings.HasPrefix(tk.name, "nil."):
			expect(t, tk.name, attrs, map[string]string{"slurm.job.id": tk.env["SLURM_JOB_ID"]})
		default:
			checkIdentity(t, tk, attrs)
		}
	}
	// The nodes survive every user command.
	if out := alice(t, "sinfo -h -N -o '%N %T' | sort -u"); strings.Contains(out, "down") || strings.Contains(out, "drain") {
		t.Errorf("nodes after the export modes:\n%s", out)
	}
}

func TestRequeue(t *testing.T) {
	tag := outDir(t)
	job := strings.TrimSpace(alice(t, submit(fmt.Sprintf(`sbatch --parsable --requeue -o /dev/null <<'EOF'
#!/bin/bash
n=${SLURM_RESTART_COUNT:-0}
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.run$n.batch.env
spank-otel run-uuid > /shared/out/%[1]s/run$n.uuid
if [ "$n" = 0 ]; then scontrol requeue $SLURM_JOB_ID; sleep 300; fi
EOF`, tag))))
	// A requeued job waits before it may start again; let it go at once.
	// Done when the second run has written its files: squeue can list
	// nothing for a moment while the job is requeued, so its silence does
	// not mean the job is over.
	waitFor(3*time.Minute, time.Second, func() bool {
		done := alice(t, fmt.Sprintf("test -s /shared/out/%s/run1.uuid && echo done || true", tag))
		if strings.TrimSpace(done) == "done" {
			return true
		}
		state := strings.TrimSpace(alice(t, fmt.Sprintf("squeue -h -j %s -o '%%T %%r' 2>/dev/null || true", job)))
		if strings.HasPrefix(state, "PENDING") {
			alice(t, fmt.Sprintf("scontrol update jobid=%s starttime=now 2>/dev/null || true", job))
		}
		return false
	})
	tasks := collectN(t, tag, 2) // the two runs
	first, second := tasks[0].attrs(t), tasks[1].attrs(t)
	if first["slurm.restart_count"] != "0" || second["slurm.restart_count"] != "1" {
		t.Errorf("restart counts %q and %q, want 0 and 1", first["slurm.restart_count"], second["slurm.restart_count"])
	}
	if first["nv.dl.job.uuid"] != second["nv.dl.job.uuid"] {
		t.Errorf("the job UUID changed across the requeue: %s -> %s", first["nv.dl.job.uuid"], second["nv.dl.job.uuid"])
	}
	runs := alice(t, fmt.Sprintf("cat /shared/out/%[1]s/run0.uuid /shared/out/%[1]s/run1.uuid", tag))
	ids := strings.Fields(runs)
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("spank-otel run-uuid of the two runs: %q, want two different UUIDs", runs)
	}
}

func TestInteractiveStep(t *testing.T) {
	if *slurmVersion == "22.05" || *profile != "site" {
		t.Skipf("use_interactive_step is configured on 24.11 and later in the site profile; this is %s, %s", *slurmVersion, *profile)
	}
	tag := outDir(t)
	// No terminal here: srun ignores --pty and the shell reads stdin.
	clusterCmd(t, "", false, strings.NewReader(fmt.Sprintf("env -0 > /shared/out/%s/interactive.env\nexit\n", tag)),
		"bash", "-c", submit("export SHELL=/bin/bash; salloc -N1 2>/dev/null"))
	tasks := collect(t, tag)
	if len(tasks) != 1 {
		t.Fatalf("got %d tasks from the interactive step", len(tasks))
	}
	tk := tasks[0]
	attrs := tk.attrs(t)
	checkIdentity(t, tk, attrs)
	// The interactive step is job level: the head node, no topology.
	expect(t, tk.name, attrs, map[string]string{"slurm.head_node.name": tk.env["SLURMD_NODENAME"]})
	if v, ok := attrs["slurm.topology.addr"]; ok {
		t.Errorf("the interactive step carries slurm.topology.addr=%q", v)
	}
	t.Logf("interactive step: SLURM_STEP_ID=%s", tk.env["SLURM_STEP_ID"])
}

// configlessCache is where a configless slurmd keeps what slurmctld sent.
const configlessCache = "/var/lib/slurm/slurmd/conf-cache"

func TestConfigless(t *testing.T) {
	// c3 runs slurmd --conf-server: slurmctld sends slurm.conf, cgroup.conf
	// and plugstack.conf, but not the files plugstack.conf includes.
	out, _, err := clusterCmd(t, "c3", true, nil, "bash", "-c",
		"test ! -e /etc/slurm/slurm.conf && cat "+configlessCache+"/plugstack.conf")
	if err != nil {
		t.Fatalf("c3 does not run configless: %v %s", err, out)
	}
	if !strings.Contains(out, "include /etc/slurm/plugstack.conf.d/*.conf") {
		t.Fatalf("c3 received plugstack.conf %q", out)
	}
	localConf := stackDir + "/spank-otel.conf"
	written := func(name string) bool {
		t.Helper()
		tag := outDir(t) + "-" + name
		tasks := runJob(t, tag, 1, fmt.Sprintf(`mkdir -p /shared/out/%[1]s; srun -p configless -N1 -o /shared/out/%[1]s/task.env env -0`, tag))
		attrs, _ := parseLoose(tasks[0].env["OTEL_RESOURCE_ATTRIBUTES"])
		return attrs["slurm.job.id"] == tasks[0].env["SLURM_JOB_ID"]
	}
	// The include is resolved on the node: the plugin runs where the node
	// has the file itself, and not where only the controller has it.
	if !written("include-node-has-file") {
		t.Errorf("configless node with %s: no attributes", localConf)
	}
	asRoot(t, "mv "+localConf+" /root/spank-otel.conf.off", "c3")
	defer asRoot(t, "mv /root/spank-otel.conf.off "+localConf, "c3")
	if written("include-node-lacks-file") {
		t.Errorf("configless node without %s still got attributes: the included file was sent after all; update the README", localConf)
	}
	// A line in plugstack.conf itself reaches every configless node.
	line := "optional " + installedSo + " lib=" + installedLib
	asRoot(t, fmt.Sprintf("cp /etc/slurm/plugstack.conf /root/plugstack.conf.orig && printf '%%s\\n' %q >> /etc/slurm/plugstack.conf && scontrol reconfigure", line), "slurmctld")
	defer asRoot(t, "cp /root/plugstack.conf.orig /etc/slurm/plugstack.conf && scontrol reconfigure", "slurmctld")
	var got string
	if !waitFor(10*time.Second, 200*time.Millisecond, func() bool {
		got, _, _ = clusterCmd(t, "c3", true, nil, "cat", configlessCache+"/plugstack.conf")
		return strings.Contains(got, "spank_otel.so")
	}) {
		t.Fatalf("scontrol reconfigure did not bring the new plugstack.conf to c3: %q", got)
	}
	if !written("inline-line") {
		t.Errorf("configless node, plugin line inline in the controller's plugstack.conf: no attributes")
	}
}
