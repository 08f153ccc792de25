package slurm

//go:generate go test -run TestGenerated -update .

import (
	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/uuidderive"
)

// rule says how the detector fills one key of its allowlist when the
// inherited carrier does not give it: the key's row in the project's key
// table, internal/keys, whose fields (Vars, Unset, Level, Rank, Derived)
// say what each column means.
type rule struct {
	key   string
	vars  []string
	unset string
	level keys.Level
	// derive, for a Derived key, is its function in derivers.
	derive func(env *Vars) string
	rank   bool
}

// rules (rules_gen.go) is the allowlist: every key the detector writes,
// and the only keys it reads from an inherited OTEL_RESOURCE_ATTRIBUTES.
// They are the key table's rows of writer Slurm, in its order, sorted by
// key, bytewise, which is the order of a result; what a key is (its value
// type, that it is the detector's) and how it is filled are its row there.
// `go generate` writes them, and the variables of lookup_gen.go, from the
// table: an array literal, which costs the task path no initialisation.
//
// To add a key: its row in the key table (internal/keys: writer Slurm, its
// type, variables, level ...), `go generate ./internal/keys ./detect/slurm`,
// and its case in keyCases (rules_test.go). A Derived key also needs its
// function, in derivers. A stale rules_gen.go fails TestGenerated, a key
// without a case TestEveryKey.

// derivers are the functions that compute the keys the key table marks
// Derived, by key: TestGenerated names each in its key's rule. A function
// may read only the variables of fixedVarNames and of the rules' vars: a
// Vars holds nothing else.
var derivers = [...]struct {
	key    string
	derive func(env *Vars) string
}{
	{"nv.dl.job.uuid", deriveJobUUID},
	{"slurm.job.id", deriveJobID},
	{"slurm.step.id", deriveStepID},
}

// NumKeys is the size of the allowlist: a result never holds more entries.
const NumKeys = len(rules)

// IsKey reports whether key is one of the keys the Slurm detector always
// manages: the slurm.* keys it derives, plus nv.dl.job.uuid and
// nv.dl.run.uuid. Retired keys such as slurm.nodelist, slurm.cluster and
// slurm.torchelastic.restart_count are not in the list, and neither are
// the rank keys (nv.dl.rank, nv.dl.world_size, nv.dl.local_rank), which it
// manages only when asked to: see [Task.Manages].
func IsKey(key string) bool {
	i := keyIndex(key)
	return i >= 0 && !rules[i].rank
}

// IsRankKey reports whether key is one of the rank keys the detector
// writes when ranks are asked for ([Task.Ranks]).
func IsRankKey(key string) bool {
	i := keyIndex(key)
	return i >= 0 && rules[i].rank
}

// deriveJobID is slurm.job.id: <SLURM_ARRAY_JOB_ID>_<SLURM_ARRAY_TASK_ID> for an
// array element, the job id otherwise. An array element is recognised by
// SLURM_ARRAY_TASK_ID being set, as for the job UUID.
func deriveJobID(env *Vars) string {
	if arrayJobID := env.value(varArrayJobID); env.has(varArrayTaskID) && arrayJobID != "" {
		return arrayJobID + "_" + env.value(varArrayTaskID)
	}
	return env.value(varJobID)
}

// deriveJobUUID is nv.dl.job.uuid, derived by package uuidderive from the
// values, not from env: as an Env, env would move to the heap.
func deriveJobUUID(env *Vars) string {
	job := uuidderive.JobVars{Cluster: env.value(varClusterName), JobID: env.value(varJobID),
		ArrayJobID: env.value(varArrayJobID), ArrayTask: env.has(varArrayTaskID)}
	return job.UUID().String()
}
