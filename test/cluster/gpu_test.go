//go:build cluster

package cluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spank-otel/spank-otel/libcarrier"
)

// Which GPU (issue 34). On 25.11 and 26.05 the site profile gives every
// compute node four fake GPUs (test/slurm-docker/entrypoint.sh, fake_gpus):
// device nodes /dev/nvidia0-3 with no driver behind them, a driver tree at
// /proc/driver/nvidia/gpus with UUIDs unique per node, gres.conf and
// ConstrainDevices=yes. The oracle is per task: opening a fake node fails
// with ENXIO when the task's device cgroup admits it and EPERM when not,
// so a task's UUIDs must be exactly those of the devices it may open, in
// the order of its CUDA_VISIBLE_DEVICES, or nothing.

// gpuReleases are the releases whose site profile has the fake GPUs
// (slurm-site-<version>.conf sets GresTypes=gpu).
var gpuReleases = []string{"25.11", "26.05"}

func needGPUs(t *testing.T) {
	t.Helper()
	needSite(t)
	if !slices.Contains(gpuReleases, *slurmVersion) {
		t.Skipf("the fake GPUs are on the site profile of %v only, not %s", gpuReleases, *slurmVersion)
	}
}

// recordGPUs is a task command that records the task's environment and,
// as pseudo-variables at the end, which /dev/nvidiaN its device cgroup
// admits (GPU_ORACLE, "0:admitted,1:denied,...") and what the library
// finds in the task (GPUFIND, from /shared/gpufind where the task sees it:
// not inside a container).
const recordGPUs = `bash -c 'o=; for i in 0 1 2 3 4 5 6 7; do [ -e /dev/nvidia$i ] || continue; m=$( (exec 3</dev/nvidia$i) 2>&1 ); case $m in *"No such device or address"*) o=$o$i:admitted,;; *"Operation not permitted"*) o=$o$i:denied,;; *) o=$o$i:other,;; esac; done; f=; [ ! -x /shared/gpufind ] || f=$(/shared/gpufind 2>&1); env -0; printf "GPU_ORACLE=%s\0GPUFIND=%s\0" "$o" "$f"'`

// nodeGPU is one fake GPU as its node's driver tree shows it.
type nodeGPU struct {
	pci, uuid string
	minor     int
}

// gpusOn is the number of fake GPUs of a node (entrypoint.sh, gpu_count).
func gpusOn(node string) int {
	if node == "c3" {
		return 8
	}
	return 4
}

// nodeGPUs reads a node's driver tree as root, outside any job, in PCI
// order.
func nodeGPUs(t *testing.T, node string) []nodeGPU {
	t.Helper()
	out, errOut, err := clusterCmd(t, node, true, nil, "bash", "-c",
		`for d in /proc/driver/nvidia/gpus/*/; do p=${d%/}; p=${p##*/}; printf '%s %s %s\n' "$p" "$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$d/information")" "$(sed -n 's/^Device Minor:[[:space:]]*//p' "$d/information")"; done`)
	if err != nil {
		t.Fatalf("%s: reading the driver tree: %v\n%s", node, err, errOut)
	}
	var gpus []nodeGPU
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("%s: driver tree line %q", node, line)
		}
		minor, err := strconv.Atoi(f[2])
		if err != nil || !strings.HasPrefix(f[1], "GPU-") {
			t.Fatalf("%s: driver tree line %q", node, line)
		}
		gpus = append(gpus, nodeGPU{pci: f[0], uuid: f[1], minor: minor})
	}
	slices.SortFunc(gpus, func(a, b nodeGPU) int { return strings.Compare(a.pci, b.pci) })
	if want := gpusOn(node); len(gpus) != want {
		t.Fatalf("%s: %d fake GPUs, want %d: %v", node, len(gpus), want, gpus)
	}
	return gpus
}

