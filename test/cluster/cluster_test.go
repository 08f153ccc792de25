//go:build cluster

// Package cluster tests the installed plugin in a real Slurm cluster: the
// docker-compose cluster of test/slurm-docker, brought up beforehand with
// `test/slurm-docker/cluster up --slurm V`. Run it with
//
//	go test -tags cluster ./test/cluster -slurm 26.05
//
// Every task writes its environment to the shared volume; the tests read the
// files back and check each task's OTEL_RESOURCE_ATTRIBUTES against the
// task's own Slurm variables, computed independently of the plugin.
package cluster

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/spank-otel/spank-otel/libcarrier"
)

var (
	slurmVersion = flag.String("slurm", "26.05", "Slurm version of the running cluster")
	profile      = flag.String("profile", "site", "profile of the running cluster: site or basic")
)

// userCarrier is what the submitting shell exports: the user's own
// attributes, one with a percent-encoded comma, which must survive.
const userCarrier = "deployment.environment=prod,user.team=ml%2Cinfra"

// repoRoot is the repository's top directory.
func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// clusterCmd runs argv on node (the controller when empty) as `cluster
// exec` would, as root or alice, and returns stdout, stderr and the
// command's error.
func clusterCmd(t testing.TB, node string, root bool, stdin io.Reader, argv ...string) (string, string, error) {
	t.Helper()
	return clusterExec(node, root, stdin, argv...)
}

// clusterExec is clusterCmd where there is no test (TestMain). It runs
// docker exec on the node's container itself: through `cluster exec`,
// which starts bash and sources its libraries first, every command cost
// a quarter of a second more, and the fault matrix runs hundreds.
func clusterExec(node string, root bool, stdin io.Reader, argv ...string) (string, string, error) {
	if node == "" {
		node = "slurmctld"
	}
	name, err := containerOf(node)
	if err != nil {
		return "", "", err
	}
	// The user and directory `cluster exec` gives.
	args := []string{"exec", "-i", "--user", "alice", "--workdir", "/home/alice"}
	if root {
		args = []string{"exec", "-i", "--user", "root", "--workdir", "/root"}
	}
	args = append(append(args, name), argv...)
	cmd := exec.Command("docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, stdin
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

// containers maps each node to its container, as the cluster script names
// them (`cluster containers`: the release and SPANK_OTEL_INSTANCE), read
// once.
var containers struct {
	once  sync.Once
	names map[string]string
	err   error
}

// containerOf is the name of node's container.
func containerOf(node string) (string, error) {
	containers.once.Do(func() {
		cmd := exec.Command(filepath.Join(repoRoot(nil), "test", "slurm-docker", "cluster"),
			"containers", "--slurm", *slurmVersion, "--profile", *profile)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			containers.err = fmt.Errorf("cluster containers: %v: %s", err, stderr.String())
			return
		}
		containers.names = map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if n, c, ok := strings.Cut(line, " "); ok {
				containers.names[n] = c
			}
		}
	})
	if containers.err != nil {
		return "", containers.err
	}
	name, ok := containers.names[node]
	if !ok {
		return "", fmt.Errorf("no node %q in the cluster (cluster containers: %v)", node, containers.names)
	}
	return name, nil
}

// nodeOutput is what a script printed on one node, and how it ended.
type nodeOutput struct {
	node, out, errOut string
	err               error
}

// onNodes runs a bash script on every node given at once, as root or as
// alice, and returns each node's output in the order of nodes.
func onNodes(root bool, script string, nodes ...string) []nodeOutput {
	outs := make([]nodeOutput, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Go(func() {
			out, errOut, err := clusterExec(node, root, nil, "bash", "-c", script)
			outs[i] = nodeOutput{node, out, errOut, err}
		})
	}
	wg.Wait()
	return outs
}

// alice runs a bash script as alice on the controller and fails the test
// when it fails.
func alice(t testing.TB, script string) string {
	t.Helper()
	out, errOut, err := clusterCmd(t, "", false, nil, "bash", "-c", script)
	if err != nil {
		t.Fatalf("script failed: %v\n--- script\n%s\n--- stdout\n%s\n--- stderr\n%s", err, script, out, errOut)
	}
	return out
}

// asRoot runs a bash script as root on every node given, at once.
func asRoot(t testing.TB, script string, nodes ...string) {
	t.Helper()
	for _, o := range onNodes(true, script, nodes...) {
		if o.err != nil {
			t.Fatalf("root script on %s failed: %v\n%s\n%s\n%s", o.node, o.err, script, o.out, o.errOut)
		}
	}
}

// task is one task's recorded environment.
type task struct {
	name string
	env  map[string]string
	list []string
}

func (tk task) attrs(t testing.TB) map[string]string {
	t.Helper()
	value, ok := tk.env[libcarrier.EnvVar]
	if !ok {
		t.Fatalf("%s: %s is not set", tk.name, libcarrier.EnvVar)
	}
	attrs, warnings := libcarrier.Parse(value)
	if len(warnings) > 0 {
		t.Fatalf("%s: the plugin wrote a carrier that does not parse cleanly: %v", tk.name, warnings)
	}
	return attrs
}

