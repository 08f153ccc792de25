//go:build cluster

package cluster

import (
	"fmt"
	"testing"
)

// TestSlurmJobSLUID: slurm.sluid falls back to Slurm's own SLURM_JOB_SLUID,
// which Slurm exports to every task from 25.11 on (SPEC §3).
func TestSlurmJobSLUID(t *testing.T) {
	tag := outDir(t)
	alice(t, submit(fmt.Sprintf(`sbatch --wait -N1 -n1 -o /dev/null <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun -N1 -n1 -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0
EOF`, tag)))
	tasks := collect(t, tag)
	if len(tasks) != 2 {
		t.Fatalf("got %d tasks, want 2: %v", len(tasks), names(tasks))
	}
	for _, tk := range tasks {
		sluid, ok := tk.env["SLURM_JOB_SLUID"]
		if !ok {
			t.Skipf("Slurm %s exports no SLURM_JOB_SLUID to tasks (it does from 25.11 on); nothing to check", *slurmVersion)
		}
		attrs := tk.attrs(t)
		if sluid == "" || attrs["slurm.sluid"] != sluid {
			t.Errorf("%s: slurm.sluid = %q, SLURM_JOB_SLUID = %q", tk.name, attrs["slurm.sluid"], sluid)
		}
		t.Logf("%s: slurm.sluid=%s", tk.name, attrs["slurm.sluid"])
	}
}
