package taskenv_test

import (
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/internal/taskenv"
	"github.com/spank-otel/spank-otel/libcarrier"
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

// ExecBudget and the per-variable limit are part of the contract with the
// shim: cgo/contract_test.go checks them against cgo/testdata/contract.tsv,
// the worked examples the shim's C test checks too.
