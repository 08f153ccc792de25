//go:build cluster

package cluster

import (
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Python jobs as ML engineers write them (test/pyjob): the OpenTelemetry
// Python SDK set up the ordinary way (Resource.create(), the OTLP/HTTP
// exporter to OTEL_EXPORTER_OTLP_ENDPOINT), no spank-otel code, one span
// for the run and one per training step, sent to the cluster's Jaeger from
// tasks given fake GPUs. The nodes' Python has the SDK from its upstream
// archive (test/slurm-docker/python.sh).

const (
	pyJobDir = "/usr/lib/spank-otel-test/pyjob"
	pySteps  = 5 // step spans per worker, plus its run span
)

// pySDKKeys are the resource attributes the Python SDK adds of its own: the
// Go SDK's, and a service.instance.id per process.
var pySDKKeys = map[string]bool{"service.instance.id": true}

func init() { maps.Copy(pySDKKeys, sdkKeys) }

// withoutSDKKeys is a span's resource less what the Python SDK adds.
func withoutSDKKeys(res map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range res {
		if !pySDKKeys[k] {
			out[k] = v
		}
	}
	return out
}

// pythonJob submits an sbatch job of two nodes whose one step runs cmd in
// each task, after recording the task's environment (as probeJob); the
// user's carrier is backendCarrier and the service "train". It returns the
// job id and the tasks.
func pythonJob(t *testing.T, tasks int, sbatchFlags, cmd string) (string, []task) {
	t.Helper()
	tag := outDir(t)
	o := "/shared/out/" + tag
	out := alice(t, fmt.Sprintf(`set -e; cd /shared; export OTEL_RESOURCE_ATTRIBUTES='%[2]s' OTEL_SERVICE_NAME=train
sbatch --wait --parsable -N2 %[3]s -o %[1]s/slurm.out <<'EOF'
#!/bin/bash
srun bash -c 'env -0 > %[1]s/train.$SLURM_PROCID.env && exec %[4]s'
EOF`, o, backendCarrier, sbatchFlags, cmd))
	job := strings.TrimSpace(out)
	log, _, _ := clusterCmd(t, "", false, nil, "cat", o+"/slurm.out")
	t.Logf("job %s output:\n%s", job, log)
	return job, collectN(t, tag, tasks)
}

// jobTags is a Jaeger tag query of the job's spans, with more tags.
func jobTags(job string, kv ...string) url.Values {
	tags := map[string]string{"slurm.job.id": job}
	for i := 0; i+1 < len(kv); i += 2 {
		tags[kv[i]] = kv[i+1]
	}
	var b strings.Builder
	for k, v := range tags {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%q", k, v)
	}
	return url.Values{"tags": {"{" + b.String() + "}"}}
}

// TestPythonJobInJaeger: srun -N2 -n4 --gpus-per-task=1 --otel-rank
// python3 train.py, one worker per task. Every span's resource is its
// task's carrier plus the SDK's keys, and Jaeger finds the spans by the
// job, by rank, by node and by GPU.
func TestPythonJobInJaeger(t *testing.T) {
	needGPUs(t)
	base := jaegerURL(t)
	job, tasks := pythonJob(t, 4, "-n4 --gpus-per-task=1 --otel-rank", "python3 "+pyJobDir+"/train.py "+strconv.Itoa(pySteps))
	byRank := map[string]task{}
	perNode := map[string]int{}
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		checkIdentity(t, tk, attrs)
		rank := tk.env["SLURM_PROCID"]
		if attrs["nv.dl.rank"] != rank || attrs["nv.dl.world_size"] != "4" {
			t.Errorf("%s: with --otel-rank nv.dl.rank=%q nv.dl.world_size=%q, want %s and 4", tk.name, attrs["nv.dl.rank"], attrs["nv.dl.world_size"], rank)
		}
		if !strings.HasPrefix(attrs["nv.gpu.uuid"], "GPU-") || attrs["nv.gpu.count"] != "1" {
			t.Errorf("%s: one GPU per task, but nv.gpu.uuid=%q nv.gpu.count=%q", tk.name, attrs["nv.gpu.uuid"], attrs["nv.gpu.count"])
		}
		byRank[rank] = tk
		perNode[tk.env["SLURMD_NODENAME"]]++
	}
	perTask := pySteps + 1
	spans := waitSpans(t, base, jobTags(job), 4*perTask)
	t.Logf("Jaeger holds %d spans with slurm.job.id=%s", len(spans), job)
	if len(spans) != 4*perTask {
		t.Errorf("job %s: %d spans, want %d", job, len(spans), 4*perTask)
	}
	for _, s := range spans {
		tk, ok := byRank[s.Resource["nv.dl.rank"]]
		if !ok {
			t.Errorf("span %s with nv.dl.rank %q, no task of the job: %v", s.Operation, s.Resource["nv.dl.rank"], s.Resource)
			continue
		}
		if diff := mapDiff(withoutSDKKeys(s.Resource), tk.attrs(t)); diff != "" {
			t.Errorf("%s: span %s's resource is not the task's carrier:\n%s", tk.name, s.Operation, diff)
		}
		if s.Service != "train" {
			t.Errorf("%s: span %s of service %q, want the job's OTEL_SERVICE_NAME train", tk.name, s.Operation, s.Service)
		}
	}
	// What a user asks Jaeger: each query, and the spans it must find.
	type query struct {
		name string
		q    url.Values
		want int
	}
	var queries []query
	for rank, tk := range byRank {
		queries = append(queries, query{"rank " + rank, jobTags(job, "nv.dl.rank", rank), perTask})
		// A GPU alone finds the task that used it, whatever the job.
		uuid := tk.attrs(t)["nv.gpu.uuid"]
		queries = append(queries, query{"GPU " + uuid, url.Values{"tags": {fmt.Sprintf(`{"nv.gpu.uuid":%q}`, uuid)}}, -1})
	}
	for node, n := range perNode {
		queries = append(queries, query{"node " + node, jobTags(job, "slurm.node.name", node), n * perTask})
	}
	for _, q := range queries {
		got := findSpans(t, base, q.q)
		if q.want < 0 { // the GPU: this job's spans of it are one task's
			mine := 0
			for _, s := range got {
				if s.Resource["slurm.job.id"] == job {
					mine++
				}
			}
			if mine != perTask {
				t.Errorf("Jaeger by %s: %d spans of job %s, want %d (one task's)", q.name, mine, job, perTask)
			}
			continue
		}
		if len(got) != q.want {
			t.Errorf("Jaeger by %s: %d spans, want %d", q.name, len(got), q.want)
		}
	}
}

