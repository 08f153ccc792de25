// Package keys is the one table of the resource keys the specification
// (docs/spec.md) names in the slurm.* and nv.* namespaces: the keys of an
// OTEL_RESOURCE_ATTRIBUTES carrier the project writes, types or retires.
// Each key's facts come from its row: its name, the type of its values
// once a Resource is built, which part of the project writes it, and, for
// a key the Slurm detector writes, how it fills it: its level, the
// variables it reads, its value when they are unset, whether it is a rank
// key and whether it is derived by a function of the detector.
//
// To add a key the Slurm detector writes: its row in the table (Writer
// Slurm; Type, Vars, Unset, Level, Rank, Derived as it is filled), `go
// generate ./internal/keys ./detect/slurm` (the switches of keys_gen.go;
// the detector's rules and variables, rules_gen.go and lookup_gen.go),
// and its case in detect/slurm's keyCases (rules_test.go). A derived key
// also needs its function in detect/slurm's derivers.
//
// The lookups the task path makes ([IsInteger], [WriterOf]) are switches
// generated from the table (keys_gen.go), not searches of it: a switch
// costs no initialisation and no allocation in every task.
package keys

//go:generate go test -run TestGenerated -update .

import "slices"

// Type is the type of a key's values once a Resource is built from a
// carrier, whose values are all strings (docs/spec.md, section 2).
type Type uint8

const (
	// String: the value as it is.
	String Type = iota
	// Integer: an int64 when the value is a complete base-10 integer
	// (libcarrier.ParseInteger).
	Integer
)

// Writer is the part of the project that writes a key.
type Writer uint8

const (
	// Others: a key the project never writes, only types and keeps
	// (a launcher's or a training framework's). Also every key that is
	// not in the table.
	Others Writer = iota
	// Slurm: the Slurm detector (package detect/slurm), as the row's
	// Vars, Unset, Level, Rank and Derived say.
	Slurm
	// GPU: the GPU detector (package detect/gpu). Its keys are a task's
	// own: an inherited one is removed, never read.
	GPU
	// Retired: a key of earlier versions, never read or written.
	Retired
)

// Key is one row of the table.
//
// Vars, Unset, Level, Rank and Derived say how the Slurm detector fills a
// key whose Writer is Slurm when the inherited carrier does not give it;
// they are zero for every other key. A Slurm key with neither Vars nor
// Derived is only ever inherited.
type Key struct {
	// Name is the key, or a pattern with [Ordinal] where a GPU's
	// ordinal goes.
	Name   string
	Type   Type
	Writer Writer
	// Vars are the variables the local value comes from: the first that
	// is non-empty. An Integer key takes it in canonical form, or omits
	// it, with a warning, when it is not one.
	Vars []string
	// Unset is the local value when every one of Vars is unset or empty;
	// "" for none. An Integer key's is a canonical integer.
	Unset string
	// Level says where the key is written and whether an inherited value
	// counts: see [Level].
	Level Level
	// Rank marks the keys written only when ranks are asked for
	// (--otel-rank, rank=on: detect/slurm's Task.Ranks). Otherwise the
	// key is not the detector's at all, and an inherited value is the
	// user's own.
	Rank bool
	// Derived: the local value is computed by the detector's function
	// for the key (detect/slurm's derivers), not read from Vars, and
	// neither Vars nor Unset is set.
	Derived bool
}

// Level is where a key's value belongs: to the job, seen the same in every
// task, or to one task. Every rule of a key's level lives here, in one
// column of the table.
type Level uint8

const (
	// LevelJob: the job's own, written in the batch script and in every
	// step. An inherited value wins over the local one.
	LevelJob Level = iota
	// LevelJobContext: the job's own, but named from where the job
	// context runs: written only outside a job step (the batch script,
	// the interactive step). A step's tasks run on other nodes, where the
	// variable names the wrong one, so in a step an inherited value is
	// kept and none is derived.
	LevelJobContext
	// LevelTask: the task's own: written only in a task of a job step,
	// always from the task's own variables; an inherited value is never
	// read. Outside a step none is written, and an inherited one is
	// removed: every later step would inherit it, on other nodes.
	LevelTask
)

// Ordinal stands for a decimal GPU ordinal (0, 1, …) in a Name.
const Ordinal = "<i>"