// installGpufind builds test/gpu/gpufind for the nodes and puts it at
// /shared/gpufind.
func installGpufind(t *testing.T) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpufind")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./test/gpu/gpufind")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build gpufind: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := clusterCmd(t, "", true, bytes.NewReader(data), "bash", "-c",
		"cat >/shared/gpufind.new && chmod 0755 /shared/gpufind.new && mv /shared/gpufind.new /shared/gpufind"); err != nil {
		t.Fatalf("installing /shared/gpufind: %v\n%s", err, errOut)
	}
}

// gpuTruth is what the oracle says of one task: the UUIDs of the devices
// it may open, in the order of its CUDA_VISIBLE_DEVICES, and how many
// it may open. ok is false when CUDA_VISIBLE_DEVICES does not index the
// admitted devices (then no UUID list is right).
type gpuTruth struct {
	uuids    []string
	admitted int
	ok       bool
}

// truthOf computes a task's truth from its oracle and its node's driver
// tree. Under ConstrainDevices CUDA enumerates only the devices the task
// may open, in PCI order (identical GPUs), and CUDA_VISIBLE_DEVICES holds
// indices into that enumeration, or (gres.conf Flags=env_uuid) the UUIDs
// of admitted devices, which CUDA enumerates in that order.
func truthOf(t *testing.T, tk task, gpus []nodeGPU) gpuTruth {
	t.Helper()
	oracle := tk.env["GPU_ORACLE"]
	var visible []nodeGPU // the admitted devices, PCI order
	for _, g := range gpus {
		switch {
		case strings.Contains(oracle, strconv.Itoa(g.minor)+":admitted,"):
			visible = append(visible, g)
		case strings.Contains(oracle, strconv.Itoa(g.minor)+":denied,"):
		default:
			t.Fatalf("%s: the oracle cannot tell /dev/nvidia%d: GPU_ORACLE=%q", tk.name, g.minor, oracle)
		}
	}
	truth := gpuTruth{admitted: len(visible), ok: true}
	cvd, set := tk.env["CUDA_VISIBLE_DEVICES"]
	if !set || cvd == "" {
		truth.ok = len(visible) == 0 || !set
		return truth
	}
	for _, e := range strings.Split(cvd, ",") {
		if strings.HasPrefix(e, "GPU-") {
			i := slices.IndexFunc(visible, func(g nodeGPU) bool { return g.uuid == e })
			if i < 0 || slices.Contains(truth.uuids, e) {
				truth.ok = false
				return truth
			}
			truth.uuids = append(truth.uuids, e)
			continue
		}
		i, err := strconv.Atoi(e)
		if err != nil || i < 0 || i >= len(visible) {
			truth.ok = false
			return truth
		}
		truth.uuids = append(truth.uuids, visible[i].uuid)
	}
	return truth
}

// gpuCase is what a step's tasks must show: exact (the truth, nonempty),
// none (no UUIDs), or exactOrNone (the truth or nothing: cases Slurm's
// task environment cannot tell, docs/spec.md).
type gpuWant int

const (
	exact gpuWant = iota
	none
	exactOrNone
)

// checkGPUs checks one task's GPU keys, as the plugin wrote them, and
// what the library finds in the task (gpufind, where it ran), against the
// oracle.
func checkGPUs(t *testing.T, tk task, gpus []nodeGPU, want gpuWant) {
	t.Helper()
	truth := truthOf(t, tk, gpus)
	attrs := tk.attrs(t)
	wrote, count := writtenGPUs(t, tk, attrs), attrs["nv.gpu.count"]
	t.Logf("%s: CUDA_VISIBLE_DEVICES=%q SLURM_STEP_GPUS=%q SLURM_GPUS_ON_NODE=%q oracle=%s plugin=%q",
		tk.name, tk.env["CUDA_VISIBLE_DEVICES"], tk.env["SLURM_STEP_GPUS"], tk.env["SLURM_GPUS_ON_NODE"], tk.env["GPU_ORACLE"], wrote)
	wantList := strings.Join(truth.uuids, ",")
	switch {
	case wrote != "" && (!truth.ok || wrote != wantList):
		t.Errorf("%s: the plugin names %q, but the task may open %q in CUDA order (oracle %s)", tk.name, wrote, wantList, tk.env["GPU_ORACLE"])
	case want == exact && (wrote == "" || !truth.ok || wantList == ""):
		t.Errorf("%s: the plugin names %q, want %q", tk.name, wrote, wantList)
	case want == none && wrote != "":
		t.Errorf("%s: the plugin names %q, want nothing", tk.name, wrote)
	}
	if wantCount := strconv.Itoa(len(strings.Split(wrote, ","))); wrote != "" && count != wantCount || wrote == "" && count != "" {
		t.Errorf("%s: nv.gpu.count=%q with the GPUs %q", tk.name, count, wrote)
	}
	// The library, run by the task itself: the same answer, where the
	// plugin's is one (the batch script's is the job's, no step's).
	if lib, ran := tk.env["GPUFIND"]; ran && lib != "" && !strings.HasPrefix(tk.name, "batch.") {
		if strings.Contains(lib, "gpufind:") {
			lib = strings.TrimSpace(lib[strings.LastIndex(lib, "\n")+1:])
			if strings.Contains(lib, "gpufind:") {
				lib = ""
			}
		}
		if lib != wrote {
			t.Errorf("%s: the plugin wrote %q, the library in the task finds %q", tk.name, wrote, lib)
		}
	}
}