// TestPythonTorchrunShaped: one Slurm task per node starts two Python
// workers (multiprocessing's spawn, test/pyjob/launch.py), each passing its
// own rank in Resource.create({...}). Every worker's spans carry the job's
// identity from the carrier its task inherited and the worker's own rank,
// which wins over the task's when --otel-rank writes one; without the
// option the plugin writes no rank.
func TestPythonTorchrunShaped(t *testing.T) {
	needGPUs(t)
	base := jaegerURL(t)
	const nproc = 2
	for _, tc := range []struct {
		name, flags string
		taskRank    bool // the plugin writes the task's rank keys
	}{
		{"default", "", false},
		{"otel-rank", "--otel-rank", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, tasks := pythonJob(t, 2, "--ntasks-per-node=1 -c2 --gres=gpu:2 "+tc.flags,
				fmt.Sprintf("python3 %s/launch.py %d %d", pyJobDir, nproc, pySteps))
			byNode := map[string]task{} // SLURM_NODEID → the task
			for _, tk := range tasks {
				attrs := tk.attrs(t)
				checkIdentity(t, tk, attrs)
				if _, ok := attrs["nv.dl.rank"]; ok != tc.taskRank {
					t.Errorf("%s: nv.dl.rank in the carrier: %v, want %v: %q", tk.name, ok, tc.taskRank, tk.env["OTEL_RESOURCE_ATTRIBUTES"])
				}
				if attrs["nv.gpu.count"] != "2" {
					t.Errorf("%s: nv.gpu.count=%q, want the task's 2", tk.name, attrs["nv.gpu.count"])
				}
				byNode[tk.env["SLURM_NODEID"]] = tk
			}
			world := len(tasks) * nproc
			perWorker := pySteps + 1
			spans := waitSpans(t, base, jobTags(job), world*perWorker)
			perRank := map[string]int{}
			for _, s := range spans {
				rank, err := strconv.Atoi(s.Resource["nv.dl.rank"])
				if err != nil || rank < 0 || rank >= world {
					t.Errorf("span %s: nv.dl.rank %q is no worker's", s.Operation, s.Resource["nv.dl.rank"])
					continue
				}
				perRank[strconv.Itoa(rank)]++
				tk := byNode[strconv.Itoa(rank/nproc)]
				// The task's carrier with the worker's own rank keys over it.
				want := tk.attrs(t)
				want["nv.dl.rank"] = strconv.Itoa(rank)
				want["nv.dl.local_rank"] = strconv.Itoa(rank % nproc)
				want["nv.dl.world_size"] = strconv.Itoa(world)
				if diff := mapDiff(withoutSDKKeys(s.Resource), want); diff != "" {
					t.Errorf("worker %d on %s: span %s's resource:\n%s", rank, tk.env["SLURMD_NODENAME"], s.Operation, diff)
				}
			}
			for r := 0; r < world; r++ {
				if perRank[strconv.Itoa(r)] != perWorker {
					t.Errorf("job %s: spans per worker rank %v, want %d each of %d workers", job, perRank, perWorker, world)
					break
				}
				// Jaeger's tag search finds a worker by the rank its code gave.
				if got := findSpans(t, base, jobTags(job, "nv.dl.rank", strconv.Itoa(r))); len(got) != perWorker {
					t.Errorf("Jaeger by rank %d: %d spans, want %d", r, len(got), perWorker)
				}
			}
		})
	}
}