// The GPU keys' names, stated here once for the table and package gpu.
const (
	// GPUCount is the number of a task's GPUs.
	GPUCount = "nv.gpu.count"
	// GPUUUID is the UUID of a task's one GPU.
	GPUUUID = "nv.gpu.uuid"
	// GPUUUIDs is the list of earlier versions.
	GPUUUIDs = "nv.gpu.uuids"
	// GPUOrdinalPrefix, a GPU's ordinal and GPUOrdinalSuffix are the key
	// of that GPU's UUID: nv.gpu.<i>.uuid.
	GPUOrdinalPrefix = "nv.gpu."
	GPUOrdinalSuffix = ".uuid"
)

// DLRank is the rank of a training worker.
const DLRank = "nv.dl.rank"

// The variables of a task's environment the GPU detector (package
// detect/gpu) reads, stated here once for it and for the Slurm detector's
// Vars (detect/slurm), which holds them too: the task path reads a task's
// environment once, into the one view both detectors read.
const (
	// VarVisibleDevices is CUDA_VISIBLE_DEVICES: the task's GPUs as CUDA
	// numbers them, or their UUIDs.
	VarVisibleDevices = "CUDA_VISIBLE_DEVICES"
	// VarStepGPUs is SLURM_STEP_GPUS: the step's GPUs on the node, by
	// gres.conf index.
	VarStepGPUs = "SLURM_STEP_GPUS"
	// VarGPUsOnNode is SLURM_GPUS_ON_NODE: how many GPUs the step has on
	// the node.
	VarGPUsOnNode = "SLURM_GPUS_ON_NODE"
	// VarSlurmConf is SLURM_CONF: slurmd's slurm.conf, whose directory
	// holds gres.conf and cgroup.conf.
	VarSlurmConf = "SLURM_CONF"
	// VarNodeName is SLURMD_NODENAME: the node's name in gres.conf.
	VarNodeName = "SLURMD_NODENAME"
	// VarDeviceOrder is CUDA_DEVICE_ORDER: PCI_BUS_ID asks CUDA for PCI
	// order.
	VarDeviceOrder = "CUDA_DEVICE_ORDER"
)

