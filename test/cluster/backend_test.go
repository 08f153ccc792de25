//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spank-otel/spank-otel/libcarrier"
)

// The whole path: tasks of a Slurm job run programs instrumented with the
// OpenTelemetry Go and JS SDKs (test/otelprobe), which send one span each
// to the cluster's Jaeger (OTEL_EXPORTER_OTLP_ENDPOINT comes from the
// nodes' TaskProlog); the test finds them through Jaeger's HTTP API by the
// job's slurm.job.id.

// backendCarrier is the user's own carrier in these tests: a comma and a
// space inside values, percent-encoded as the user must.
const backendCarrier = "deployment.environment=prod,user.team=ml%2Cinfra,user.note=two%20words"

// sdkKeys are the resource attributes the SDKs add of their own.
var sdkKeys = map[string]bool{
	"service.name":           true,
	"telemetry.sdk.language": true,
	"telemetry.sdk.name":     true,
	"telemetry.sdk.version":  true,
}

var probes = []string{"otel-probe-go", "otel-probe-js"}

// jaegerURL is the address of the cluster's Jaeger, from the host.
func jaegerURL(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), "test", "slurm-docker", "cluster"), "jaeger-url", "--slurm", *slurmVersion)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cluster jaeger-url: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// jaegerSpan is one span of Jaeger's /api/traces answer with its process
// (the resource: service name and the other attributes as tags).
type jaegerSpan struct {
	TraceID   string
	Operation string
	Service   string
	Resource  map[string]string
}

type apiTraces struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			OperationName string `json:"operationName"`
			ProcessID     string `json:"processID"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
			Tags        []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"processes"`
	} `json:"data"`
	Errors []any `json:"errors"`
}

func getJSON(t testing.TB, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, body)
	}
}

// findSpans asks Jaeger for the spans of every service that match the
// query (url.Values of /api/traces without the service).
func findSpans(t testing.TB, base string, q url.Values) []jaegerSpan {
	t.Helper()
	var services struct{ Data []string }
	getJSON(t, base+"/api/services", &services)
	var spans []jaegerSpan
	for _, svc := range services.Data {
		qs := url.Values{"service": {svc}, "lookback": {"1h"}, "limit": {"1000"}}
		for k, v := range q {
			qs[k] = v
		}
		var tr apiTraces
		getJSON(t, base+"/api/traces?"+qs.Encode(), &tr)
		for _, d := range tr.Data {
			for _, s := range d.Spans {
				p := d.Processes[s.ProcessID]
				res := map[string]string{"service.name": p.ServiceName}
				for _, tag := range p.Tags {
					res[tag.Key] = fmt.Sprint(tag.Value)
				}
				spans = append(spans, jaegerSpan{TraceID: d.TraceID, Operation: s.OperationName, Service: p.ServiceName, Resource: res})
			}
		}
	}
	return spans
}

// waitSpans polls until want spans match or 30 s have passed.
func waitSpans(t testing.TB, base string, q url.Values, want int) []jaegerSpan {
	t.Helper()
	var spans []jaegerSpan
	waitFor(30*time.Second, 500*time.Millisecond, func() bool {
		spans = findSpans(t, base, q)
		return len(spans) >= want
	})
	return spans
}