// collect reads back every *.env file under /shared/out/<tag>.
func collect(t testing.TB, tag string) []task {
	t.Helper()
	out, errOut, err := clusterCmd(t, "", false, nil, "tar", "-C", "/shared/out/"+tag, "-c", ".")
	if err != nil {
		t.Fatalf("collect %s: %v: %s", tag, err, errOut)
	}
	var tasks []task
	tr := tar.NewReader(strings.NewReader(out))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("collect %s: %v", tag, err)
		}
		if !strings.HasSuffix(hdr.Name, ".env") {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		tk := task{name: strings.TrimPrefix(hdr.Name, "./"), env: map[string]string{}}
		for _, kv := range strings.Split(strings.TrimRight(string(data), "\x00"), "\x00") {
			if kv == "" {
				continue
			}
			tk.list = append(tk.list, kv)
			if k, v, ok := strings.Cut(kv, "="); ok {
				if _, seen := tk.env[k]; !seen {
					tk.env[k] = v
				}
			}
		}
		tasks = append(tasks, tk)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].name < tasks[j].name })
	return tasks
}

// waitFor calls done every interval until it reports true, and reports
// whether it did within timeout. done is called at least once, and once
// more after timeout has passed, so that a slow poll still has its last
// look.
func waitFor(timeout, interval time.Duration, done func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// jobEnd waits until job has ended and returns its final state, such as
// COMPLETED or FAILED, and its exit code ("0:0"); it fails the test when
// the job has not ended within timeout.
func jobEnd(t testing.TB, job string, timeout time.Duration) (state, exitCode string) {
	t.Helper()
	ended := waitFor(timeout, 300*time.Millisecond, func() bool {
		out := alice(t, fmt.Sprintf("scontrol show job %s -o | grep -o 'JobState=[A-Z_]* .*ExitCode=[0-9:]*' | sed 's/ .*ExitCode=/ /'", job))
		st, code, _ := strings.Cut(strings.TrimSpace(out), " ")
		state, exitCode = strings.TrimPrefix(st, "JobState="), code
		switch state {
		case "", "PENDING", "CONFIGURING", "RUNNING", "COMPLETING":
			return false
		}
		return true
	})
	if !ended {
		t.Fatalf("job %s still %q after %v", job, state, timeout)
	}
	return state, exitCode
}

// collectN is collect that fails the test unless tag holds want tasks.
func collectN(t testing.TB, tag string, want int) []task {
	t.Helper()
	tasks := collect(t, tag)
	if len(tasks) != want {
		t.Fatalf("got %d tasks, want %d: %v", len(tasks), want, names(tasks))
	}
	return tasks
}

// outDir creates a fresh output directory for one test and returns the
// shell prefix that enters it.
func outDir(t testing.TB) string {
	t.Helper()
	tag := outTag(t)
	alice(t, fmt.Sprintf("rm -rf /shared/out/%[1]s && mkdir -p /shared/out/%[1]s", tag))
	return tag
}

// outTag is the test's output directory name under /shared/out.
func outTag(t testing.TB) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, t.Name())
}

// jobUUID is SPEC section 4's formula, computed here without the project's
// own code.
func jobUUID(cluster, jobKey string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("nemo.lens.job/"+cluster+"/"+jobKey)).String()
}

// taskEnvOf runs the project's command, `spank-otel task-env`, on a task's
// recorded environment with OTEL_RESOURCE_ATTRIBUTES put back to what the
// task inherited, and returns what it prints.
func taskEnvOf(t testing.TB, tk task, inherited string, inheritedSet bool) string {
	t.Helper()
	var env []string
	for _, kv := range tk.list {
		if !strings.HasPrefix(kv, libcarrier.EnvVar+"=") {
			env = append(env, kv)
		}
	}
	if inheritedSet {
		env = append(env, libcarrier.EnvVar+"="+inherited)
	}
	cmd := exec.Command(filepath.Join(repoRoot(t), "build", "spank-otel"), "task-env")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("spank-otel task-env: %v", err)
	}
	return strings.TrimSuffix(string(out), "\n")
}

// checkIdentity checks the attributes every task of a job must carry: the
// job's identity and the user's own attributes (userCarrier).
func checkIdentity(t testing.TB, tk task, attrs map[string]string) {
	t.Helper()
	checkJobIdentity(t, tk, attrs)
	if attrs["user.team"] != "ml,infra" {
		t.Errorf("%s: user.team = %q, want %q (carrier %q)", tk.name, attrs["user.team"], "ml,infra", tk.env[libcarrier.EnvVar])
	}
}

// checkJobIdentity checks the Slurm identity of a task's job, computed
// here from the task's own Slurm variables.
func checkJobIdentity(t testing.TB, tk task, attrs map[string]string) {
	t.Helper()
	env := tk.env
	jobKey := env["SLURM_JOB_ID"]
	wantID := env["SLURM_JOB_ID"]
	if tid, ok := env["SLURM_ARRAY_TASK_ID"]; ok {
		jobKey = env["SLURM_ARRAY_JOB_ID"]
		wantID = env["SLURM_ARRAY_JOB_ID"] + "_" + tid
	}
	want := map[string]string{
		"slurm.job.id":       wantID,
		"slurm.job.id.raw":   env["SLURM_JOB_ID"],
		"slurm.cluster.name": env["SLURM_CLUSTER_NAME"],
		"slurm.job.user":     "alice",
		"nv.dl.job.uuid":     jobUUID(env["SLURM_CLUSTER_NAME"], jobKey),
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s: %s = %q, want %q (carrier %q)", tk.name, k, attrs[k], v, env[libcarrier.EnvVar])
		}
	}
	checkTaskKeys(t, tk, attrs)
}

