//go:build cluster

package cluster

import (
	"fmt"
	"testing"
)

// TestSlurmJobSLUID: slurm.sluid falls back to Slurm's own SLURM_JOB_SLUID
// (SPEC §3). Slurm exports it to tasks from 26.05 on; 25.11 has SLUIDs but
// gives the variable only to prologs and epilogs (its CHANGELOG), and older
// releases have none. Where a task has no SLURM_JOB_SLUID, slurm.sluid must
// be absent, not invented.
func TestSlurmJobSLUID(t *testing.T) {
	exported := *slurmVersion >= "26.05"
	tag := outDir(t)
	tasks := runJob(t, tag, 2, fmt.Sprintf(`sbatch --wait -N1 -n1 -o /dev/null <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun -N1 -n1 -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0
EOF`, tag))
	for _, tk := range tasks {
		sluid, ok := tk.env["SLURM_JOB_SLUID"]
		attrs := tk.attrs(t)
		switch {
		case ok != exported:
			t.Errorf("%s: SLURM_JOB_SLUID set %v on Slurm %s, want %v: the release's behaviour changed; "+
				"update this test and the README", tk.name, ok, *slurmVersion, exported)
		case ok && (sluid == "" || attrs["slurm.sluid"] != sluid):
			t.Errorf("%s: slurm.sluid = %q, SLURM_JOB_SLUID = %q", tk.name, attrs["slurm.sluid"], sluid)
		case !ok && attrs["slurm.sluid"] != "":
			t.Errorf("%s: slurm.sluid = %q without SLURM_JOB_SLUID", tk.name, attrs["slurm.sluid"])
		}
		t.Logf("%s: SLURM_JOB_SLUID=%q slurm.sluid=%q", tk.name, sluid, attrs["slurm.sluid"])
	}
}
