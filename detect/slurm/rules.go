package slurm

//go:generate go test -run TestGenerated -update .

import "github.com/spank-otel/spank-otel/uuidderive"

// rule says how the detector fills one key of its allowlist when the
// inherited carrier does not give it.
type rule struct {
	key string
	// vars are the variables the local value comes from: the first that is
	// non-empty. Integer keys (the key table's, internal/keys, through
	// libcarrier.IsIntegerKey) take it in canonical form, or omit it,
	// with a warning, when it is not one.
	vars []string
	// unset is the local value when every one of vars is unset or empty;
	// "" for none.
	unset string
	// level says where the key is written and whether an inherited value
	// counts: see [level].
	level level
	// derive, when set, computes the local value instead of vars; ""
	// means none. It may read only the variables of fixedVarNames and of
	// the rules' vars: a Vars holds nothing else.
	derive func(env *Vars) string
	// rank marks the keys written only when ranks are asked for
	// (--otel-rank, rank=on: [Task.Ranks]). Otherwise the key is not the
	// detector's at all, and an inherited value is the user's own.
	rank bool
}

// level is where a key's value belongs: to the job, seen the same in every
// task, or to one task. Every rule of a key's level lives here, in one
// column of the rules table.
type level uint8

const (
	// levelJob: the job's own, written in the batch script and in every
	// step. An inherited value wins over the local one.
	levelJob level = iota
	// levelJobContext: the job's own, but named from where the job context
	// runs: written only outside a job step (the batch script, the
	// interactive step). A step's tasks run on other nodes, where the
	// variable names the wrong one, so in a step an inherited value is
	// kept and none is derived.
	levelJobContext
	// levelTask: the task's own: written only in a task of a job step,
	// always from the task's own variables; an inherited value is never
	// read. Outside a step none is written, and an inherited one is
	// removed: every later step would inherit it, on other nodes.
	levelTask
)

// rules is the allowlist: every key the detector writes, and the only keys
// it reads from an inherited OTEL_RESOURCE_ATTRIBUTES. Sorted by key,
// bytewise, which is the order of a result. It says how the detector fills
// each key; what the key is (its value type, that it is the detector's)
// is its row in the project's key table, internal/keys, from which
// libcarrier.IsIntegerKey comes.
//
// To add a key: its row here and its row in the key table (writer Slurm,
// type Integer or String), `go generate ./internal/keys ./detect/slurm`
// (the switches of keys_gen.go; the new variables in lookup_gen.go), and
// its case in keyCases (rules_test.go). TestKeyTable fails for a key in
// one table and not the other.
var rules = [...]rule{
	{key: "nv.dl.job.uuid", derive: deriveJobUUID},
	// A Slurm task is a training worker only when the job starts one
	// worker per task (srun python train.py), not under torchrun and its
	// like: hence asked for, never by default.
	{key: "nv.dl.local_rank", vars: []string{"SLURM_LOCALID"}, level: levelTask, rank: true},
	{key: "nv.dl.rank", vars: []string{"SLURM_PROCID"}, level: levelTask, rank: true},
	{key: "nv.dl.run.uuid"}, // only ever inherited
	{key: "nv.dl.world_size", vars: []string{"SLURM_STEP_NUM_TASKS"}, level: levelTask, rank: true},
	{key: "slurm.array.count", vars: []string{"SLURM_ARRAY_TASK_COUNT"}, unset: "1"},
	{key: "slurm.array.job_id", vars: []string{"SLURM_ARRAY_JOB_ID", "SLURM_JOB_ID"}},
	{key: "slurm.array.sluid", vars: []string{"LENS_SLURM_ARRAY_SLUID", "NV_LAUNCH_ARRAY_SLUID"}},
	{key: "slurm.array.task_id", vars: []string{"SLURM_ARRAY_TASK_ID"}, unset: "0"},
	{key: "slurm.cluster.name", vars: []string{"SLURM_CLUSTER_NAME"}},
	{key: "slurm.head_node.name", vars: []string{"SLURMD_NODENAME"}, level: levelJobContext},
	{key: "slurm.job.account", vars: []string{"SLURM_JOB_ACCOUNT"}},
	{key: "slurm.job.id", derive: deriveJobID},
	{key: "slurm.job.id.raw", vars: []string{"SLURM_JOB_ID"}},
	{key: "slurm.job.name", vars: []string{"SLURM_JOB_NAME"}},
	{key: "slurm.job.qos", vars: []string{"SLURM_JOB_QOS"}},
	{key: "slurm.job.reservation", vars: []string{"SLURM_JOB_RESERVATION"}},
	{key: "slurm.job.user", vars: []string{"SLURM_JOB_USER"}},
	{key: "slurm.nnodes", vars: []string{"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}},
	{key: "slurm.node.name", vars: []string{"SLURMD_NODENAME"}, level: levelTask},
	{key: "slurm.ntasks", vars: []string{"SLURM_NTASKS"}},
	{key: "slurm.partition", vars: []string{"SLURM_JOB_PARTITION", "SLURM_PARTITION"}},
	{key: "slurm.restart_count", vars: []string{"SLURM_RESTART_COUNT"}, unset: "0"},
	{key: "slurm.segment", vars: []string{"SLURM_SEGMENT"}},
	// Slurm's own SLURM_JOB_SLUID (in tasks from 26.05) comes last: a launcher's
	// value names the job as that launcher knows it.
	{key: "slurm.sluid", vars: []string{"LENS_SLURM_SLUID", "NV_LAUNCH_SLUID", "SLURM_JOB_SLUID"}},
	// The step the plugin is given (S_JOB_STEPID), else the variables'.
	{key: "slurm.step.id", derive: deriveStepID, level: levelTask},
	// Across all components of a heterogeneous step, as the task's own
	// variables count (S_TASK_GLOBAL_ID counts within one component).
	{key: "slurm.step.ntasks", vars: []string{"SLURM_STEP_NUM_TASKS"}, level: levelTask},
	{key: "slurm.task.id", vars: []string{"SLURM_PROCID"}, level: levelTask},
	{key: "slurm.task.local_id", vars: []string{"SLURM_LOCALID"}, level: levelTask},
	{key: "slurm.topology.addr", vars: []string{"SLURM_TOPOLOGY_ADDR"}, level: levelTask},
	{key: "slurm.topology.addr_pattern", vars: []string{"SLURM_TOPOLOGY_ADDR_PATTERN"}, level: levelTask},
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