// taskKeys are the task-level keys and the variable of the task's own
// environment, Slurm's, that each must equal.
var taskKeys = map[string]string{
	"slurm.step.id":       "SLURM_STEP_ID",
	"slurm.task.id":       "SLURM_PROCID",
	"slurm.task.local_id": "SLURM_LOCALID",
	"slurm.step.ntasks":   "SLURM_STEP_NUM_TASKS",
	"slurm.node.name":     "SLURMD_NODENAME",
}

// inStep reports whether tk ran in a job step, as opposed to a job
// context (the batch script, the interactive step): its SLURM_STEP_ID is a
// regular step's number (26.05 sets -5 in the batch script, older releases
// none; the interactive step names itself).
func inStep(tk task) bool {
	n, err := strconv.ParseUint(tk.env["SLURM_STEP_ID"], 10, 32)
	return err == nil && n <= 0xfffffff0
}

// checkTaskKeys checks the task-level keys of tk: in a step's task each
// equals the task's own Slurm variable; in a job context there are none.
func checkTaskKeys(t testing.TB, tk task, attrs map[string]string) {
	t.Helper()
	step := inStep(tk)
	for key, name := range taskKeys {
		got, ok := attrs[key]
		switch {
		case !step && ok:
			t.Errorf("%s: %s=%q in a job context, which writes no task keys", tk.name, key, got)
		case step && (got != tk.env[name] || got == ""):
			t.Errorf("%s: %s = %q, want the task's %s=%q", tk.name, key, got, name, tk.env[name])
		}
	}
}

// basicTests are the tests the basic profile (no cgroups, no binding) runs:
// the jobs of every kind and the task's state. The site profile runs every
// test. TestMain picks them unless -run names tests, so that this list is
// the one place that says which tests a profile runs.
var basicTests = []string{
	"TestBatchJobTwoNodesWithSteps",
	"TestSrunAlone",
	"TestSallocWithSrun",
	"TestArrayJob",
	"TestJobFromJob",
	"TestNestedStep",
	"TestRankOption",
	"TestTaskProcessUntouched",
	"TestContainerPlugin",
	"TestStepHelperPlacement",
}

// releaseIndependent are the site tests that check nothing a Slurm
// release changes: what the plugin wrote, read by other programs (SDKs,
// Jaeger, the demo), the same bytes on every release. They run on the
// newest supported release (packaging/releases.tsv), the first site suite
// of make test, and not on the other site releases, unless -run names
// tests. Every test that touches Slurm's behaviour (jobs, steps, options,
// cgroups, GPUs, pyxis, OOM, signals, the TaskProlog, job names) runs on
// every site release. TestMain prints what it leaves out, and why.
var releaseIndependent = []struct{ test, why string }{
	{"TestMalformedCarrierIsRepaired", "the library's parse and repair of an inherited carrier (SPEC 5); Slurm only hands the variable over"},
	{"TestRealSDKInTask", "the OpenTelemetry Go SDK reading the carrier the plugin wrote"},
	{"TestSpansInJaeger", "the probes' SDKs sending the carrier's attributes to Jaeger"},
	{"TestDemo", "make demo's script and Jaeger's UI rendered in Chromium"},
}

// newestSupported is the release the release-independent tests run on:
// packaging/releases.tsv's newest supported one (common.sh's slurm_default).
func newestSupported() (string, error) {
	cmd := exec.Command("bash", "-c", ". packaging/lib/common.sh && slurm_default")
	cmd.Dir = repoRoot(nil)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("packaging/lib/common.sh slurm_default: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// pickTests sets -test.run or -test.skip to what the profile and the
// release run, unless the command line named tests, and prints what it
// leaves out.
func pickTests() error {
	run, skip := flag.Lookup("test.run"), flag.Lookup("test.skip")
	if run.Value.String() != "" {
		return nil
	}
	if *profile == "basic" {
		return run.Value.Set("^(" + strings.Join(basicTests, "|") + ")$")
	}
	newest, err := newestSupported()
	if err != nil || newest == *slurmVersion || skip.Value.String() != "" {
		return err
	}
	var names []string
	for _, ri := range releaseIndependent {
		names = append(names, ri.test)
		fmt.Printf("=== release %s: not run here, release-independent (run on %s): %s: %s\n", *slurmVersion, newest, ri.test, ri.why)
	}
	return skip.Value.Set("^(" + strings.Join(names, "|") + ")$")
}

func TestMain(m *testing.M) {
	flag.Parse()
	if err := pickTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if !noHelperLeft() {
		code = 1
	}
	os.Exit(code)
}
