//go:build cluster

package cluster

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spank-otel/spank-otel/libcarrier"
)

// The real container stack of GPU sites: NVIDIA's pyxis 0.24.0 driving
// enroot 4.1.2, built from the upstream archives and enabled on the site
// profile (test/slurm-docker/containers.sh). Tasks run in the squashfs image
// /srv/images/base.sqsh, whose /etc/environment sets
// OTEL_RESOURCE_ATTRIBUTES=image.attr=from-image: pyxis imports the
// container's environment into the task with overwrite, except for the
// variables named by --container-env. Each case records every task's
// environment and asserts the exact carrier, computed with the project's
// own `spank-otel task-env` from that task's Slurm variables.

const (
	containerImage = "/srv/images/base.sqsh"
	// imageMarker exists only in the image: a task that reads it runs inside.
	imageMarker = "/etc/spank-otel-test-image"
	// imageCarrier is the image's own OTEL_RESOURCE_ATTRIBUTES.
	imageCarrier = "image.attr=from-image"
	pyxisConf    = stackDir + "/pyxis.conf"
	// A container step unpacks the image (pyxis's `enroot create`) inside
	// the step's memory cgroup: with the site profile's 256 MB per CPU
	// unsquashfs is OOM-killed.
	containerMem = "--mem=1G"
)

// inImage is a task command that records its environment, with
// IN_IMAGE set to the image marker's contents when the task runs inside
// the image (empty outside).
const inImage = `bash -c 'IN_IMAGE="$(cat ` + imageMarker + ` 2>/dev/null)" exec env -0'`

// The releases built from ../shared/third_party (containers.sh); the
// README names them.
const (
	pyxisVersion  = "0.24.0"
	enrootVersion = "4.1.2"
)

// needPyxis fails the test when the cluster does not run pyxis: the site
// profile enables it on every node, with enroot and the image in place.
func needPyxis(t *testing.T) {
	t.Helper()
	needSite(t)
	for _, node := range append([]string{"slurmctld"}, strings.Fields(computeNodes)...) {
		out, _, err := clusterCmd(t, node, true, nil, "bash", "-c",
			"cat "+pyxisConf+" >/dev/null && test -s "+containerImage+" && enroot version")
		if err != nil || strings.TrimSpace(out) != enrootVersion {
			t.Fatalf("%s: the site profile must run pyxis with enroot %s and %s (test/slurm-docker/containers.sh): %v %q", node, enrootVersion, containerImage, err, out)
		}
		if node == "slurmctld" {
			continue
		}
		// slurmd logs the version of the pyxis it loaded.
		out, _, _ = clusterCmd(t, node, true, nil, "bash", "-c", "grep -a -o 'pyxis: version v[0-9.]*' /var/log/slurm/slurmd.log | tail -n1")
		if got := strings.TrimSpace(out); got != "pyxis: version v"+pyxisVersion {
			t.Fatalf("%s: slurmd loaded %q, want pyxis %s", node, got, pyxisVersion)
		}
	}
}

// spankOtelBeforePyxis lists spank-otel before pyxis on the compute nodes
// for the rest of the test (the include sorts file names: pyxis.conf
// comes before spank-otel.conf by default).
func spankOtelBeforePyxis(t *testing.T) {
	t.Helper()
	nodes := strings.Fields(computeNodes)
	asRoot(t, fmt.Sprintf("mv %s %s/zz-pyxis.conf", pyxisConf, stackDir), nodes...)
	t.Cleanup(func() { asRoot(t, fmt.Sprintf("mv %s/zz-pyxis.conf %s", stackDir, pyxisConf), nodes...) })
}

// pyxisOrders are the two plugstack orders; "after" is the default and the
// one the README recommends.
var pyxisOrders = []struct {
	name  string
	setup func(*testing.T)
}{
	{"spank-otel after pyxis", func(*testing.T) {}},
	{"spank-otel before pyxis", spankOtelBeforePyxis},
}