// writtenGPUs is the GPUs the plugin named in attrs, comma-separated in
// CUDA's order: nv.gpu.<i>.uuid for i from 0, with nv.gpu.uuid the one
// GPU of a task of one. Any other GPU key is an error.
func writtenGPUs(t *testing.T, tk task, attrs map[string]string) string {
	t.Helper()
	var uuids []string
	for i := 0; ; i++ {
		u, ok := attrs["nv.gpu."+strconv.Itoa(i)+".uuid"]
		if !ok {
			break
		}
		uuids = append(uuids, u)
	}
	for k := range attrs {
		if strings.HasPrefix(k, "nv.gpu.") && k != "nv.gpu.count" && k != "nv.gpu.uuid" && !regexp.MustCompile(`^nv\.gpu\.(\d|1[0-5])\.uuid$`).MatchString(k) {
			t.Errorf("%s: unexpected GPU key %s", tk.name, k)
		}
	}
	if one, ok := attrs["nv.gpu.uuid"]; ok != (len(uuids) == 1) || ok && one != uuids[0] {
		t.Errorf("%s: nv.gpu.uuid=%q with the GPUs %q", tk.name, one, uuids)
	}
	return strings.Join(uuids, ",")
}

// admittedMinors is the minors the task's oracle says it may open,
// comma-separated, as spank-otel task-env --admitted takes them.
func admittedMinors(tk task) string {
	var minors []string
	for _, e := range strings.Split(tk.env["GPU_ORACLE"], ",") {
		if m, ok := strings.CutSuffix(e, ":admitted"); ok {
			minors = append(minors, m)
		}
	}
	return strings.Join(minors, ",")
}

// checkTaskEnv runs spank-otel task-env on the task's node with the
// task's environment and step, and the GPUs its device cgroup admits
// (--admitted: the command runs outside the task's cgroups): an admin
// reproduces the task's GPU keys.
func checkTaskEnv(t *testing.T, tk task) {
	t.Helper()
	step := tk.env["SLURM_STEP_ID"]
	args := []string{"env", "-i"}
	for _, kv := range tk.list {
		if !strings.HasPrefix(kv, "GPU_ORACLE=") && !strings.HasPrefix(kv, "GPUFIND=") {
			args = append(args, kv)
		}
	}
	args = append(args, "spank-otel", "task-env", "--step-id", step)
	if m := admittedMinors(tk); m != "" {
		args = append(args, "--admitted", m)
	}
	out, errOut, err := clusterCmd(t, nodeOf(tk), false, nil, args...)
	if err != nil {
		t.Fatalf("%s: spank-otel task-env on %s: %v\n%s", tk.name, nodeOf(tk), err, errOut)
	}
	got, _ := libcarrier.Parse(strings.TrimSpace(out))
	attrs := tk.attrs(t)
	keys := []string{"nv.gpu.count", "nv.gpu.uuid"}
	for i := range 8 {
		keys = append(keys, "nv.gpu."+strconv.Itoa(i)+".uuid")
	}
	for _, k := range keys {
		if got[k] != attrs[k] {
			t.Errorf("%s: spank-otel task-env --step-id %s on %s gives %s=%q, the plugin wrote %q (stderr %q)", tk.name, step, nodeOf(tk), k, got[k], attrs[k], errOut)
		}
	}
}

