//go:build cluster

package cluster

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	installedLib = "/usr/lib/x86_64-linux-gnu/slurm-wlm/libspankotel.so"
	installedSo  = "/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_otel.so"
	plugstack    = "/etc/slurm/plugstack.conf.d/spank-otel.conf"
	computeNodes = "c1 c2"
)

// setPlugstack rewrites the plugin's plugstack.conf line on the compute
// nodes; slurmstepd reads it at every step, so no restart is needed.
func setPlugstack(t testing.TB, args string) {
	t.Helper()
	line := "optional " + installedSo + " " + args
	asRoot(t, fmt.Sprintf("printf '%%s\\n' %q > %s", line, plugstack), strings.Fields(computeNodes)...)
}

func restorePlugstack(t testing.TB) {
	setPlugstack(t, "lib="+installedLib)
}

// logMark returns the plugin's log lines so far; newLogLines returns those
// added since a mark.
func logMark(t testing.TB) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range pluginLogLines(t) {
		seen[line] = true
	}
	return seen
}

func pluginLogLines(t testing.TB) []string {
	t.Helper()
	// The controller sees only its own log; the nodes' logs are read there,
	// all at once.
	var lines []string
	for _, o := range onNodes(true, "cat /var/log/slurm/*.log 2>/dev/null | grep -a 'spank-otel:' || true",
		append([]string{"slurmctld"}, strings.Fields(computeNodes)...)...) {
		if o.err != nil {
			t.Fatalf("reading the logs of %s: %v %s", o.node, o.err, o.errOut)
		}
		lines = append(lines, strings.Split(o.out, "\n")...)
	}
	var kept []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			kept = append(kept, l)
		}
	}
	return kept
}

func newLogLines(t testing.TB, mark map[string]bool) []string {
	t.Helper()
	var added []string
	for _, line := range pluginLogLines(t) {
		if !mark[line] {
			added = append(added, line)
		}
	}
	return added
}

// matrix collects case → result for the table printed at the end, and
// counts the cases of each group that did not apply (n/a).
type matrix struct {
	rows   [][2]string
	groups []*faultGroup
}

// faultGroup is one group of fault cases, such as the broken libraries or
// the resource limits. Every case of a group must apply, except the known
// edge cases: a case that is n/a checked nothing, and a matrix that passes
// with its cases n/a would pass having checked nothing.
type faultGroup struct {
	name       string
	cases      int
	edges      int      // cases that are known edge cases (faultCase.edge)
	edgesNA    int      // known edge cases that did not apply
	notApplied []string // the other cases that did not apply
}

func (m *matrix) add(name, result string) { m.rows = append(m.rows, [2]string{name, result}) }

// group returns the group named name, new when there is none yet.
func (m *matrix) group(name string) *faultGroup {
	for _, g := range m.groups {
		if g.name == name {
			return g
		}
	}
	g := &faultGroup{name: name}
	m.groups = append(m.groups, g)
	return g
}

// start counts the case fc in its group.
func (m *matrix) start(fc faultCase) {
	g := m.group(fc.group)
	g.cases++
	if fc.edge != "" {
		g.edges++
	}
}

// notApplied records that the case fc did not apply here, for why.
func (m *matrix) notApplied(fc faultCase, why string) {
	g := m.group(fc.group)
	if fc.edge != "" {
		g.edgesNA++
		m.add(fc.name, "n/a (a known edge case: "+fc.edge+"): "+why)
		return
	}
	g.notApplied = append(g.notApplied, fc.name)
	m.add(fc.name, "n/a: "+why)
}

// shortfalls says, for every group in which fewer cases applied than its
// minimum (all of its cases but the known edge cases), how many did and
// which did not.
func (m *matrix) shortfalls() []string {
	var out []string
	for _, g := range m.groups {
		if len(g.notApplied) > 0 {
			out = append(out, fmt.Sprintf("fault group %s: %d cases applied, want at least %d (all but the known edge cases); n/a: %s",
				g.name, g.cases-g.edgesNA-len(g.notApplied), g.cases-g.edges, strings.Join(g.notApplied, ", ")))
		}
	}
	return out
}

