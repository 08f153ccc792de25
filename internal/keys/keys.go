// Package keys is the one table of the resource keys the specification
// (docs/spec.md) names in the slurm.* and nv.* namespaces: the keys of an
// OTEL_RESOURCE_ATTRIBUTES carrier the project writes, types or retires.
// Each key's facts come from its row: its name, the type of its values
// once a Resource is built, and which part of the project writes it.
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
	// Slurm: the Slurm detector (package detect/slurm), whose rules table
	// says how.
	Slurm
	// GPU: the GPU detector (package detect/gpu). Its keys are a task's
	// own: an inherited one is removed, never read.
	GPU
	// Retired: a key of earlier versions, never read or written.
	Retired
)

// Key is one row of the table.
type Key struct {
	// Name is the key, or a pattern with [Ordinal] where a GPU's
	// ordinal goes.
	Name   string
	Type   Type
	Writer Writer
}

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

// table is every key, sorted by name, bytewise. A key added here comes to
// IsInteger and WriterOf by `go generate` (keys_gen.go); TestSpec checks
// the table against docs/spec.md.
var table = [...]Key{
	{"nv.dl.job.uuid", String, Slurm},
	{"nv.dl.local_rank", Integer, Slurm},
	{DLRank, Integer, Slurm},
	{"nv.dl.run.uuid", String, Slurm},
	{"nv.dl.topology.size.dp", Integer, Others},
	{"nv.dl.topology.size.pp", Integer, Others},
	{"nv.dl.topology.size.tp", Integer, Others},
	{"nv.dl.training.config.global_batch_size", Integer, Others},
	{"nv.dl.training.config.micro_batch_size", Integer, Others},
	{"nv.dl.training.config.sequence_length", Integer, Others},
	{"nv.dl.training.target.train_iters", Integer, Others},
	{"nv.dl.training.target.train_samples", Integer, Others},
	{"nv.dl.training.target.train_tokens", Integer, Others},
	{"nv.dl.world_size", Integer, Slurm},
	{GPUOrdinalPrefix + Ordinal + GPUOrdinalSuffix, String, GPU},
	{GPUCount, Integer, GPU},
	{"nv.gpu.index", Integer, Others},
	{"nv.gpu.memory_total", Integer, Others},
	{GPUUUID, String, GPU},
	// Never written; an inherited one is removed as another task's.
	{GPUUUIDs, String, GPU},
	{"slurm.array.count", Integer, Slurm},
	{"slurm.array.job_id", String, Slurm},
	{"slurm.array.sluid", String, Slurm},
	{"slurm.array.task_id", String, Slurm},
	{"slurm.cluster", String, Retired},
	{"slurm.cluster.name", String, Slurm},
	{"slurm.head_node.name", String, Slurm},
	{"slurm.job.account", String, Slurm},
	{"slurm.job.id", String, Slurm},
	{"slurm.job.id.raw", String, Slurm},
	{"slurm.job.name", String, Slurm},
	{"slurm.job.qos", String, Slurm},
	{"slurm.job.reservation", String, Slurm},
	{"slurm.job.user", String, Slurm},
	{"slurm.nnodes", Integer, Slurm},
	{"slurm.node.name", String, Slurm},
	{"slurm.nodelist", String, Retired},
	{"slurm.ntasks", Integer, Slurm},
	{"slurm.partition", String, Slurm},
	{"slurm.restart_count", Integer, Slurm},
	{"slurm.segment", String, Slurm},
	{"slurm.sluid", String, Slurm},
	{"slurm.step.id", Integer, Slurm},
	{"slurm.step.ntasks", Integer, Slurm},
	{"slurm.task.id", Integer, Slurm},
	{"slurm.task.local_id", Integer, Slurm},
	{"slurm.topology.addr", String, Slurm},
	{"slurm.topology.addr_pattern", String, Slurm},
	{"slurm.torchelastic.restart_count", String, Retired},
}

// All returns the table, sorted by name: for the tests and generators of
// the packages that keep their own tables in step with it.
func All() []Key {
	return slices.Clone(table[:])
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
