package detect

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/uuidderive"
)

// Keys the Slurm detector writes, and reads from the inherited carrier.
const (
	KeySlurmJobID               = "slurm.job.id"
	KeySlurmJobIDRaw            = "slurm.job.id.raw"
	KeySlurmArrayJobID          = "slurm.array.job_id"
	KeySlurmArrayTaskID         = "slurm.array.task_id"
	KeySlurmArrayCount          = "slurm.array.count"
	KeySlurmSLUID               = "slurm.sluid"
	KeySlurmArraySLUID          = "slurm.array.sluid"
	KeySlurmJobName             = "slurm.job.name"
	KeySlurmClusterName         = "slurm.cluster.name"
	KeySlurmPartition           = "slurm.partition"
	KeySlurmNNodes              = "slurm.nnodes"
	KeySlurmNTasks              = "slurm.ntasks"
	KeySlurmRestartCount        = "slurm.restart_count"
	KeySlurmJobUser             = "slurm.job.user"
	KeySlurmJobAccount          = "slurm.job.account"
	KeySlurmJobQOS              = "slurm.job.qos"
	KeySlurmJobReservation      = "slurm.job.reservation"
	KeySlurmSegment             = "slurm.segment"
	KeySlurmTopologyAddr        = "slurm.topology.addr"
	KeySlurmTopologyAddrPattern = "slurm.topology.addr_pattern"
	KeySlurmHeadNodeName        = "slurm.head_node.name"
	KeyJobUUID                  = "nv.dl.job.uuid"
	KeyRunUUID                  = "nv.dl.run.uuid"
)

// slurmKeyCount is the size of the allowlist, the most keys a result holds.
const slurmKeyCount = 23

// IsSlurmKey reports whether key is one of the 23 keys the Slurm detector
// reads from an inherited OTEL_RESOURCE_ATTRIBUTES: the 21 slurm.* keys it
// derives, plus nv.dl.job.uuid and nv.dl.run.uuid. Retired keys such as
// slurm.nodelist, slurm.cluster and slurm.torchelastic.restart_count are not
// in the list.
func IsSlurmKey(key string) bool {
	switch key {
	case KeySlurmJobID, KeySlurmJobIDRaw,
		KeySlurmArrayJobID, KeySlurmArrayTaskID, KeySlurmArrayCount,
		KeySlurmSLUID, KeySlurmArraySLUID,
		KeySlurmJobName, KeySlurmClusterName, KeySlurmPartition,
		KeySlurmNNodes, KeySlurmNTasks, KeySlurmRestartCount,
		KeySlurmJobUser, KeySlurmJobAccount, KeySlurmJobQOS, KeySlurmJobReservation,
		KeySlurmSegment, KeySlurmTopologyAddr, KeySlurmTopologyAddrPattern,
		KeySlurmHeadNodeName,
		KeyJobUUID, KeyRunUUID:
		return true
	}
	return false
}

// isSlurmInteger reports whether key is one of the allowlisted keys whose
// value is an integer.
func isSlurmInteger(key string) bool {
	switch key {
	case KeySlurmArrayCount, KeySlurmNNodes, KeySlurmNTasks, KeySlurmRestartCount:
		return true
	}
	return false
}

// SlurmStrings is the Slurm detector. It returns the Slurm identity of the
// task whose environment is env, with every value a string (integers in
// canonical base 10), and warnings for the values it had to leave out.
//
// Values inherited through the allowlisted keys of env's
// OTEL_RESOURCE_ATTRIBUTES (see [IsSlurmKey]) win; an empty inherited value is
// ignored, and an inherited integer key whose value is not an integer is
// discarded with a warning. Values derived from the SLURM_* variables fill the
// remaining keys, but only when SLURM_JOB_ID is non-empty. nv.dl.job.uuid is
// derived from the raw variables alone (see [uuidderive.JobUUID]);
// nv.dl.run.uuid is only ever inherited. The result is empty, never nil, when
// there is neither a job nor an inherited key.
//
// Entries of the carrier that cannot be parsed are ignored here without a
// warning: they concern the whole carrier, which its reader reports.
//
// This runs in every task of every job step, so it keeps allocations low:
// keys are constants, values are substrings of env where possible, and the
// result map is sized for the whole allowlist.
func SlurmStrings(env Env) (map[string]string, []libcarrier.Warning) {
	var inherited map[string]string
	if text := lookup(env, libcarrier.EnvVar); text != "" {
		inherited, _ = libcarrier.Parse(text)
	}
	return SlurmStringsInherited(env, inherited)
}