// nodeOf is the node a task ran on.
func nodeOf(tk task) string { return tk.env["SLURMD_NODENAME"] }

func TestGPUs(t *testing.T) {
	needGPUs(t)
	installGpufind(t)
	truth := map[string][]nodeGPU{}
	seen := map[string]string{}
	for _, node := range []string{"c1", "c2", "c3"} {
		truth[node] = nodeGPUs(t, node)
		for _, g := range truth[node] {
			if other, dup := seen[g.uuid]; dup {
				t.Fatalf("UUID %s on %s and %s: the fake GPUs must be unique per node", g.uuid, other, node)
			}
			seen[g.uuid] = node
		}
	}
	tag := outDir(t)
	o := "/shared/out/" + tag + "/"
	body := `sbatch --wait -N1 -n3 -O --gres=gpu:4 -w c1 -o ` + o + `slurm.out <<'EOF'
#!/bin/bash
` + recordGPUs + ` > ` + o + `batch.$SLURM_JOB_ID.env
srun -n1 --gres=gpu:1 -o ` + o + `gpu1.%j.%s.%t.env ` + recordGPUs + `
srun -n1 --gres=gpu:2 -o ` + o + `gpu2.%j.%s.%t.env ` + recordGPUs + `
srun -n2 -O --gres=gpu:2 -o ` + o + `gpu2x2.%j.%s.%t.env ` + recordGPUs + `
srun -n3 -O --gpus-per-task=1 -o ` + o + `pertask.%j.%s.%t.env ` + recordGPUs + `
srun -n2 -O --gres=gpu:4 --gpu-bind=map_gpu:3,1 -o ` + o + `mapgpu.%j.%s.%t.env ` + recordGPUs + `
srun -n2 -O --gres=gpu:2 --gpu-bind=single:1 -o ` + o + `single.%j.%s.%t.env ` + recordGPUs + `
srun -n2 -O --gres=gpu:2 --gpu-bind=closest -o ` + o + `closest.%j.%s.%t.env ` + recordGPUs + `
srun -n3 -O --gres=gpu:4 -o ` + o + `all3.%j.%s.%t.env ` + recordGPUs + `
srun -n1 -o ` + o + `stepdefault.%j.%s.%t.env ` + recordGPUs + `
srun -n1 --gres=none -o ` + o + `nogres.%j.%s.%t.env ` + recordGPUs + `
EOF
srun -n1 --gres=gpu:1 -w c2 -o /dev/null sleep 10 &
sleep 3
srun -n1 --gres=gpu:3 -w c2 -o ` + o + `srun3.%j.%s.%t.env ` + recordGPUs + `
wait
srun -n1 -p configless --gres=gpu:2 -o ` + o + `configless.%j.%s.%t.env ` + recordGPUs + `
srun -n1 -p configless --gres=gpu:8 -o ` + o + `eight.%j.%s.%t.env ` + recordGPUs + `
srun -n3 -O -p configless --gres=gpu:8 -o ` + o + `eight3.%j.%s.%t.env ` + recordGPUs + `
srun -n2 -O -p configless --gres=gpu:8 --gpu-bind=mask_gpu:0xf,0xf0 -o ` + o + `eighthalf.%j.%s.%t.env ` + recordGPUs + `
srun -n1 -w c2 -o ` + o + `nogpus.%j.%s.%t.env ` + recordGPUs + `
srun -N2 -n4 --gpus-per-task=1 -o ` + o + `pertask2n.%j.%s.%t.env ` + recordGPUs
	// Three tasks on one node of 2 CPUs, not the four: with GRES,
	// Slurm's cons_tres refuses -n4 -O there ("req_cores:3 >
	// aval_cores_tot:2"); four tasks run on two nodes instead.
	tasks := runJob(t, tag, 32, body)
	checkFilesFromStep(t, tasks)
	// srun3 runs while another job holds c2's first GPU: its GPUs are
	// GRES 1-3, CUDA's 0-2.
	for _, tk := range tasks {
		if strings.HasPrefix(tk.name, "srun3.") && tk.env["SLURM_STEP_GPUS"] != "1,2,3" {
			t.Errorf("%s: SLURM_STEP_GPUS=%q, want 1,2,3 (the other job holds GPU 0)", tk.name, tk.env["SLURM_STEP_GPUS"])
		}
	}
	wants := map[string]gpuWant{
		// The batch script is the job's context, no task of a step.
		"batch":  none,
		"gpu1":   exact,
		"gpu2":   exact,
		"gpu2x2": exact,
		// Tasks bound to some of their step's GPUs: Slurm's task
		// environment does not say which (see misnamed below); the
		// task's device cgroup does.
		"pertask":     exact,
		"pertask2n":   exact,
		"mapgpu":      exact,
		"single":      exact,
		"closest":     exact,
		"all3":        exact,
		"stepdefault": exact, // a step without --gres gets the job's GPUs
		"nogres":      none,
		"srun3":       exact,
		"configless":  exact,
		// c3's eight GPUs: one task of all eight (torchrun), tasks that
		// each see all eight (the process picks LOCAL_RANK), and two
		// tasks of four each (--gpu-bind=mask_gpu: --gpus-per-task=4 is refused on a node of 2 CPUs).
		"eight":     exact,
		"eight3":    exact,
		"eighthalf": exact,
		"nogpus":    none,
	}
	misnamed := 0
	for _, tk := range tasks {
		kind, _, _ := strings.Cut(tk.name, ".")
		want, ok := wants[kind]
		if !ok {
			t.Errorf("unexpected task file %s", tk.name)
			continue
		}
		checkGPUs(t, tk, truth[nodeOf(tk)], want)
		if kind != "batch" && tk.env["CUDA_VISIBLE_DEVICES"] != "" {
			checkTaskEnv(t, tk)
		}
		if (kind == "pertask" || kind == "pertask2n" || kind == "mapgpu" || kind == "single") && !stepGPUsAdmitted(tk) {
			misnamed++
		}
	}
	// Why the device cgroup decides for bound tasks: Slurm names the
	// step's first GPUs in every bound task's SLURM_STEP_GPUS
	// (gres_common.c), so most of them name a GPU the task may not open.
	// Should a release fix that, this fails, and docs/spec.md's reason
	// changes.
	if misnamed == 0 {
		t.Errorf("every bound task's SLURM_STEP_GPUS names its own GPU: Slurm's task environment can now be trusted for bound tasks (docs/spec.md)")
	}
	t.Logf("%d of 11 bound tasks have a SLURM_STEP_GPUS that names a GPU they may not open", misnamed)
}

