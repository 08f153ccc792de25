package taskenv_test

import (
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// envCost is what execve counts for env: every string, its NUL and its
// 8-byte pointer. Written here independently of the package.
func envCost(env []string) int {
	n := 0
	for _, kv := range env {
		n += len(kv) + 1 + 8
	}
	return n
}

// TestBudgetEdges checks the total-size rule at exactly the budget and one
// byte under it, with the variable inherited and unset: the old entry is
// replaced, not added to.
func TestBudgetEdges(t *testing.T) {
	filler := "FILL=" + strings.Repeat("x", 3000)
	for name, env := range map[string][]string{
		"variable unset": step(filler),
		"variable set":   step(filler, "OTEL_RESOURCE_ATTRIBUTES=user.team=ml%2Cinfra,"+strings.Repeat("u", 40)+"=1"),
	} {
		t.Run(name, func(t *testing.T) {
			free := taskenv.Compute(env, taskenv.Options{})
			if !free.Changed {
				t.Fatalf("nothing to write: %+v", free)
			}
			// The environment after the write: the old entry, if any,
			// replaced by the new one.
			var after []string
			for _, kv := range env {
				if !strings.HasPrefix(kv, libcarrier.EnvVar+"=") {
					after = append(after, kv)
				}
			}
			after = append(after, libcarrier.EnvVar+"="+free.Value)
			exact := envCost(after)

			res := taskenv.Compute(env, taskenv.Options{MaxEnvBytes: exact})
			if !res.Changed || res.Value != free.Value {
				t.Errorf("budget %d, exactly the result: not written: %q", exact, res.Reason)
			}
			res = taskenv.Compute(env, taskenv.Options{MaxEnvBytes: exact - 1})
			if res.Changed || !strings.Contains(res.Reason, "execve budget") {
				t.Errorf("budget %d, one byte short: %+v, want left alone with a reason", exact-1, res)
			}
		})
	}
}

// TestPerVariableLimit: "OTEL_RESOURCE_ATTRIBUTES=value" with its NUL must
// be under 131,072 bytes; Slurm refuses exactly 131,072.
func TestPerVariableLimit(t *testing.T) {
	// The result for a padding of n bytes is n bytes longer than for none.
	base := taskenv.Compute(step("OTEL_RESOURCE_ATTRIBUTES=big="), taskenv.Options{})
	entry := func(pad int) int { return len(libcarrier.EnvVar) + 1 + len(base.Value) + pad + 1 }
	under := taskenv.MaxArgStrlen - entry(0) - 1 // entry(under) == 131071
	tests := []struct {
		pad   int
		fits  bool
		entry int
	}{
		{under, true, 131071},
		{under + 1, false, 131072},
		{under + 2, false, 131073},
	}
	for _, tc := range tests {
		if entry(tc.pad) != tc.entry {
			t.Fatalf("test arithmetic: entry(%d) = %d, want %d", tc.pad, entry(tc.pad), tc.entry)
		}
		env := step("OTEL_RESOURCE_ATTRIBUTES=big=" + strings.Repeat("x", tc.pad))
		res := taskenv.Compute(env, taskenv.Options{})
		if res.Changed != tc.fits {
			t.Errorf("entry of %d bytes: written %v, want %v (%s)", tc.entry, res.Changed, tc.fits, res.Reason)
		}
		if !tc.fits && !strings.Contains(res.Reason, "limit for one variable") {
			t.Errorf("entry of %d bytes: reason %q", tc.entry, res.Reason)
		}
	}
}

// TestExecBudget: worked examples of the execve budget. A quarter of the
// stack limit, within 131072 and 6291456, minus the arguments, 8 bytes per
// argument (at least one) and the 8192-byte slack; at least 1.
func TestExecBudget(t *testing.T) {
	const unlimited = ^uint64(0) // RLIM_INFINITY
	type Exec = taskenv.Exec
	tests := []struct {
		exec Exec
		want int
	}{
		// 8 MiB, "python train.py": 2097152 - 16 - 2*8 - 8192
		{Exec{StackLimit: 8 << 20, ArgCount: 2, ArgBytes: 16}, 2088928},
		// no arguments still cost one pointer
		{Exec{StackLimit: 8 << 20}, 2088952},
		{Exec{StackLimit: 8 << 20, ArgCount: 3, ArgBytes: 30}, 2088906},
		// unlimited, and anything from 24 MiB up: the 6 MiB ceiling
		{Exec{StackLimit: unlimited, ArgCount: 1, ArgBytes: 2}, 6283254},
		{Exec{StackLimit: 64 << 20, ArgCount: 1, ArgBytes: 2}, 6283254},
		{Exec{StackLimit: 24 << 20, ArgCount: 1, ArgBytes: 2}, 6283254},
		// 4 bytes under 24 MiB: a quarter of it, one byte under the ceiling
		{Exec{StackLimit: 24<<20 - 4, ArgCount: 1, ArgBytes: 2}, 6283253},
		// 512 KiB and less: the 128 KiB floor
		{Exec{StackLimit: 512 << 10, ArgCount: 1, ArgBytes: 2}, 122870},
		{Exec{StackLimit: 256 << 10, ArgCount: 1, ArgBytes: 2}, 122870},
		{Exec{}, 122872},
		// 4 bytes over 512 KiB: a quarter of it, one byte over the floor
		{Exec{StackLimit: 512<<10 + 4, ArgCount: 1, ArgBytes: 2}, 122871},
		// arguments that leave 2, 1 and no byte, and more than the whole limit
		{Exec{StackLimit: 8 << 20, ArgCount: 1, ArgBytes: 2088950}, 2},
		{Exec{StackLimit: 8 << 20, ArgCount: 1, ArgBytes: 2088951}, 1},
		{Exec{StackLimit: 8 << 20, ArgCount: 1, ArgBytes: 2088952}, 1},
		{Exec{StackLimit: 8 << 20, ArgCount: 1, ArgBytes: 2097153}, 1},
	}
	for _, tc := range tests {
		if got := taskenv.ExecBudget(tc.exec); got != tc.want {
			t.Errorf("ExecBudget(%+v) = %d, want %d", tc.exec, got, tc.want)
		}
	}
	if got := taskenv.ExecOf(8<<20, []string{"python", "train.py"}); got != (Exec{StackLimit: 8 << 20, ArgCount: 2, ArgBytes: 16}) {
		t.Errorf("ExecOf = %+v", got)
	}
}