// SlurmStringsInherited is [SlurmStrings] for a caller that has already
// parsed env's OTEL_RESOURCE_ATTRIBUTES into inherited, so the carrier is
// not parsed twice per task. inherited is only read.
func SlurmStringsInherited(env Env, inherited map[string]string) (map[string]string, []libcarrier.Warning) {
	jobID := lookup(env, "SLURM_JOB_ID")
	if jobID == "" && len(inherited) == 0 {
		return map[string]string{}, nil
	}

	out := make(map[string]string, slurmKeyCount)
	var warns []libcarrier.Warning
	for key, value := range inherited {
		if value == "" || !IsSlurmKey(key) {
			continue
		}
		if isSlurmInteger(key) {
			canon, ok := canonicalInteger(value)
			if !ok {
				warns = append(warns, libcarrier.Warning{Key: key,
					Message: "inherited value " + quote(value) + " is not an integer: discarded"})
				continue
			}
			value = canon
		}
		out[key] = value
	}
	if jobID != "" {
		warns = deriveSlurm(env, jobID, out, warns)
	}
	if len(warns) > 1 {
		slices.SortFunc(warns, func(a, b libcarrier.Warning) int { return strings.Compare(a.Key, b.Key) })
	}
	return out, warns
}

// deriveSlurm fills the keys of out that are still missing with the values
// derived from env's SLURM_* variables. Values are computed only for missing
// keys, so a local value that an inherited one replaces costs nothing and
// warns about nothing.
func deriveSlurm(env Env, jobID string, out map[string]string, warns []libcarrier.Warning) []libcarrier.Warning {
	// An array element is recognised by SLURM_ARRAY_TASK_ID being set; the
	// job UUID derivation uses the same test.
	taskID, array := env.Lookup("SLURM_ARRAY_TASK_ID")
	arrayJobID := lookup(env, "SLURM_ARRAY_JOB_ID")

	if missing(out, KeySlurmJobID) {
		if array && arrayJobID != "" {
			out[KeySlurmJobID] = arrayJobID + "_" + taskID
		} else {
			out[KeySlurmJobID] = jobID
		}
	}
	fill(out, KeySlurmJobIDRaw, jobID)
	fill(out, KeySlurmArrayJobID, cmp.Or(arrayJobID, jobID))
	fill(out, KeySlurmArrayTaskID, cmp.Or(taskID, "0"))
	warns = fillInteger(env, out, warns, KeySlurmArrayCount, "1", "SLURM_ARRAY_TASK_COUNT")

	fillFrom(env, out, KeySlurmSLUID, "LENS_SLURM_SLUID", "NV_LAUNCH_SLUID")
	fillFrom(env, out, KeySlurmArraySLUID, "LENS_SLURM_ARRAY_SLUID", "NV_LAUNCH_ARRAY_SLUID")
	fillFrom(env, out, KeySlurmJobName, "SLURM_JOB_NAME")
	fillFrom(env, out, KeySlurmClusterName, "SLURM_CLUSTER_NAME")
	fillFrom(env, out, KeySlurmPartition, "SLURM_JOB_PARTITION", "SLURM_PARTITION")
	warns = fillInteger(env, out, warns, KeySlurmNNodes, "", "SLURM_JOB_NUM_NODES", "SLURM_NNODES")
	warns = fillInteger(env, out, warns, KeySlurmNTasks, "", "SLURM_NTASKS")
	warns = fillInteger(env, out, warns, KeySlurmRestartCount, "0", "SLURM_RESTART_COUNT")
	fillFrom(env, out, KeySlurmJobUser, "SLURM_JOB_USER")
	fillFrom(env, out, KeySlurmJobAccount, "SLURM_JOB_ACCOUNT")
	fillFrom(env, out, KeySlurmJobQOS, "SLURM_JOB_QOS")
	fillFrom(env, out, KeySlurmJobReservation, "SLURM_JOB_RESERVATION")
	fillFrom(env, out, KeySlurmSegment, "SLURM_SEGMENT")
	fillFrom(env, out, KeySlurmTopologyAddr, "SLURM_TOPOLOGY_ADDR")
	fillFrom(env, out, KeySlurmTopologyAddrPattern, "SLURM_TOPOLOGY_ADDR_PATTERN")

	// The head node is the node of the batch script. A step's tasks run on
	// other nodes too, so there SLURMD_NODENAME names the wrong node.
	if !inStep(env) {
		fillFrom(env, out, KeySlurmHeadNodeName, "SLURMD_NODENAME")
	}
	if missing(out, KeyJobUUID) {
		out[KeyJobUUID] = uuidderive.JobUUID(env).String()
	}
	return warns
}