// searchLine is the helper's debug line on where the GPU search read the
// node's files (cgo/main.go).
var searchLine = regexp.MustCompile(`\[(\d+)\.(\w+)\] .*gpu search: node files from (.*)$`)

// checkFilesFromStep checks that every step task whose GPUs were
// searched for found the node's files in what its step parent read
// (spank/nodefiles.h), not by reading the node itself, the configless
// partition's (on c3) included. The batch script, a job context, is not
// searched.
func checkFilesFromStep(t *testing.T, tasks []task) {
	t.Helper()
	jobs := map[string]bool{}
	searched := 0
	for _, tk := range tasks {
		jobs[tk.env["SLURM_JOB_ID"]] = true
		if !strings.HasPrefix(tk.name, "batch.") && (tk.env["CUDA_VISIBLE_DEVICES"] != "" || tk.env["SLURM_STEP_GPUS"] != "") {
			searched++
		}
	}
	var lines []string
	for _, o := range onNodes(true, "grep -a 'gpu search:' /var/log/slurm/slurmd.log || true", "c1", "c2", "c3") {
		if o.err != nil {
			t.Fatalf("%s: reading slurmd.log: %v", o.node, o.err)
		}
		for _, l := range strings.Split(o.out, "\n") {
			m := searchLine.FindStringSubmatch(l)
			if m == nil || !jobs[m[1]] {
				continue
			}
			lines = append(lines, l)
			if m[3] != "the step" {
				t.Errorf("a task's GPU search read the node itself: %s", l)
			}
		}
	}
	if len(lines) != searched {
		t.Errorf("%d step tasks searched for GPUs, %d search lines: %q", searched, len(lines), lines)
	}
	t.Logf("%d step tasks searched for GPUs, each in its step parent's records", searched)
}