// probeJob runs one sbatch job on two nodes whose steps run each probe in
// four tasks (srun -N2 -n4 PROBE NAME). Each task records its environment
// first, then execs the probe, so the span's process is the task itself
// (a separate step would not do: on Slurm 22.05 a step's SLURM_JOB_NAME is
// the step's name). sbatchFlags go to sbatch, and so to every step. It
// returns the job id, the recorded tasks (PROBE.RANK.env) and the batch
// script's node.
func probeJob(t *testing.T, sbatchFlags string) (job string, tasks []task, head string) {
	t.Helper()
	var tag string
	tag = outDir(t)
	var steps strings.Builder
	for _, p := range probes {
		fmt.Fprintf(&steps, "srun -N2 -n4 bash -c 'env -0 > /shared/out/%s/%s.$SLURM_PROCID.env && exec %s %s-$SLURM_JOB_ID'\n", tag, p, p, p)
	}
	out := alice(t, fmt.Sprintf(`set -e; cd /shared; export OTEL_RESOURCE_ATTRIBUTES='%[3]s'
sbatch --wait --parsable %[4]s -N2 -n4 -o /shared/out/%[1]s/slurm.out <<'EOF'
#!/bin/bash
set -e
echo "$SLURMD_NODENAME" > /shared/out/%[1]s/head
%[2]sEOF`, tag, steps.String(), backendCarrier, sbatchFlags))
	job = strings.TrimSpace(out)
	tasks = collect(t, tag)
	if len(tasks) != 4*len(probes) {
		t.Fatalf("job %s: got %d task environments, want %d: %v", job, len(tasks), 4*len(probes), names(tasks))
	}
	h, _, err := clusterCmd(t, "", false, nil, "cat", "/shared/out/"+tag+"/head", "/shared/out/"+tag+"/slurm.out")
	if err != nil {
		t.Fatal(err)
	}
	head, rest, _ := strings.Cut(h, "\n")
	if strings.TrimSpace(rest) != "" {
		t.Logf("job %s output:\n%s", job, rest)
	}
	return job, tasks, head
}

func TestSpansInJaeger(t *testing.T) {
	base := jaegerURL(t)
	job, tasks, head := probeJob(t, "")
	// The carrier each probe's task got, from the recorded environments,
	// by rank: each task's is its own.
	byRank := map[string]task{} // probe@rank → the task
	for _, tk := range tasks {
		probe, _, _ := strings.Cut(tk.name, ".")
		byRank[probe+"@"+tk.env["SLURM_PROCID"]] = tk
		if got := tk.env["OTEL_EXPORTER_OTLP_ENDPOINT"]; got != "http://jaeger:4318" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %q, want the TaskProlog's http://jaeger:4318", tk.name, got)
		}
	}
	if len(byRank) != 4*len(probes) {
		t.Fatalf("job %s: the probes ran as %d tasks, want 4 each", job, len(byRank))
	}
	spans := waitSpans(t, base, url.Values{"tags": {fmt.Sprintf(`{"slurm.job.id":%q}`, job)}}, 8)
	t.Logf("Jaeger holds %d spans with slurm.job.id=%s", len(spans), job)
	for _, probe := range probes {
		name := probe + "-" + job
		got := map[string]int{} // rank → spans
		for _, s := range spans {
			if s.Operation != name {
				continue
			}
			rank := s.Resource["slurm.task.id"]
			got[rank]++
			tk, ok := byRank[probe+"@"+rank]
			if !ok {
				t.Errorf("%s: span with slurm.task.id %q, a task the job did not run: %v", name, rank, s.Resource)
				continue
			}
			// Exactly what the plugin wrote for that task, plus the SDK's own.
			carrier := tk.attrs(t)
			res := map[string]string{}
			for k, v := range s.Resource {
				if !sdkKeys[k] {
					res[k] = v
				}
			}
			where := name + "@" + tk.env["SLURMD_NODENAME"] + " rank " + rank
			if diff := mapDiff(res, carrier); diff != "" {
				t.Errorf("%s: the span's resource is not the task's carrier:\n%s", where, diff)
			}
			checkIdentity(t, task{name: where, env: tk.env}, res)
			if res["slurm.head_node.name"] != head {
				t.Errorf("%s: slurm.head_node.name = %q, want the batch node %q", where, res["slurm.head_node.name"], head)
			}
			if res["user.note"] != "two words" || res["user.team"] != "ml,infra" {
				t.Errorf("%s: the user's attributes came out as user.note=%q user.team=%q", where, res["user.note"], res["user.team"])
			}
			if res["nv.dl.job.uuid"] == "" || res["slurm.job.id"] != job {
				t.Errorf("%s: identity missing: %v", where, res)
			}
		}
		if want := map[string]int{"0": 1, "1": 1, "2": 1, "3": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: spans per rank %v, want one per task %v", name, got, want)
		}
	}
}