// checkApplied logs how many cases of each group applied, and fails t for
// each shortfall.
func (m *matrix) checkApplied(t testing.TB) {
	t.Helper()
	for _, g := range m.groups {
		t.Logf("fault group %s: %d of %d cases applied (%d known edge cases, %d of them n/a)",
			g.name, g.cases-g.edgesNA-len(g.notApplied), g.cases, g.edges, g.edgesNA)
	}
	for _, s := range m.shortfalls() {
		t.Error(s)
	}
}

func (m *matrix) print(t testing.TB) {
	var b strings.Builder
	fmt.Fprintf(&b, "fault matrix, Slurm %s\n", *slurmVersion)
	for _, r := range m.rows {
		// A tab ends the name: matrix.sh splits there, whatever its length.
		fmt.Fprintf(&b, "  %-44s\t%s\n", r[0], r[1])
	}
	t.Log("\n" + b.String())
	dir := filepath.Join(repoRoot(t), "build")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "fault-matrix-"+*slurmVersion+".txt"), []byte(b.String()), 0o644)
}

// faultCase runs one srun in alice's shell with the given preamble and
// checks the invariants of every fault: the job succeeds, the user's own
// attributes are all there, and, when the plugin stepped aside, the log
// says so.
type faultCase struct {
	name     string
	setup    string // shell run before srun, in alice's shell
	carrier  string // the user's OTEL_RESOURCE_ATTRIBUTES; "" = userCarrier
	srunArgs string
	// wantAttrs: the plugin must have written the Slurm attributes.
	// Otherwise it must have left the carrier exactly as it was and logged
	// a line containing wantLog.
	wantAttrs bool
	wantLog   string
	// ulimit, when set (e.g. "-v"), records the task's own limit so the
	// result shows the limit really reached the task.
	ulimit string
	// dropped are the user's keys that the repair of a malformed carrier
	// drops (SPEC §5); every other user attribute must arrive.
	dropped []string
	// group is the group of the matrix the case counts in (faultGroup).
	group string
	// edge, when set, says why the case is a known edge case, which may
	// not apply here without counting against its group.
	edge string
}

// stepLaunched reports whether srun's stderr says that a step was launched:
// a task's end, or a node refusing the launch. Without either, srun failed
// on its own before anything reached a node.
func stepLaunched(stderr string) bool {
	return taskFailure.MatchString(stderr) || strings.Contains(stderr, "launch failed") ||
		strings.Contains(stderr, "Task launch")
}

var taskFailure = regexp.MustCompile(`srun: error: \S+: tasks? [0-9]`)

