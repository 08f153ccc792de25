package taskenv_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/internal/taskenv"
)

// TestBatchScriptOf2605 covers Slurm 26.05, which sets SLURM_STEP_ID=-5 in
// the batch script: it must be treated as the batch step, or the head node
// is lost and the batch node's topology leaks into every later step.
func TestBatchScriptOf2605(t *testing.T) {
	res := taskenv.Compute(batch("SLURM_STEP_ID=-5", "SLURM_STEPID=-5"), taskenv.Options{})
	assert.Assert(t, res.Changed)
	got := decode(t, res.Value)
	assert.Equal(t, got["slurm.head_node.name"], "c2")
	_, hasTopology := got["slurm.topology.addr"]
	assert.Assert(t, !hasTopology, "topology written in the batch script: %q", res.Value)
}
