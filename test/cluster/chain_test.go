//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"testing"
)

// TestJobFromJob: a job started from inside another job's batch script
// inherits that job's OTEL_RESOURCE_ATTRIBUTES (sbatch, salloc and srun
// export the environment), and must still carry its own identity: the
// next job of a chain, an array, an salloc allocation, and a step that
// srun --jobid starts in another running job. The user's own keys go
// along (checkIdentity: user.team).
func TestJobFromJob(t *testing.T) {
	tag := outDir(t)
	out := "/shared/out/" + tag
	tasks := runJob(t, tag, 7, fmt.Sprintf(`sbatch --wait -N1 -n1 -o %[1]s/outer.out <<'EOF'
#!/bin/bash
set -e
env -0 > %[1]s/$SLURM_JOB_ID.outer.batch.env
# The next job of a chain, its batch script and a step.
sbatch --wait -N1 -n1 -o /dev/null --wrap 'env -0 > %[1]s/$SLURM_JOB_ID.chained.batch.env; srun -o %[1]s/%%j.chained.%%s.%%t.env env -0'
# An array.
sbatch --wait --array=0-1 -N1 -n1 -o /dev/null --wrap 'env -0 > %[1]s/$SLURM_JOB_ID.array.batch.env'
# An allocation and its step.
salloc -N1 -n1 srun -o %[1]s/%%j.salloc.%%s.%%t.env env -0
# A step in another running job.
other=$(sbatch --parsable -N1 -n1 -o /dev/null --wrap 'sleep 60')
for i in $(seq 300); do [ "$(squeue -h -j "$other" -o %%T)" = RUNNING ] && break; sleep 0.1; done
srun --jobid="$other" --overlap -N1 -n1 -o %[1]s/%%j.jobid.%%s.%%t.env env -0
scancel "$other"
EOF`, out))
	outer := ""
	for _, tk := range tasks {
		if strings.Contains(tk.name, ".outer.") {
			outer = tk.env["SLURM_JOB_ID"]
		}
	}
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		// Each task's identity is its own job's, from its own variables.
		checkIdentity(t, tk, attrs)
		if !strings.Contains(tk.name, ".outer.") && tk.env["SLURM_JOB_ID"] == outer {
			t.Errorf("%s: runs in the outer job %s: the test did not start another job", tk.name, outer)
		}
	}
}