// runFault returns whether the case ran (false when it does not apply).
func runFault(t *testing.T, m *matrix, fc faultCase) bool {
	t.Helper()
	m.start(fc)
	tag := outDir(t)
	carrier := fc.carrier
	if carrier == "" {
		carrier = userCarrier
	}
	mark := logMark(t)
	task := "env -0"
	if fc.ulimit != "" {
		task = fmt.Sprintf(`bash -c 'export TASK_ULIMIT="$(ulimit %s)"; exec env -0'`, fc.ulimit)
	}
	// The job is named after the case, so that what a failing srun leaves
	// behind can be cancelled (the next test would wait for its CPUs).
	script := fmt.Sprintf("set -e; cd /shared; export OTEL_RESOURCE_ATTRIBUTES=\"$(cat /shared/carrier-%s)\"\n%s\nsrun -N1 -n1 -J %s %s -o /shared/out/%s/%%j.%%s.%%t.env %s",
		tag, fc.setup, tag, fc.srunArgs, tag, task)
	cancel := func() { clusterCmd(t, "", false, nil, "scancel", "-u", "alice", "-n", tag) }
	writeShared(t, "carrier-"+tag, carrier)
	out, errOut, err := clusterCmd(t, "", false, nil, "bash", "-c", script)
	if err != nil {
		// Some limits stop srun itself before it launches anything, at
		// their edge in some runs and not in others (faultCase.edge names
		// them). srun loads the shim whether the plugin is on or off for
		// the step, and the shim's Go side never runs there, so such a
		// failure is never the plugin's.
		cancel()
		if !stepLaunched(errOut) {
			m.notApplied(fc, "srun itself failed: "+shorten(lastLine(errOut), 60))
			t.Logf("srun failed before launching the step, so the case does not apply here: %v\n%s", err, errOut)
			return false
		}
		// The step ran and failed. The plugin is at fault unless the same
		// step fails without it too; no second try: a plugin that breaks
		// tasks now and then must fail this test.
		offScript := strings.Replace(script, "srun -N1 -n1 ", "srun --otel-attrs=off -N1 -n1 ", 1)
		_, offErr, offFailed := clusterCmd(t, "", false, nil, "bash", "-c", offScript)
		cancel()
		if offFailed != nil && stepLaunched(offErr) {
			m.notApplied(fc, "fails without the plugin too: "+shorten(lastLine(offErr), 60))
			t.Logf("the step fails with the plugin off as well, so the case does not apply here: %s", offErr)
			return false
		}
		m.add(fc.name, "FAIL: job failed")
		t.Fatalf("the step failed with the plugin and runs without it: %v\n%s\n%s", err, out, errOut)
	}
	tasks := collect(t, tag)
	if len(tasks) != 1 {
		m.add(fc.name, "FAIL: no task output")
		t.Fatalf("got %d tasks", len(tasks))
	}
	tk := tasks[0]
	got := tk.env["OTEL_RESOURCE_ATTRIBUTES"]
	userAttrs, _ := parseLoose(carrier)
	gotAttrs, _ := parseLoose(got)
	for k, v := range userAttrs {
		if slices.Contains(fc.dropped, k) {
			if _, ok := gotAttrs[k]; ok {
				t.Errorf("user attribute %s should have been dropped: %q", k, got)
			}
			continue
		}
		if gotAttrs[k] != v {
			t.Errorf("user attribute %s lost or changed: %q → %q", k, v, gotAttrs[k])
		}
	}
	logs := newLogLines(t, mark)
	result := ""
	if fc.wantAttrs {
		if gotAttrs["slurm.job.id"] != tk.env["SLURM_JOB_ID"] {
			t.Errorf("want Slurm attributes written; carrier is %.200q; log: %v", got, logs)
		}
		result = "ok: attributes written"
	} else {
		if got != carrier {
			t.Errorf("want the carrier left exactly as it was; got %.200q", got)
		}
		var matching []string
		for _, l := range logs {
			if strings.Contains(l, fc.wantLog) {
				matching = append(matching, l)
			}
		}
		if len(matching) == 0 {
			t.Errorf("no log line containing %q; new plugin lines: %v", fc.wantLog, logs)
		} else {
			result = "ok: left alone; log: " + shorten(logText(matching[0]), 70)
		}
	}
	if fc.ulimit != "" {
		result += " (task's ulimit " + fc.ulimit + ": " + tk.env["TASK_ULIMIT"] + ")"
	}
	if t.Failed() {
		result = "FAIL"
	}
	m.add(fc.name, result)
	return true
}

// parseLoose decodes a carrier for comparison, whatever its shape.
func parseLoose(s string) (map[string]string, int) {
	out := map[string]string{}
	n := 0
	for _, e := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			continue
		}
		n++
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	// Values are compared decoded, the way the Go SDK decodes them.
	for k, v := range out {
		if d, err := url.PathUnescape(v); err == nil {
			out[k] = d
		}
	}
	return out, n
}

