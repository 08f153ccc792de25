//go:build cluster

package cluster

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStepHelperMode: plugstack.conf's helper=step (issue 43, section 3),
// one spank-otel-helper per step on a node instead of one helper per task.
// Bound GPU tasks name exactly the GPUs their device cgroup admits (the
// tasks ask themselves: the step's helper is not in their cgroups), in a
// plain step and in a pyxis container step; every task of a step of four
// gets its value from one helper; the log says so; nothing is left running
// (TestMain's check of the compute nodes).
func TestStepHelperMode(t *testing.T) {
	needGPUs(t)
	needPyxis(t)
	installGpufind(t)
	gpus := map[string][]nodeGPU{}
	for _, node := range []string{"c1", "c2"} {
		gpus[node] = nodeGPUs(t, node)
	}
	setPlugstack(t, "lib="+installedLib+" helper=step")
	defer restorePlugstack(t)
	mark := logMark(t)
	tag := outDir(t)
	tasks := runJob(t, tag, 8, `srun -w c1 -n4 --gpus-per-task=1 -o /shared/out/`+tag+`/bound.%j.%s.%t.env `+recordGPUs+`
srun -w c1 -n2 --gres=gpu:2 -o /shared/out/`+tag+`/two.%j.%s.%t.env `+recordGPUs+`
srun -w c1 -n2 --gpus-per-task=1 `+containerMem+` --container-image=`+containerImage+
		` -o /shared/out/`+tag+`/container.%j.%s.%t.env `+recordGPUs)
	// A step of -w c1 may take c2 as well: each task against its node.
	for _, tk := range tasks {
		checkGPUs(t, tk, gpus[nodeOf(tk)], exact)
	}
	lines := newLogLines(t, mark)
	// One helper per step on each of its nodes, for that node's tasks:
	// the sruns' helpers were started for their 8 tasks in all.
	started := regexp.MustCompile(`\[[0-9]+\.([0-9]+)\] .*step helper: started for ([0-9]+) tasks`)
	sum := 0
	for _, l := range lines {
		if m := started.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			sum += n
		}
	}
	if sum != len(tasks) {
		t.Errorf("the sruns' step helpers were started for %d tasks in all, want %d", sum, len(tasks))
	}
	for _, l := range lines {
		if strings.Contains(l, "error: spank-otel:") || strings.Contains(l, "the helper process") {
			t.Errorf("unexpected plugin line with helper=step: %s", l)
		}
	}
}
