//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMalformedCarrierIsRepaired: SPEC §5. A malformed inherited carrier
// costs only its bad entries, each logged once at info level; the user's
// other attributes and the identity reach every task, batch script and
// steps alike.
func TestMalformedCarrierIsRepaired(t *testing.T) {
	cases := []struct {
		name    string
		carrier string
		kept    map[string]string // user attributes every task must carry
		dropped []string          // text of the log line of each dropped entry
	}{
		{"stray entries", ",,noequals,=novalue, ,k=v,,", map[string]string{"k": "v"},
			[]string{`entry "noequals" has no '=': dropped`, `entry "=novalue" has an empty key: dropped`}},
		{"keys no SDK reads the same way", "key%2Cpart=v,good=1,semi;key=x", map[string]string{"good": "1"},
			[]string{`key "key%2Cpart": key contains '%': dropped`, `key "semi;key": key contains ';': dropped`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tag := outDir(t)
			writeShared(t, "carrier-"+tag, tc.carrier)
			mark := logMark(t)
			alice(t, fmt.Sprintf(`set -e; cd /shared; export OTEL_RESOURCE_ATTRIBUTES="$(cat /shared/carrier-%[1]s)"
sbatch --wait -N2 -n2 -o /dev/null <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun -N2 -n2 -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0
EOF`, tag))
			tasks := collectN(t, tag, 3)
			batch, steps := byStep(tasks)
			if len(batch) != 1 {
				t.Fatalf("got %d batch and %d step tasks, want 1 and 2: %v", len(batch), len(steps), names(tasks))
			}
			for _, tk := range tasks {
				attrs := tk.attrs(t) // also: the carrier now parses cleanly
				if attrs["slurm.job.id"] != tk.env["SLURM_JOB_ID"] || attrs["nv.dl.job.uuid"] == "" {
					t.Errorf("%s: identity missing: %q", tk.name, tk.env["OTEL_RESOURCE_ATTRIBUTES"])
				}
				for k, v := range tc.kept {
					if attrs[k] != v {
						t.Errorf("%s: user attribute %s = %q, want %q", tk.name, k, attrs[k], v)
					}
				}
			}
			// The batch script repaired the carrier; its steps inherit
			// a clean one, so each entry is logged once, by the batch
			// step's task.
			logs := newLogLines(t, mark)
			for _, want := range tc.dropped {
				var n int
				for _, l := range logs {
					if strings.Contains(l, want) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("log lines %q: %d, want 1; new plugin lines: %q", want, n, logs)
				}
			}
		})
	}
}

// TestJobNameNotUTF8: a job name that is not valid UTF-8 costs only
// slurm.job.name.
func TestJobNameNotUTF8(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 1, fmt.Sprintf(`srun -N1 -n1 -J "$(printf 'run-\377')" -o /shared/out/%s/%%j.%%s.%%t.env env -0`, tag))
	tk := tasks[0]
	name := tk.env["SLURM_JOB_NAME"]
	attrs := tk.attrs(t)
	checkIdentity(t, tk, attrs)
	if utf8.ValidString(name) {
		t.Logf("this Slurm passed the job name on as %q", name)
		if attrs["slurm.job.name"] != name {
			t.Errorf("slurm.job.name = %q, want %q", attrs["slurm.job.name"], name)
		}
		return
	}
	if v, ok := attrs["slurm.job.name"]; ok {
		t.Errorf("slurm.job.name = %q for SLURM_JOB_NAME=%q; want it left out", v, name)
	}
	t.Logf("SLURM_JOB_NAME=%q: identity written without slurm.job.name", name)
}
