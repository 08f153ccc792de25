//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Test builds of the shim whose slurm_spank_init fails in slurmstepd: one
// declares the plugin's failure mode, one leaves Slurm's default (see the
// Makefile's testlibs).
const (
	initFailsSo       = testLibDir + "/spank_otel-initfails.so"
	initFailsNoModeSo = testLibDir + "/spank_otel-initfails-nomode.so"
)

// nodeState is sinfo's state of one node and the reason it gives.
func nodeState(t testing.TB, node string) (state, reason string) {
	t.Helper()
	out := alice(t, "sinfo -h -n "+node+" -o '%T|%E'")
	state, reason, _ = strings.Cut(strings.TrimSpace(out), "|")
	return state, reason
}

// drained reports whether a node is draining or drained.
func drained(state string) bool { return strings.HasPrefix(state, "drain") }

// batchJobState submits a batch job to node and returns its final state.
func batchJobState(t testing.TB, node string) string {
	t.Helper()
	job := strings.TrimSpace(alice(t, "sbatch --parsable --no-requeue -N1 -w "+node+" -o /dev/null --wrap true"))
	state, _ := jobEnd(t, job, time.Minute)
	return state
}

// From Slurm 25.05 on, a failed slurm_spank_init of a plugin listed as
// required drains the node unless the plugin declares another failure mode.
// spank-otel's init returns 0 on every path, misconfigured or not, and it
// declares ESPANK_JOB_FAILURE should that ever change: it is never the
// reason a node drains. The control case shows what Slurm does without the
// declaration, so the test would notice a build that lost it.
func TestInitFailureNeverDrains(t *testing.T) {
	if *slurmVersion < "25.05" {
		t.Skipf("slurm_spank_init_failure_mode exists from Slurm 25.05 on; this is %s", *slurmVersion)
	}
	defer restorePlugstack(t)
	const node = "c1"
	required := func(so, args string) {
		t.Helper()
		line := "required " + so + " " + args
		asRoot(t, fmt.Sprintf("printf '%%s\\n' %q > %s", line, plugstack), strings.Fields(computeNodes)...)
	}
	resume := func() {
		asRoot(t, "scontrol update nodename="+node+" state=resume 2>/dev/null || true", "")
	}

	t.Run("misconfigured and required", func(t *testing.T) {
		// Every argument wrong, the library missing: the jobs run, without
		// attributes, and no node drains.
		required(installedSo, "lib=/nonexistent/libspankotel.so timeout=soon unknown=1 default=maybe")
		alice(t, "srun -N2 -n2 true")
		if got := batchJobState(t, node); got != "COMPLETED" {
			t.Errorf("batch job on %s: %s, want COMPLETED", node, got)
		}
		for _, n := range strings.Fields(computeNodes) {
			if state, reason := nodeState(t, n); drained(state) {
				t.Errorf("%s is %s (%s)", n, state, reason)
			}
		}
	})

	t.Run("init fails, plugin's failure mode", func(t *testing.T) {
		required(initFailsSo, "lib="+installedLib)
		defer resume()
		if got := batchJobState(t, node); got != "FAILED" {
			t.Errorf("batch job on %s: %s, want FAILED (ESPANK_JOB_FAILURE)", node, got)
		}
		if state, reason := nodeState(t, node); drained(state) {
			t.Errorf("%s is %s (%s): the plugin's failure mode was not honoured", node, state, reason)
		}
	})

	t.Run("init fails, Slurm's default (control)", func(t *testing.T) {
		required(initFailsNoModeSo, "lib="+installedLib)
		defer resume()
		got := batchJobState(t, node)
		state, reason := nodeState(t, node)
		if !drained(state) {
			t.Errorf("%s is %s after a failed init without the declaration (job %s): Slurm's default "+
				"no longer drains, so the case above proves nothing", node, state, got)
		}
		t.Logf("without the declaration: job %s, %s %s (%s)", got, node, state, reason)
	})
}