// containerTasks runs `srun ARGS --container-image=... inImage` with the
// user's carrier exported and returns the recorded tasks, each checked to
// have run inside the image.
func containerTasks(t *testing.T, n int, args string) []task {
	t.Helper()
	tag := outDir(t)
	tasks := runJob(t, tag, n, fmt.Sprintf(`srun %s %s --container-image=%s -o /shared/out/%s/%%j.%%s.%%t.env %s`,
		args, containerMem, containerImage, tag, inImage))
	for _, tk := range tasks {
		checkInImage(t, tk)
	}
	return tasks
}

func checkInImage(t testing.TB, tk task) {
	t.Helper()
	if !strings.HasPrefix(tk.env["IN_IMAGE"], "spank-otel test image") {
		t.Errorf("%s: the task did not run inside %s (%s: %q)", tk.name, containerImage, imageMarker, tk.env["IN_IMAGE"])
	}
}

// checkCarrier checks that a task's carrier is exactly what spank-otel
// writes for the task's environment when the task inherits `inherited`.
func checkCarrier(t testing.TB, tk task, inherited string) {
	t.Helper()
	want := taskEnvOf(t, tk, inherited, true)
	if got := tk.env[libcarrier.EnvVar]; got != want {
		t.Errorf("%s: %s\n got %q\nwant %q (spank-otel's value over %q)", tk.name, libcarrier.EnvVar, got, want, inherited)
	}
}

// Case 1: spank-otel after pyxis, the recommended order. pyxis's import
// replaces the user's carrier with the image's; spank-otel then merges the
// identity into it.
func TestPyxisSpankOtelAfter(t *testing.T) {
	needPyxis(t)
	for _, tk := range containerTasks(t, 4, "-N2 -n4") {
		attrs := tk.attrs(t)
		checkJobIdentity(t, tk, attrs)
		checkCarrier(t, tk, imageCarrier)
		if attrs["image.attr"] != "from-image" {
			t.Errorf("%s: image.attr = %q, want the image's from-image", tk.name, attrs["image.attr"])
		}
		if _, ok := attrs["user.team"]; ok {
			t.Errorf("%s: the user's user.team survived pyxis's import of the image's carrier: %q", tk.name, tk.env[libcarrier.EnvVar])
		}
	}
}

// Case 2: spank-otel before pyxis. The job runs (pyxis joins the
// container's user namespace, which the kernel refuses to a multithreaded
// task), and pyxis's import leaves the image's value alone: the identity
// and the user's attributes are gone.
func TestPyxisSpankOtelBefore(t *testing.T) {
	needPyxis(t)
	spankOtelBeforePyxis(t)
	for _, tk := range containerTasks(t, 4, "-N2 -n4") {
		if got := tk.env[libcarrier.EnvVar]; got != imageCarrier {
			t.Errorf("%s: with spank-otel before pyxis the task's carrier is %q, want exactly the image's %q", tk.name, got, imageCarrier)
		}
	}
}

// Case 3: --container-env=OTEL_RESOURCE_ATTRIBUTES keeps the host's value
// over the image's: in either order the user's attributes and the identity
// arrive, and the image's do not.
func TestPyxisContainerEnv(t *testing.T) {
	needPyxis(t)
	for _, order := range pyxisOrders {
		t.Run(order.name, func(t *testing.T) {
			order.setup(t)
			for _, tk := range containerTasks(t, 2, "-N2 -n2 --container-env=OTEL_RESOURCE_ATTRIBUTES") {
				attrs := tk.attrs(t)
				checkIdentity(t, tk, attrs)
				checkCarrier(t, tk, userCarrier)
				if _, ok := attrs["image.attr"]; ok {
					t.Errorf("%s: the image's image.attr arrived despite --container-env: %q", tk.name, tk.env[libcarrier.EnvVar])
				}
			}
		})
	}
}

// sbatchContainer submits a batch script and waits for the job to end
// (sbatch --wait polls at up to 32 s intervals), failing unless it
// completed with exit code 0. It returns the job id.
func sbatchContainer(t *testing.T, args, script string) string {
	t.Helper()
	job := strings.TrimSpace(alice(t, submit(fmt.Sprintf("sbatch --parsable %s <<'EOF'\n%s\nEOF", args, script))))
	if state, code := jobEnd(t, job, 3*time.Minute); state != "COMPLETED" || code != "0:0" {
		t.Fatalf("job %s ended as %s with exit code %s", job, state, code)
	}
	return job
}

