//go:build cluster

package cluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperScan lists a node's helper processes (the helper names itself
// spank-otel before it waits for its task; nothing else of that name runs
// on a node between jobs), one line each: pid, parent, uids, cgroups and
// command line.
const helperScan = `for p in $(pgrep -x spank-otel); do
	printf '%s %s cgroup %s cmdline %s\n' "$p" "$(grep -E '^(PPid|Uid):' /proc/$p/status 2>/dev/null | tr '\t\n' '  ')" \
		"$(tr '\n' ';' </proc/$p/cgroup 2>/dev/null)" "$(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null)"
done`

// helpersOn is the helperScan of every compute node, by node, all read at
// once; a node that cannot be read shows the error.
func helpersOn() map[string][]string {
	found := map[string][]string{}
	for _, o := range onNodes(true, helperScan, strings.Fields(computeNodes)...) {
		if o.err != nil {
			found[o.node] = append(found[o.node], fmt.Sprintf("cannot list processes: %v %s", o.err, o.errOut))
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(o.out), "\n") {
			if l != "" {
				found[o.node] = append(found[o.node], l)
			}
		}
	}
	return found
}

// waitNoHelper polls every compute node until none runs a helper or the
// time is up; returns what was left then.
func waitNoHelper(within time.Duration) map[string][]string {
	deadline := time.Now().Add(within)
	for {
		left := helpersOn()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// noHelperLeft is how every cluster suite ends (TestMain): no compute node
// may run a helper once the tests are over. It prints what it finds and
// returns false when any node still has one (after 10 s for the last to
// end). It only looks: the cluster is taken down afterwards.
func noHelperLeft() bool {
	left := waitNoHelper(10 * time.Second)
	if len(left) == 0 {
		fmt.Printf("cluster: no helper process left on %s\n", computeNodes)
		return true
	}
	for node, procs := range left {
		for _, p := range procs {
			fmt.Fprintf(os.Stderr, "cluster: FAIL: %s still runs a helper after the tests: %s\n", node, p)
		}
	}
	return false
}

// TestCancelledStepLeavesNoHelper: a step cancelled while its tasks start
// leaves no helper on any node. Each task is held (20 s) in a plugin's
// task_init before spank-otel's (test/spankprobe role=hold), after the
// step's helper was started (in the step parent, in slurmstepd's cgroups,
// where the step's kill does not reach it) and before it is asked: it
// must end with its step. Then the same with the helper stuck in a
// hanging library (test/faultlib). The step is cancelled at once, and
// once each node of the step runs its helper.
func TestCancelledStepLeavesNoHelper(t *testing.T) {
	if left := waitNoHelper(10 * time.Second); len(left) > 0 {
		t.Fatalf("helpers running before the test: %v", left)
	}
	cases := []struct {
		name, stack, plugin, env string
		wait                     bool // until every task has a helper
	}{
		{"held before spank-otel's task_init, cancelled at once", "role=hold ms=20000", "lib=" + installedLib, "", false},
		{"held before spank-otel's task_init, cancelled with every helper started", "role=hold ms=20000", "lib=" + installedLib, "", true},
		{"helpers stuck in the library, cancelled with every helper started", "", "lib=" + faultLib + " timeout=60000",
			"export SPANK_OTEL_TEST_FAULT=hang", true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.stack != "" {
				withStack(t, map[string]string{"00-hold.conf": "required " + probeSo + " " + c.stack})
			}
			setPlugstack(t, c.plugin)
			defer restorePlugstack(t)
			name := fmt.Sprintf("cancel-%d-%d", os.Getpid(), i)
			// srun in the background, detached from this shell; the script
			// prints the step's id once it runs.
			step := strings.TrimSpace(alice(t, fmt.Sprintf(`%s
setsid -f srun -N2 -n4 -J %s sleep 1 >/dev/null 2>&1 </dev/null
for i in $(seq 600); do
	s=$(squeue -h -s -n %s -o %%i 2>/dev/null | grep -E '\.[0-9]+$' | head -n1)
	[ -n "$s" ] && { echo "$s"; exit 0; }
	sleep 0.1
done
echo "the step did not start" >&2; exit 1`, c.env, name, name)))
			defer clusterCmd(t, "", false, nil, "scancel", "-u", "alice", "-n", name)
			if c.wait {
				var n int
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
					n = 0
					for _, procs := range helpersOn() {
						n += len(procs)
					}
					if n >= 2 {
						break
					}
				}
				if n < 2 {
					t.Fatalf("step %s: %d helpers on the nodes, want the step's on each of its 2", step, n)
				}
				// The step's helper is the job user's, all of its ids.
				uid := aliceUID(t)
				for node, procs := range helpersOn() {
					for _, p := range procs {
						if !strings.Contains(p, "Uid: "+uid+" "+uid+" "+uid+" "+uid) {
							t.Errorf("%s: a step's helper not of alice's uid: %s", node, p)
						}
					}
				}
			}
			// On the basic profile (proctrack/linuxproc) the kill reaches a
			// task only once it has exec'd: a held one ends with its hold.
			alice(t, fmt.Sprintf(`scancel %s
end=$((SECONDS + 120))
while [ $SECONDS -lt $end ]; do squeue -h -n %s 2>/dev/null | grep -q . || exit 0; sleep 0.2; done
echo "job %s still listed 120 s after its step was cancelled" >&2; exit 1`, step, name, name))
			if left := waitNoHelper(10 * time.Second); len(left) > 0 {
				for node, procs := range left {
					for _, p := range procs {
						t.Errorf("%s: helper left 10 s after step %s was cancelled: %s", node, step, p)
					}
				}
			}
		})
	}
}

// aliceUID is alice's uid on the controller, as a decimal string.
func aliceUID(t testing.TB) string {
	uid := strings.TrimSpace(alice(t, "id -u"))
	if _, err := strconv.Atoi(uid); err != nil {
		t.Fatalf("id -u: %q", uid)
	}
	return uid
}