// inStep reports whether the task belongs to a job step rather than to the
// batch script: SLURM_STEP_ID or SLURM_STEPID is non-empty ("0" included).
func inStep(env Env) bool {
	return lookup(env, "SLURM_STEP_ID") != "" || lookup(env, "SLURM_STEPID") != ""
}

func missing(out map[string]string, key string) bool {
	_, ok := out[key]
	return !ok
}

// fill sets out[key] to value unless key is already set or value is empty.
func fill(out map[string]string, key, value string) {
	if value != "" && missing(out, key) {
		out[key] = value
	}
}

// fillFrom fills key with the first non-empty of the variables names.
func fillFrom(env Env, out map[string]string, key string, names ...string) {
	if missing(out, key) {
		if v, _ := firstOf(env, names...); v != "" {
			out[key] = v
		}
	}
}

// fillInteger fills the integer key with the first non-empty of the variables
// names, in canonical form, or with def when they are all unset or empty. A
// value that is not an integer is omitted, with a warning; def does not
// replace it.
func fillInteger(env Env, out map[string]string, warns []libcarrier.Warning, key, def string, names ...string) []libcarrier.Warning {
	if !missing(out, key) {
		return warns
	}
	value, name := firstOf(env, names...)
	if value == "" {
		if def != "" {
			out[key] = def
		}
		return warns
	}
	canon, ok := canonicalInteger(value)
	if !ok {
		return append(warns, libcarrier.Warning{Key: key,
			Message: name + "=" + quote(value) + " is not an integer: omitted"})
	}
	out[key] = canon
	return warns
}

// canonicalInteger returns s as a canonical base-10 integer if it is one by
// the rule of libcarrier.ParseInteger. A value that is already canonical, as
// Slurm writes them, is returned as it is, without allocating.
func canonicalInteger(s string) (string, bool) {
	n, ok := libcarrier.ParseInteger(s)
	if !ok {
		return "", false
	}
	if isCanonical(s) {
		return s, true
	}
	return strconv.FormatInt(n, 10), true
}

// isCanonical reports whether s is what strconv.FormatInt writes: an optional
// '-' and digits without a leading zero, or "0". s is known to be an integer.
func isCanonical(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && (len(digits) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// maxQuoted bounds how much of a value a warning repeats, so that one hostile
// value cannot flood a log.
const maxQuoted = 64

func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

// Slurm is the typed form of [SlurmStrings]: slurm.array.count, slurm.nnodes,
// slurm.ntasks and slurm.restart_count are int64, every other value a string.
func Slurm(env Env) (Attributes, []libcarrier.Warning) {
	s, warns := SlurmStrings(env)
	out := make(Attributes, len(s))
	for k, v := range s {
		if isSlurmInteger(k) {
			// SlurmStrings only returns valid integers for these keys.
			n, _ := libcarrier.ParseInteger(v)
			out[k] = n
			continue
		}
		out[k] = v
	}
	return out, warns
}
