package detect

import (
	"github.com/spank-otel/spank-otel/internal/slurm"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// The detector itself is package internal/slurm, which the per-task library
// links without this package's os and fmt; these are its public names.

// Keys the Slurm detector writes, and reads from the inherited carrier.
const (
	KeySlurmJobID               = slurm.KeySlurmJobID
	KeySlurmJobIDRaw            = slurm.KeySlurmJobIDRaw
	KeySlurmArrayJobID          = slurm.KeySlurmArrayJobID
	KeySlurmArrayTaskID         = slurm.KeySlurmArrayTaskID
	KeySlurmArrayCount          = slurm.KeySlurmArrayCount
	KeySlurmSLUID               = slurm.KeySlurmSLUID
	KeySlurmArraySLUID          = slurm.KeySlurmArraySLUID
	KeySlurmJobName             = slurm.KeySlurmJobName
	KeySlurmClusterName         = slurm.KeySlurmClusterName
	KeySlurmPartition           = slurm.KeySlurmPartition
	KeySlurmNNodes              = slurm.KeySlurmNNodes
	KeySlurmNTasks              = slurm.KeySlurmNTasks
	KeySlurmRestartCount        = slurm.KeySlurmRestartCount
	KeySlurmJobUser             = slurm.KeySlurmJobUser
	KeySlurmJobAccount          = slurm.KeySlurmJobAccount
	KeySlurmJobQOS              = slurm.KeySlurmJobQOS
	KeySlurmJobReservation      = slurm.KeySlurmJobReservation
	KeySlurmSegment             = slurm.KeySlurmSegment
	KeySlurmTopologyAddr        = slurm.KeySlurmTopologyAddr
	KeySlurmTopologyAddrPattern = slurm.KeySlurmTopologyAddrPattern
	KeySlurmHeadNodeName        = slurm.KeySlurmHeadNodeName
	KeyJobUUID                  = slurm.KeyJobUUID
	KeyRunUUID                  = slurm.KeyRunUUID
)

// IsSlurmKey reports whether key is one of the 23 keys the Slurm detector
// reads from an inherited OTEL_RESOURCE_ATTRIBUTES: the 21 slurm.* keys it
// derives, plus nv.dl.job.uuid and nv.dl.run.uuid. Retired keys such as
// slurm.nodelist, slurm.cluster and slurm.torchelastic.restart_count are not
// in the list.
func IsSlurmKey(key string) bool { return slurm.IsKey(key) }

// SlurmStrings is the Slurm detector. It returns the Slurm identity of the
// task whose environment is env, with every value a string (integers in
// canonical base 10), and warnings for the values it had to leave out.
//
// Values inherited through the allowlisted keys of env's
// OTEL_RESOURCE_ATTRIBUTES (see [IsSlurmKey]) win; an empty inherited value
// is ignored, and an inherited integer key whose value is not an integer is
// discarded with a warning. Values derived from the SLURM_* variables fill
// the remaining keys, but only when SLURM_JOB_ID is non-empty.
// nv.dl.job.uuid is derived from the raw variables alone (see
// [uuidderive.JobUUID]); nv.dl.run.uuid is only ever inherited. The result
// is empty, never nil, when there is neither a job nor an inherited key.
//
// Entries of the carrier that cannot be parsed are ignored here without a
// warning: they concern the whole carrier, which its reader reports.
func SlurmStrings(env Env) (map[string]string, []libcarrier.Warning) {
	return slurm.Strings(env)
}

// InStep reports whether env is the environment of a task of a job step, as
// opposed to the batch script: SLURM_STEP_ID (or the older SLURM_STEPID)
// names a regular step, "0" included.
//
// A step id is regular when it is a base-10 number from 0 to 0xfffffff0,
// or any other non-empty text that is not a number. Slurm's special steps
// are job level: negative ids (Slurm 26.05 sets SLURM_STEP_ID=-5 in the
// batch script), ids above 0xfffffff0 (the same steps written unsigned:
// 4294967291 for the batch step, 4294967294 before Slurm 20.11) and the
// names batch, extern and interactive. Otherwise the batch script would
// lose its head node and pass its own topology to every step.
func InStep(env Env) bool { return slurm.InStep(env) }

// Slurm is the typed form of [SlurmStrings]: slurm.array.count, slurm.nnodes,
// slurm.ntasks and slurm.restart_count are int64, every other value a string.
func Slurm(env Env) (Attributes, []libcarrier.Warning) {
	s, warns := SlurmStrings(env)
	out := make(Attributes, len(s))
	for k, v := range s {
		if libcarrier.IsIntegerKey(k) {
			// SlurmStrings only returns valid integers for these keys.
			n, _ := libcarrier.ParseInteger(v)
			out[k] = n
			continue
		}
		out[k] = v
	}
	return out, warns
}
