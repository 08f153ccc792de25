//go:build cluster

package cluster

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// overlapScript is the batch script of TestOverlappingHelpers: it brings
// the job's memory cgroup to ROOM MiB of room (a process holding the rest;
// clean page cache counted free, as the plugin counts it), runs a step of
// 8 tasks on c1 that all ask the step's one helper at once, and records
// every memory cgroup of the job: from task 0 once every task of the step
// runs (every task has had its answer then, and the step's cgroups still
// exist), and from the batch script after the step. Each task's first act,
// after spank-otel is done with it, ends the holder: 8 bash tasks in 9 MiB
// of room got the holder OOM-killed, which is the tasks' doing, not the
// plugin's. %[1]s is the output directory, %[2]d the room in MiB, %[3]s
// srun's extra options.
const overlapScript = `#!/bin/bash
out=%[1]s
job=$(echo /sys/fs/cgroup/memory/slurm*/uid_*/job_$SLURM_JOB_ID)
report() {
	find "$job" -name memory.oom_control | sort | while read -r f; do
		d=${f%%/memory.oom_control}
		echo "${d#$job} $(tr '\n' ' ' < "$f")failcnt $(cat "$d/memory.failcnt")"
	done
}
used() {
	awk -v usage="$(cat "$job/memory.usage_in_bytes")" '
		$1 == "total_active_file" || $1 == "total_inactive_file" { cache += $2 }
		$1 == "total_dirty" || $1 == "total_writeback" { busy += $2 }
		END { c = cache - busy; if (c < 0) c = 0; print int((usage - c) / 1048576) }' "$job/memory.stat"
}
limit=$(( $(cat "$job/memory.limit_in_bytes") / 1048576 ))
hold=$(( limit - $(used) - %[2]d ))
perl -e '$x = "x" x ($ARGV[0] * 1048576); open(F, ">", $ARGV[1]) and close(F); sleep 600' "$hold" "$out/held" &
holder=$!
while [ ! -e "$out/held" ]; do sleep 0.1; done
echo "limit ${limit} MiB, held ${hold} MiB, in use $(used) MiB: room $(( limit - $(used) )) MiB" > "$out/room"
{ declare -f report; echo report; } > "$out/report.sh"
export out job holder
export TASK='env -0 > "$out/task.$SLURM_PROCID.env"; touch "$out/started.$SLURM_PROCID"
	if [ "$SLURM_PROCID" = 0 ]; then
		for i in $(seq 300); do [ "$(ls "$out" | grep -c "^started\.")" -ge 8 ] && break; sleep 0.1; done
		bash "$out/report.sh" > "$out/cgroups.step"
	fi'
srun %[3]s -w c1 -N1 -n8 -O sh -c 'kill "$holder" 2>/dev/null; exec bash -c "$TASK"'
echo $? > "$out/srun.rc"
report > "$out/cgroups.job"
kill "$holder" 2>/dev/null || true
`

// oomKillStep is srun's option that makes an OOM kill end the whole step
// (Slurm 25.11 and later, which the site profile runs).
func oomKillStep(t *testing.T) string {
	t.Helper()
	help := alice(t, "srun --help 2>&1 || true")
	if !strings.Contains(help, "--oom-kill-step") {
		t.Fatalf("srun of Slurm %s has no --oom-kill-step", *slurmVersion)
	}
	return "--oom-kill-step"
}

var (
	oomKillCounter = regexp.MustCompile(`\boom_kill ([0-9]+)`)
	// The line of every task whose step's helper found no room for
	// itself (spank/headroom.c: one helper, SO_HELPER_MEMORY).
	noRoomLine = regexp.MustCompile(`not loading the library: memory cgroup .* and the helper needs about 12288 KiB`)
)