// stepGPUsAdmitted reports whether the GPUs a task's SLURM_STEP_GPUS
// names (GRES indices; gres.conf's File= order is minor order here) are
// exactly those the task may open.
func stepGPUsAdmitted(tk task) bool {
	var named []string
	for _, e := range strings.Split(tk.env["SLURM_STEP_GPUS"], ",") {
		named = append(named, e+":admitted,")
	}
	n := 0
	for _, e := range named {
		if !strings.Contains(tk.env["GPU_ORACLE"], e) {
			return false
		}
		n++
	}
	return n == strings.Count(tk.env["GPU_ORACLE"], ":admitted,")
}

// TestGPUsInContainer: a pyxis container step's tasks name their GPUs
// too, with pyxis before spank-otel (the default: the task is in the
// container's mount namespace when the helper is asked, and the step
// parent's records of the node's files answer the search) and after it.
func TestGPUsInContainer(t *testing.T) {
	needGPUs(t)
	needPyxis(t)
	gpus := nodeGPUs(t, "c1")
	for _, order := range []string{"pyxis first", "spank-otel first"} {
		t.Run(order, func(t *testing.T) {
			// After spank-otel, pyxis replaces the task's carrier with the
			// image's (pyxis_test.go, case 2) unless told to keep it.
			keep := ""
			if order == "spank-otel first" {
				spankOtelBeforePyxis(t)
				keep = " --container-env=OTEL_RESOURCE_ATTRIBUTES"
			}
			tag := outDir(t)
			tasks := runJob(t, tag, 3, `srun -w c1 -n1 --gres=gpu:2 `+containerMem+keep+` --container-image=`+containerImage+
				` -o /shared/out/`+tag+`/two.%j.%s.%t.env `+recordGPUs+`
srun -w c1 -n2 --gpus-per-task=1 `+containerMem+keep+` --container-image=`+containerImage+
				` -o /shared/out/`+tag+`/bound.%j.%s.%t.env `+recordGPUs)
			for _, tk := range tasks {
				checkGPUs(t, tk, gpus, exact)
			}
			checkFilesFromStep(t, tasks)
		})
	}
}