// Case 4: a batch job in the container (#SBATCH --container-image, which
// pyxis 0.24 offers on every release here: its sbatch support has no
// Slurm-version condition) whose steps inherit the container from the
// batch step's srun. One nv.dl.job.uuid across batch and steps. Each step
// task gets the image's carrier from pyxis again, so it does not inherit
// the batch step's: slurm.head_node.name, which only the batch step
// derives, is absent from the steps.
func TestPyxisBatchJob(t *testing.T) {
	needPyxis(t)
	tag := outDir(t)
	job := sbatchContainer(t, fmt.Sprintf("-N2 -n2 %s -o /shared/out/%s/slurm.out", containerMem, tag), fmt.Sprintf(`#!/bin/bash
#SBATCH --container-image=%[1]s
#SBATCH --container-mounts=/shared
IN_IMAGE="$(cat %[2]s 2>/dev/null)" env -0 > /shared/out/%[3]s/$SLURM_JOB_ID.batch.env
srun -N2 -n2 -o /shared/out/%[3]s/%%j.%%s.%%t.env %[4]s`, containerImage, imageMarker, tag, inImage))
	tasks := collectN(t, tag, 3)
	batch, steps := byStep(tasks)
	if len(batch) != 1 {
		t.Fatalf("job %s: got %d batch and %d step tasks, want 1 and 2: %v", job, len(batch), len(steps), names(tasks))
	}
	uuid := ""
	for _, tk := range tasks {
		checkInImage(t, tk)
		attrs := tk.attrs(t)
		checkJobIdentity(t, tk, attrs)
		checkCarrier(t, tk, imageCarrier)
		if uuid == "" {
			uuid = attrs["nv.dl.job.uuid"]
		}
		if attrs["nv.dl.job.uuid"] != uuid {
			t.Errorf("%s: nv.dl.job.uuid %q differs from the job's %q", tk.name, attrs["nv.dl.job.uuid"], uuid)
		}
		head, ok := attrs["slurm.head_node.name"]
		isBatch := tk.name == batch[0].name
		switch {
		case isBatch && head != tk.env["SLURMD_NODENAME"]:
			t.Errorf("%s: the batch step's slurm.head_node.name = %q, want %q", tk.name, head, tk.env["SLURMD_NODENAME"])
		case !isBatch && ok:
			t.Errorf("%s: a step inherited slurm.head_node.name = %q through pyxis's import", tk.name, head)
		}
	}
}

// Case 5: a multi-node step with two tasks per node (the first task on a
// node starts the container, the other joins it), with and without the
// user's home mounted (--container-mount-home, --no-container-mount-home).
func TestPyxisMultiNode(t *testing.T) {
	needPyxis(t)
	mark := fmt.Sprintf("home-%d", time.Now().UnixNano())
	alice(t, fmt.Sprintf("echo %s > ~/.spank-otel-home-mark", mark))
	readMark := `bash -c 'HOME_MARK="$(cat ~/.spank-otel-home-mark 2>/dev/null)" ` + strings.TrimPrefix(inImage, "bash -c '")
	for _, c := range []struct {
		flag string
		want string
	}{
		{"--container-mount-home", mark},
		{"--no-container-mount-home", ""},
	} {
		t.Run(c.flag, func(t *testing.T) {
			tag := outDir(t)
			tasks := runJob(t, tag, 4, fmt.Sprintf(`srun -N2 -n4 %s %s --container-image=%s -o /shared/out/%s/%%j.%%s.%%t.env %s`,
				c.flag, containerMem, containerImage, tag, readMark))
			ranks, nodes := map[string]bool{}, map[string]int{}
			for _, tk := range tasks {
				checkInImage(t, tk)
				attrs := tk.attrs(t)
				checkJobIdentity(t, tk, attrs)
				checkCarrier(t, tk, imageCarrier)
				expect(t, tk.name, attrs, map[string]string{
					"slurm.ntasks":        "4",
					"slurm.nnodes":        "2",
					"slurm.topology.addr": tk.env["SLURMD_NODENAME"],
				})
				if got := tk.env["HOME_MARK"]; got != c.want {
					t.Errorf("%s: %s: the home mark reads %q, want %q", tk.name, c.flag, got, c.want)
				}
				ranks[tk.env["SLURM_PROCID"]] = true
				nodes[tk.env["SLURMD_NODENAME"]]++
			}
			if len(ranks) != 4 || len(nodes) != 2 || nodes["c1"] != 2 || nodes["c2"] != 2 {
				t.Errorf("want 4 ranks, two on each of c1 and c2; got ranks %v, nodes %v", ranks, nodes)
			}
		})
	}
}