// table is every key, sorted by name, bytewise, which is also the order of
// the Slurm detector's results. A key added here comes to IsInteger and
// WriterOf, and a Slurm key to the detector's rules, by `go generate`;
// TestSpec checks the table against docs/spec.md.
var table = [...]Key{
	{Name: "nv.dl.job.uuid", Type: String, Writer: Slurm, Derived: true},
	// A Slurm task is a training worker only when the job starts one
	// worker per task (srun python train.py), not under torchrun and its
	// like: hence asked for, never by default.
	{Name: "nv.dl.local_rank", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_LOCALID"}, Level: LevelTask, Rank: true},
	{Name: DLRank, Type: Integer, Writer: Slurm, Vars: []string{"SLURM_PROCID"}, Level: LevelTask, Rank: true},
	{Name: "nv.dl.run.uuid", Type: String, Writer: Slurm}, // only ever inherited
	{Name: "nv.dl.topology.size.dp", Type: Integer, Writer: Others},
	{Name: "nv.dl.topology.size.pp", Type: Integer, Writer: Others},
	{Name: "nv.dl.topology.size.tp", Type: Integer, Writer: Others},
	{Name: "nv.dl.training.config.global_batch_size", Type: Integer, Writer: Others},
	{Name: "nv.dl.training.config.micro_batch_size", Type: Integer, Writer: Others},
	{Name: "nv.dl.training.config.sequence_length", Type: Integer, Writer: Others},
	{Name: "nv.dl.training.target.train_iters", Type: Integer, Writer: Others},
	{Name: "nv.dl.training.target.train_samples", Type: Integer, Writer: Others},
	{Name: "nv.dl.training.target.train_tokens", Type: Integer, Writer: Others},
	{Name: "nv.dl.world_size", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_STEP_NUM_TASKS"}, Level: LevelTask, Rank: true},
	{Name: GPUOrdinalPrefix + Ordinal + GPUOrdinalSuffix, Type: String, Writer: GPU},
	{Name: GPUCount, Type: Integer, Writer: GPU},
	{Name: "nv.gpu.index", Type: Integer, Writer: Others},
	{Name: "nv.gpu.memory_total", Type: Integer, Writer: Others},
	{Name: GPUUUID, Type: String, Writer: GPU},
	// Never written; an inherited one is removed as another task's.
	{Name: GPUUUIDs, Type: String, Writer: GPU},
	{Name: "slurm.array.count", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_ARRAY_TASK_COUNT"}, Unset: "1"},
	{Name: "slurm.array.job_id", Type: String, Writer: Slurm, Vars: []string{"SLURM_ARRAY_JOB_ID", "SLURM_JOB_ID"}},
	{Name: "slurm.array.sluid", Type: String, Writer: Slurm, Vars: []string{"LENS_SLURM_ARRAY_SLUID", "NV_LAUNCH_ARRAY_SLUID"}},
	{Name: "slurm.array.task_id", Type: String, Writer: Slurm, Vars: []string{"SLURM_ARRAY_TASK_ID"}, Unset: "0"},
	{Name: "slurm.cluster", Type: String, Writer: Retired},
	{Name: "slurm.cluster.name", Type: String, Writer: Slurm, Vars: []string{"SLURM_CLUSTER_NAME"}},
	{Name: "slurm.head_node.name", Type: String, Writer: Slurm, Vars: []string{VarNodeName}, Level: LevelJobContext},
	{Name: "slurm.job.account", Type: String, Writer: Slurm, Vars: []string{"SLURM_JOB_ACCOUNT"}},
	{Name: "slurm.job.id", Type: String, Writer: Slurm, Derived: true},
	{Name: "slurm.job.id.raw", Type: String, Writer: Slurm, Vars: []string{"SLURM_JOB_ID"}},
	{Name: "slurm.job.name", Type: String, Writer: Slurm, Vars: []string{"SLURM_JOB_NAME"}},
	{Name: "slurm.job.qos", Type: String, Writer: Slurm, Vars: []string{"SLURM_JOB_QOS"}},
	{Name: "slurm.job.reservation", Type: String, Writer: Slurm, Vars: []string{"SLURM_JOB_RESERVATION"}},
	{Name: "slurm.job.user", Type: String, Writer: Slurm, Vars: []string{"SLURM_JOB_USER"}},
	{Name: "slurm.nnodes", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}},
	{Name: "slurm.node.name", Type: String, Writer: Slurm, Vars: []string{VarNodeName}, Level: LevelTask},
	{Name: "slurm.nodelist", Type: String, Writer: Retired},
	{Name: "slurm.ntasks", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_NTASKS"}},
	{Name: "slurm.partition", Type: String, Writer: Slurm, Vars: []string{"SLURM_JOB_PARTITION", "SLURM_PARTITION"}},
	{Name: "slurm.restart_count", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_RESTART_COUNT"}, Unset: "0"},
	{Name: "slurm.segment", Type: String, Writer: Slurm, Vars: []string{"SLURM_SEGMENT"}},
	// Slurm's own SLURM_JOB_SLUID (in tasks from 26.05) comes last: a launcher's
	// value names the job as that launcher knows it.
	{Name: "slurm.sluid", Type: String, Writer: Slurm, Vars: []string{"LENS_SLURM_SLUID", "NV_LAUNCH_SLUID", "SLURM_JOB_SLUID"}},
	// The step the plugin is given (S_JOB_STEPID), else the variables'.
	{Name: "slurm.step.id", Type: Integer, Writer: Slurm, Level: LevelTask, Derived: true},
	// Across all components of a heterogeneous step, as the task's own
	// variables count (S_TASK_GLOBAL_ID counts within one component).
	{Name: "slurm.step.ntasks", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_STEP_NUM_TASKS"}, Level: LevelTask},
	{Name: "slurm.task.id", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_PROCID"}, Level: LevelTask},
	{Name: "slurm.task.local_id", Type: Integer, Writer: Slurm, Vars: []string{"SLURM_LOCALID"}, Level: LevelTask},
	{Name: "slurm.topology.addr", Type: String, Writer: Slurm, Vars: []string{"SLURM_TOPOLOGY_ADDR"}, Level: LevelTask},
	{Name: "slurm.topology.addr_pattern", Type: String, Writer: Slurm, Vars: []string{"SLURM_TOPOLOGY_ADDR_PATTERN"}, Level: LevelTask},
	{Name: "slurm.torchelastic.restart_count", Type: String, Writer: Retired},
}

// All returns a copy of the table, sorted by name: for the tests and
// generators of the packages whose tables are generated from it.
func All() []Key {
	all := slices.Clone(table[:])
	for i := range all {
		all[i].Vars = slices.Clone(all[i].Vars)
	}
	return all
}

// ordinal reports whether key is prefix, a decimal ordinal and suffix: the
// key of a row whose name holds [Ordinal].
func ordinal(key, prefix, suffix string) bool {
	if len(key) <= len(prefix)+len(suffix) || key[:len(prefix)] != prefix || key[len(key)-len(suffix):] != suffix {
		return false
	}
	for i := len(prefix); i < len(key)-len(suffix); i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	return true
}