// TestGPUsEnvUUID: Slurm 26.05's gres.conf Flags=env_uuid, with
// AutoDetect=nvidia reading the fake driver tree, puts the GPUs' UUIDs in
// CUDA_VISIBLE_DEVICES. c2 runs that way for this test (its gres.conf
// line replaced, every daemon reconfigured) and gets its File= line back
// at the end. Each task must name exactly the UUIDs of the devices its
// cgroup admits, in the order of its CUDA_VISIBLE_DEVICES.
func TestGPUsEnvUUID(t *testing.T) {
	needGPUs(t)
	if *slurmVersion != "26.05" {
		t.Skipf("gres.conf Flags=env_uuid is new in 26.05, this is %s", *slurmVersion)
	}
	gpus := nodeGPUs(t, "c2")
	asRoot(t, `cp /etc/slurm/gres.conf /run/gres.conf.orig &&
sed -i 's|^NodeName=c\[1-2\] .*|NodeName=c1 Name=gpu File=/dev/nvidia[0-3]\nNodeName=c2 AutoDetect=nvidia Name=gpu Count=4 Flags=env_uuid|' /etc/slurm/gres.conf &&
grep -q '^NodeName=c2 AutoDetect=nvidia' /etc/slurm/gres.conf`, "c2")
	t.Cleanup(func() {
		asRoot(t, "cp /run/gres.conf.orig /etc/slurm/gres.conf", "c2")
		reconfigureGRES(t, "c2", false)
	})
	reconfigureGRES(t, "c2", true)

	tag := outDir(t)
	o := "/shared/out/" + tag + "/"
	// One allocation, as TestGPUs: jobs of their own, back to back, are
	// refused while the last one completes ("never runnable").
	body := `sbatch --wait -w c2 -N1 -n3 -O --gres=gpu:4 -o ` + o + `slurm.out <<'EOF'
#!/bin/bash
srun -n1 --gres=gpu:1 -o ` + o + `one.%j.%s.%t.env ` + recordGPUs + `
srun -n1 --gres=gpu:4 -o ` + o + `all.%j.%s.%t.env ` + recordGPUs + `
srun -n2 -O --gres=gpu:4 -o ` + o + `shared.%j.%s.%t.env ` + recordGPUs + `
srun -n3 -O --gpus-per-task=1 -o ` + o + `pertask.%j.%s.%t.env ` + recordGPUs + `
srun -n2 -O --gres=gpu:4 --gpu-bind=map_gpu:3,1 -o ` + o + `mapgpu.%j.%s.%t.env ` + recordGPUs + `
srun -n1 --gres=none -o ` + o + `nogres.%j.%s.%t.env ` + recordGPUs + `
EOF`
	tasks := runJob(t, tag, 10, body)
	for _, tk := range tasks {
		kind, _, _ := strings.Cut(tk.name, ".")
		if kind == "nogres" {
			checkGPUs(t, tk, gpus, none)
			continue
		}
		// The flag took: every entry is a UUID, none an index.
		for _, e := range strings.Split(tk.env["CUDA_VISIBLE_DEVICES"], ",") {
			if !strings.HasPrefix(e, "GPU-") {
				t.Errorf("%s: CUDA_VISIBLE_DEVICES=%q holds %q, not a UUID: Flags=env_uuid is not in force", tk.name, tk.env["CUDA_VISIBLE_DEVICES"], e)
			}
		}
		checkGPUs(t, tk, gpus, exact)
		checkTaskEnv(t, tk)
	}
}

// reconfigureGRES has node's slurmd read its configuration again
// (SIGHUP: it executes itself anew) and waits until it has loaded its
// GPUs with the env_uuid flag (uuid) or without it, and the node is in
// service. Not scontrol reconfigure: slurmctld, restarted by it, refuses
// some GPU requests for a while after ("never runnable"), and the other
// nodes need not restart.
func reconfigureGRES(t *testing.T, node string, uuid bool) {
	t.Helper()
	mark := strings.TrimSpace(alice(t, "date +%s"))
	asRoot(t, "pkill -HUP -x slurmd", node)
	want := "without"
	if uuid {
		want = "with"
	}
	// slurmd logs one line per GPU as it loads them: Flags=...,UUID.
	check := `awk -v since="$(date -d @` + mark + ` +%Y-%m-%dT%H:%M:%S)" 'substr($1, 2, 19) >= since && /Gres Name=gpu / { n++; if (/Flags=[^ ]*UUID/) u++ } END { print n + 0, u + 0 }' /var/log/slurm/slurmd.log`
	ok := waitFor(60*time.Second, time.Second, func() bool {
		out, _, err := clusterCmd(t, node, true, nil, "bash", "-c", check)
		f := strings.Fields(out)
		if err != nil || len(f) != 2 || f[0] == "0" {
			return false
		}
		if (f[1] != "0") != uuid {
			return false
		}
		state := strings.TrimSpace(alice(t, "sinfo -h -n "+node+" -o %T"))
		return state == "idle" || state == "mixed"
	})
	if !ok {
		out, _, _ := clusterCmd(t, node, true, nil, "bash", "-c", "tail -n 30 /var/log/slurm/slurmd.log")
		t.Fatalf("%s did not come back %s Flags=env_uuid within 60 s of scontrol reconfigure:\n%s", node, want, out)
	}
}