// Case 6: --otel-attrs=off in a container job leaves the variable exactly
// as pyxis set it: the image's value, in either order.
func TestPyxisOptOut(t *testing.T) {
	needPyxis(t)
	for _, order := range pyxisOrders {
		t.Run(order.name, func(t *testing.T) {
			order.setup(t)
			for _, tk := range containerTasks(t, 2, "-N2 -n2 --otel-attrs=off") {
				if got := tk.env[libcarrier.EnvVar]; got != imageCarrier {
					t.Errorf("%s: with --otel-attrs=off the carrier is %q, want pyxis's %q", tk.name, got, imageCarrier)
				}
			}
		})
	}
}

// Case 7: the Go and the JS probe run inside the container (spank-otel
// after pyxis) and their spans reach Jaeger with the task's carrier as
// their resource: the identity and the image's attribute.
func TestPyxisSpansInJaeger(t *testing.T) {
	needPyxis(t)
	base := jaegerURL(t)
	tag := outDir(t)
	run := fmt.Sprintf("%s.%d", tag, time.Now().UnixNano()%1000000)
	// Each task records its environment, then runs the probes, which
	// inherit it unchanged (their own output goes to the .err files).
	tasks := runJob(t, tag, 2, fmt.Sprintf(`srun -N2 -n2 %s --container-image=%s -o /shared/out/%s/%%j.%%s.%%t.env -e /shared/out/%[3]s/%%j.%%s.%%t.err \
	bash -c 'IN_IMAGE="$(cat %s 2>/dev/null)" env -0; otel-probe-go %s-go >&2 && otel-probe-js %[5]s-js >&2'`,
		containerMem, containerImage, tag, imageMarker, run))
	byAddr := map[string]task{}
	job := ""
	for _, tk := range tasks {
		checkInImage(t, tk)
		checkJobIdentity(t, tk, tk.attrs(t))
		checkCarrier(t, tk, imageCarrier)
		byAddr[tk.env["SLURM_TOPOLOGY_ADDR"]] = tk
		job = tk.env["SLURM_JOB_ID"]
	}
	for _, probe := range []string{"go", "js"} {
		op := run + "-" + probe
		spans := waitSpans(t, base, url.Values{"operation": {op}}, 2)
		if len(spans) != 2 {
			t.Errorf("%s: %d spans in Jaeger, want one per task (2)", op, len(spans))
		}
		for _, s := range spans {
			tk, ok := byAddr[s.Resource["slurm.topology.addr"]]
			if !ok {
				t.Errorf("%s: a span from slurm.topology.addr %q, not a node of job %s: %v", op, s.Resource["slurm.topology.addr"], job, s.Resource)
				continue
			}
			res := map[string]string{}
			for k, v := range s.Resource {
				if !sdkKeys[k] {
					res[k] = v
				}
			}
			if diff := mapDiff(res, tk.attrs(t)); diff != "" {
				t.Errorf("%s on %s: the span's resource is not the task's carrier:\n%s", op, tk.env["SLURMD_NODENAME"], diff)
			}
			if res["slurm.job.id"] != job || res["image.attr"] != "from-image" || res["nv.dl.job.uuid"] == "" {
				t.Errorf("%s: the span lacks the identity or the image's attribute: %v", op, res)
			}
		}
	}
}