func TestSpansInJaegerOptedOut(t *testing.T) {
	base := jaegerURL(t)
	job, tasks, _ := probeJob(t, "--otel-attrs=off")
	for _, tk := range tasks {
		if got := tk.env[libcarrier.EnvVar]; got != backendCarrier {
			t.Errorf("%s: with --otel-attrs=off the carrier is %q, want the user's %q", tk.name, got, backendCarrier)
		}
	}
	user, _ := libcarrier.Parse(backendCarrier)
	for _, probe := range probes {
		name := probe + "-" + job
		spans := waitSpans(t, base, url.Values{"operation": {name}}, 4)
		if len(spans) != 4 {
			t.Errorf("%s: %d spans in Jaeger, want 4", name, len(spans))
		}
		for _, s := range spans {
			res := map[string]string{}
			for k, v := range s.Resource {
				if !sdkKeys[k] {
					res[k] = v
				}
			}
			if diff := mapDiff(res, user); diff != "" {
				t.Errorf("%s: with --otel-attrs=off the resource must be the user's own attributes only:\n%s", name, diff)
			}
		}
	}
}

// mapDiff lists the keys on which got and want differ, or "".
func mapDiff(got, want map[string]string) string {
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for _, k := range sorted {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case gok && !wok:
			fmt.Fprintf(&b, "  %s = %q, not written by the plugin\n", k, g)
		case !gok && wok:
			fmt.Fprintf(&b, "  %s missing (the plugin wrote %q)\n", k, w)
		case g != w:
			fmt.Fprintf(&b, "  %s = %q, the plugin wrote %q\n", k, g, w)
		}
	}
	return b.String()
}

// TestDemo runs `make demo`'s script on the running cluster: it must end
// in Jaeger, with the UI's search page for the demo job rendered to
// build/demo/jaeger.png and listing the job's spans.
func TestDemo(t *testing.T) {
	root := repoRoot(t)
	png := filepath.Join(root, "build", "demo", "jaeger.png")
	dom := filepath.Join(root, "build", "demo", "jaeger.html")
	os.Remove(filepath.Join(root, "build", "demo", "jaeger-python.png"))
	os.Remove(png)
	os.Remove(dom)
	cmd := exec.Command(filepath.Join(root, "test", "slurm-docker", "demo.sh"), *slurmVersion)
	out, err := cmd.CombinedOutput()
	t.Logf("demo.sh:\n%s", out)
	if err != nil {
		t.Fatalf("demo.sh: %v", err)
	}
	text := string(out)
	base := jaegerURL(t)
	for _, want := range []string{base + "/search?", base + "/api/traces?", "slurm.job.id", "otel-probe-go", "otel-probe-js",
		`"slurm.task.id":"0"} -> 2 spans`, `"slurm.node.name":"c1"} -> 4 spans`, "step 0, task 0 of 4",
		// The Python job (demo-python.sh), on the releases whose nodes have the SDK and GPUs: TestDemo runs on those only.
		"Jaeger holds 16 spans of the job (4 tasks)", `"nv.dl.rank":"2"} -> 4 spans (want 4)`, `"} -> 8 spans (want 8)`,
		`{"nv.gpu.uuid":"GPU-`} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	for _, png := range []string{png, filepath.Join(root, "build", "demo", "jaeger-python.png")} {
		if fi, err := os.Stat(png); err != nil || fi.Size() < 10000 {
			t.Errorf("no screenshot at %s (%v)", png, err)
		}
	}
	page, err := os.ReadFile(dom)
	if err != nil {
		t.Fatal(err)
	}
	// The search page lists one trace per task: four of each probe.
	pageText := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(page), "")
	if !strings.Contains(pageText, "8 Traces") {
		t.Errorf("the Jaeger search page does not say it found 8 traces")
	}
	for _, op := range []string{"otel-probe-go", "otel-probe-js"} {
		if n := strings.Count(pageText, "demo: "+op); n != 4 {
			t.Errorf("the Jaeger search page lists %d traces of %q, want 4", n, op)
		}
	}
}