func logText(line string) string {
	if i := strings.Index(line, "spank-otel:"); i >= 0 {
		return line[i:]
	}
	return line
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// writeShared writes a file to the shared volume as alice.
func writeShared(t testing.TB, name, content string) {
	t.Helper()
	if _, errOut, err := clusterCmd(t, "", false, strings.NewReader(content), "bash", "-c", "cat > /shared/"+name); err != nil {
		t.Fatalf("write /shared/%s: %v %s", name, err, errOut)
	}
}

func TestFaultMatrix(t *testing.T) {
	m := &matrix{}
	defer m.print(t)
	defer restorePlugstack(t)

	// The Go library itself broken in every way we can think of. The
	// files live in a root-owned directory on the compute nodes.
	asRoot(t, `set -e; mkdir -p /opt/faults; cd /opt/faults
lib=`+installedLib+`
rm -f *
cp $lib unreadable.so; chmod 000 unreadable.so
head -c 100000 $lib > truncated.so
: > empty.so
cp "$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -n1)" other-elf.so
cp $lib alice-owned.so; chown alice alice-owned.so; chmod 0644 alice-owned.so
cp $lib group-writable.so; chmod 0664 group-writable.so
mkdir -p /tmp/spank-otel-faults; chmod 0755 /tmp/spank-otel-faults; cp $lib /tmp/spank-otel-faults/lib.so
# The step's helper, which the shim finds beside the library.
cp "$(dirname $lib)/spank-otel-helper" . ; cp "$(dirname $lib)/spank-otel-helper" /tmp/spank-otel-faults/`, strings.Fields(computeNodes)...)

	// Each line names the path and what failed with it: the rule, for a
	// refusal (alice is uid 1000 in every image,
	// test/slurm-docker/setup-base.sh). dlopen's own reason follows the
	// descriptor's /proc path, whose number is the helper's business.
	libCases := []struct{ name, lib, log string }{
		{"library missing", "/opt/faults/missing.so", "cannot open /opt/faults/missing.so: No such file or directory"},
		{"library unreadable", "/opt/faults/unreadable.so", "cannot load /opt/faults/unreadable.so: "},
		{"library truncated", "/opt/faults/truncated.so", "cannot load /opt/faults/truncated.so: truncated ELF file"},
		{"library zero bytes", "/opt/faults/empty.so", "cannot load /opt/faults/empty.so: "},
		{"library a different ELF", "/opt/faults/other-elf.so", "cannot use /opt/faults/other-elf.so: it does not export spank_otel_"},
		{"library owned and writable by alice", "/opt/faults/alice-owned.so",
			"refusing to load /opt/faults/alice-owned.so: owned by uid 1000 and writable by it (only root may own it)"},
		{"library group-writable", "/opt/faults/group-writable.so",
			"refusing to load /opt/faults/group-writable.so: writable by group or others (mode 0664)"},
		{"library below /tmp", "/tmp/spank-otel-faults/lib.so",
			"refusing to load /tmp/spank-otel-faults/lib.so: directory /tmp is writable by group or others (mode 1777)"},
		{"library path relative", "libspankotel.so", "lib=libspankotel.so is not an absolute path"},
	}
	for _, c := range libCases {
		t.Run(c.name, func(t *testing.T) {
			setPlugstack(t, "lib="+c.lib)
			defer restorePlugstack(t)
			runFault(t, m, faultCase{name: c.name, group: "library", wantLog: c.log})
		})
	}

	for _, kib := range []string{"262144", "524288", "1048576", "2097152", "4194304", "8388608", "unlimited"} {
		name := "RLIMIT_AS " + kib + " KiB"
		t.Run(name, func(t *testing.T) {
			// Slurm applies the user's limits after task_init, and the
			// helper was forked before: the attributes are written, and
			// the task runs under the user's own limit.
			fc := faultCase{name: name, group: "limits", setup: "ulimit -v " + kib, wantAttrs: true, ulimit: "-v"}
			if kib == "262144" || kib == "524288" {
				fc.edge = "srun itself may not start its own threads under this address-space limit"
			}
			if runFault(t, m, fc) {
				tasks := collect(t, outTag(t))
				if got := tasks[0].env["TASK_ULIMIT"]; got != kib {
					t.Errorf("the task runs with ulimit -v %q, want the user's %q", got, kib)
				}
			}
		})
	}
	t.Run("RLIMIT_NPROC small", func(t *testing.T) {
		runFault(t, m, faultCase{name: "RLIMIT_NPROC 64", group: "limits", setup: "ulimit -u 64", wantAttrs: true, ulimit: "-u"})
	})
	t.Run("RLIMIT_STACK small", func(t *testing.T) {
		runFault(t, m, faultCase{name: "RLIMIT_STACK 256 KiB", group: "limits", setup: "ulimit -s 256", wantAttrs: true, ulimit: "-s"})
	})

	helperFaults(t, m)

	var keys10k strings.Builder
	for i := 0; i < 10000; i++ {
		if i > 0 {
			keys10k.WriteByte(',')
		}
		fmt.Fprintf(&keys10k, "k%d=%d", i, i)
	}
	huge := "user.big=" + strings.Repeat("x", 131000)
	carrierCases := []faultCase{
		{name: "carrier of 10,000 keys", carrier: keys10k.String(), wantAttrs: true},
		{name: "carrier with invalid UTF-8 (repaired)", carrier: "user.bad=\xff\xfe,user.ok=1", wantAttrs: true, dropped: []string{"user.bad"}},
		{name: "carrier with % at its end", carrier: "user.pct=50%", wantAttrs: true},
		{name: "carrier malformed (entry without =, repaired)", carrier: "user.ok=1,garbage", wantAttrs: true},
		{name: "carrier that would pass the 128 KiB limit", carrier: huge, wantLog: "limit"},
	}
	for _, fc := range carrierCases {
		fc.group = "carrier"
		t.Run(fc.name, func(t *testing.T) { runFault(t, m, fc) })
	}

	t.Run("environment near the execve limit", func(t *testing.T) {
		nearLimit(t, m)
	})
	t.Run("100 back-to-back array elements", func(t *testing.T) {
		tag := outDir(t)
		tasks := runJob(t, tag, 100, fmt.Sprintf(`sbatch --wait --array=1-100 -N1 -n1 -o /dev/null --wrap 'env -0 > /shared/out/%s/$SLURM_JOB_ID.batch.env'`, tag))
		uuids := map[string]bool{}
		for _, tk := range tasks {
			attrs := tk.attrs(t)
			checkIdentity(t, tk, attrs)
			uuids[attrs["nv.dl.job.uuid"]] = true
		}
		if len(uuids) != 1 {
			t.Errorf("got %d job UUIDs, want 1", len(uuids))
		}
		m.add("100 back-to-back array elements", result(t, fmt.Sprintf("ok: %d elements, one job UUID", len(tasks))))
	})
	t.Run("--otel-attrs given neither on nor off", func(t *testing.T) {
		_, errOut, err := clusterCmd(t, "", false, nil, "srun", "--otel-attrs=yes", "true")
		if err == nil || !strings.Contains(errOut, "--otel-attrs") {
			t.Errorf("srun --otel-attrs=yes: err %v, stderr %q; want a failure naming the option", err, errOut)
		}
		m.add("--otel-attrs=yes", result(t, "ok: srun refuses: "+shorten(lastLine(errOut), 60)))
	})
	m.checkApplied(t)
}

// nearLimit finds the largest environment with which a task still starts
// with the plugin off, then runs the same job with the plugin on: the task
// must start too, with its carrier untouched, because the plugin's value
// no longer fits, and the log must say so.
func nearLimit(t *testing.T, m *matrix) {
	tag := outDir(t)
	run := func(fill int, opt string) error {
		script := fmt.Sprintf(`cd /shared; export OTEL_RESOURCE_ATTRIBUTES='%s'
fill=%d; i=0
while [ $fill -gt 0 ]; do
  n=$(( fill > 100000 ? 100000 : fill ))
  export FILL_$i=$(head -c $n /dev/zero | tr '\0' x)
  fill=$(( fill - n )); i=$(( i + 1 ))
done
exec srun -N1 -n1 %s -o /shared/out/%s/near.env env -0`, userCarrier, fill, opt, tag)
		_, _, err := clusterCmd(t, "", false, nil, "bash", "-c", script)
		return err
	}
	// Binary search the largest fill that still runs with the plugin off.
	lo, hi := 0, 4<<20
	if run(lo, "--otel-attrs=off") != nil {
		t.Fatal("a job with no filler fails with the plugin off")
	}
	for hi-lo > 64 {
		mid := (lo + hi) / 2
		if run(mid, "--otel-attrs=off") == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	mark := logMark(t)
	if err := run(lo, ""); err != nil {
		m.add("environment at the execve limit", "FAIL: the plugin made a runnable job fail")
		t.Fatalf("with %d bytes of filler the job runs with the plugin off but fails with it on: %v", lo, err)
	}
	tasks := collect(t, tag)
	if len(tasks) != 1 || tasks[0].env["OTEL_RESOURCE_ATTRIBUTES"] != userCarrier {
		t.Errorf("want the task's carrier untouched at the limit")
	}
	var budget []string
	for _, l := range newLogLines(t, mark) {
		if strings.Contains(l, "execve") || strings.Contains(l, "budget") {
			budget = append(budget, l)
		}
	}
	if len(budget) == 0 {
		t.Errorf("no log line about the execve budget")
	}
	m.add("environment at the execve limit", result(t, fmt.Sprintf("ok: %d bytes of filler; runs, left alone; log: %s",
		lo, shorten(logText(first(budget)), 50))))
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func status(err error) string {
	if err == nil {
		return "runs"
	}
	return "fails"
}

func result(t testing.TB, ok string) string {
	if t.Failed() {
		return "FAIL"
	}
	return ok
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestStepLaunched: how the fault matrix tells a step that failed (the
// plugin may be at fault) from a srun that never launched one (it is not).
// The messages are srun's own.
func TestStepLaunched(t *testing.T) {
	tests := []struct {
		stderr string
		want   bool
	}{
		{"srun: error: c1: task 0: Exited with exit code 1", true},
		{"srun: error: c1: tasks 0-1: Killed", true},
		{"srun: error: c2: task 3: Segmentation fault (core dumped)", true},
		{"srun: error: Task launch for StepId=12.0 failed on node c1: Plugin stack initialization failed", true},
		{"srun: error: Application launch failed: Plugin stack initialization failed", true},
		{"srun: fatal: _msg_thr_create: pthread_create error Resource temporarily unavailable", false},
		{"srun: error: Unable to allocate resources: Invalid account or account/partition combination specified", false},
		{"bash: line 1: ulimit: virtual memory: cannot modify limit: Operation not permitted", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := stepLaunched(tt.stderr); got != tt.want {
			t.Errorf("stepLaunched(%q) = %v, want %v", tt.stderr, got, tt.want)
		}
	}
}

// TestMatrixShortfalls: a case that did not apply counts against its
// group, unless it is a known edge case.
func TestMatrixShortfalls(t *testing.T) {
	m := &matrix{}
	cases := []faultCase{
		{name: "a", group: "g"},
		{name: "b", group: "g"},
		{name: "edge", group: "g", edge: "known"},
		{name: "c", group: "h"},
	}
	for _, fc := range cases {
		m.start(fc)
	}
	if got := m.shortfalls(); got != nil {
		t.Errorf("every case applied: shortfalls %q", got)
	}
	m.notApplied(cases[2], "srun itself failed")
	if got := m.shortfalls(); got != nil {
		t.Errorf("only the known edge case did not apply: shortfalls %q", got)
	}
	m.notApplied(cases[1], "fails without the plugin too")
	want := []string{"fault group g: 1 cases applied, want at least 2 (all but the known edge cases); n/a: b"}
	if got := m.shortfalls(); !slices.Equal(got, want) {
		t.Errorf("shortfalls %q, want %q", got, want)
	}
	if got := m.rows[0][1]; !strings.HasPrefix(got, "n/a (a known edge case: known): ") {
		t.Errorf("the edge case's row says %q", got)
	}
	if got := m.rows[1][1]; got != "n/a: fails without the plugin too" {
		t.Errorf("the case's row says %q", got)
	}
}