// TestOverlappingHelpers (issue 43, sections 2 and 3): the 8 tasks of a
// step on one node ask the step's one helper at once, in a job that holds
// all of its memory but ROOM MiB; an OOM kill in the job's cgroups would
// end the step OUT_OF_MEMORY (and, with --oom-kill-step, all of it). The
// step must succeed, with and without --oom-kill-step, no memory cgroup of
// the job may count an OOM kill, and every task without attributes must be
// explained by a log line. On cgroup v1, the site profile's, the helper is
// in slurmd's memory cgroup, not the job's (TestStepHelperPlacement): it
// cannot run the job out of memory, and no room is too little for it. The
// refusal under the job's limit is cgroup v2's (test/vm's overlap check):
// here, with 9 MiB left, Slurm's own task children (forks of slurmstepd,
// charged to the job on v1) got the job's holder OOM-killed before any
// task ran a command, the plugin's helper being elsewhere.
func TestOverlappingHelpers(t *testing.T) {
	needSite(t)
	opts := []string{"", oomKillStep(t)}
	cases := []struct {
		name string
		room int
	}{
		{"room for the step's helper", 40},
	}
	for _, c := range cases {
		for _, opt := range opts {
			name := c.name
			if opt != "" {
				name += ", " + opt
			}
			t.Run(name, func(t *testing.T) {
				tag := outDir(t)
				mark := logMark(t)
				out := "/shared/out/" + tag
				script := fmt.Sprintf(overlapScript, out, c.room, opt)
				alice(t, submit(fmt.Sprintf("sbatch --wait -w c1 -N1 -n8 -O --mem=320M -o %[1]s/slurm.out <<'EOF'\n%[2]sEOF", out, script)))
				files := alice(t, fmt.Sprintf(`cd %s; for f in room srun.rc cgroups.step cgroups.job slurm.out; do echo "== $f"; cat $f; done`, out))
				t.Logf("%s", files)
				section := func(name string) string {
					_, rest, _ := strings.Cut(files, "== "+name+"\n")
					s, _, _ := strings.Cut(rest, "\n== ")
					return s
				}
				if rc := strings.TrimSpace(section("srun.rc")); rc != "0" {
					t.Errorf("the step exited %q, want 0", rc)
				}
				// Slurm's words: "Detected 1 oom_kill event in StepId=...",
				// a state of OUT_OF_MEMORY; not the plugin's own lines.
				var slurmLines []string
				for _, line := range strings.Split(section("slurm.out"), "\n") {
					if !strings.Contains(line, "spank-otel:") {
						slurmLines = append(slurmLines, line)
					}
				}
				if s := strings.ToLower(strings.Join(slurmLines, "\n")); strings.Contains(s, "oom_kill") || strings.Contains(s, "oom-kill") ||
					strings.Contains(s, "out of memory") || strings.Contains(s, "out_of_memory") {
					t.Errorf("the job's output reports an OOM kill:\n%s", section("slurm.out"))
				}
				var counted int
				for _, f := range []string{"cgroups.step", "cgroups.job"} {
					for _, l := range strings.Split(strings.TrimSpace(section(f)), "\n") {
						m := oomKillCounter.FindStringSubmatch(l)
						if m == nil {
							continue
						}
						counted++
						if m[1] != "0" {
							t.Errorf("an OOM kill in the job's memory cgroup %s", l)
						}
					}
				}
				if !strings.Contains(section("cgroups.step"), "/step_0/") || counted == 0 {
					t.Errorf("the step's memory cgroups were not read: %q", section("cgroups.step"))
				}
				tasks := collectN(t, tag, 8)
				jobID := tasks[0].env["SLURM_JOB_ID"]
				written := 0
				for _, tk := range tasks {
					if n, _ := strconv.Atoi(tk.env["SLURM_STEP_NUM_TASKS"]); n != 8 {
						t.Errorf("%s: SLURM_STEP_NUM_TASKS=%q, want 8", tk.name, tk.env["SLURM_STEP_NUM_TASKS"])
					}
					if attrs, _ := parseLoose(tk.env["OTEL_RESOURCE_ATTRIBUTES"]); attrs["slurm.job.id"] == jobID {
						checkIdentity(t, tk, tk.attrs(t))
						written++
					}
				}
				var refused int
				var others []string
				for _, l := range newLogLines(t, mark) {
					switch {
					case !strings.Contains(l, "["+jobID+".0]"):
					case noRoomLine.MatchString(l):
						refused++
					case strings.Contains(l, "error: spank-otel:"):
						others = append(others, l)
					}
				}
				t.Logf("%s; %d of 8 tasks got attributes, %d were told the helper had no room", strings.TrimSpace(section("room")), written, refused)
				if written != 8 || refused != 0 || len(others) != 0 {
					t.Errorf("%d tasks got attributes, %d were told the helper had no room, other error lines %q: want 8, 0 and none",
						written, refused, others)
				}
			})
		}
	}
}
