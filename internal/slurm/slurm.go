// Package slurm is the Slurm detector without package detect's public
// surface: the per-task library links it, and with it neither fmt nor os.
// Package detect exports it as SlurmStrings, Slurm and InStep.
//
// The detector reads a [Vars], the fixed set of variables it needs, by
// index; [VarsList] builds one from envp without a map or an allocation.
package slurm

import (
	"cmp"
	"math/bits"
	"slices"
	"strconv"

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

// The allowlisted keys by index, in byte order, so that a result walked by
// index is sorted by key. To add one: a Key constant, its index here, its
// entry in slurmKeys, `go generate`, then the line of deriveSlurm that
// fills it (and detect's public Key constant).
const (
	keyJobUUID = iota
	keyRunUUID
	keyArrayCount
	keyArrayJobID
	keyArraySLUID
	keyArrayTaskID
	keyClusterName
	keyHeadNodeName
	keyJobAccount
	keyJobID
	keyJobIDRaw
	keyJobName
	keyJobQOS
	keyJobReservation
	keyJobUser
	keyNNodes
	keyNTasks
	keyPartition
	keyRestartCount
	keySegment
	keySLUID
	keyTopologyAddr
	keyTopologyAddrPattern

	slurmKeyCount // the size of the allowlist, the most keys a result holds
)

// NumKeys is the size of the allowlist: a result never holds more entries.
const NumKeys = slurmKeyCount

// slurmValues.set and the seen set of AppendStrings have one bit per key.
var _ [32 - slurmKeyCount]struct{}

// slurmKeys are the allowlisted keys by index: the table that slurmKey, its
// reverse, is generated from.
var slurmKeys = [slurmKeyCount]string{
	keyJobUUID:             KeyJobUUID,
	keyRunUUID:             KeyRunUUID,
	keyArrayCount:          KeySlurmArrayCount,
	keyArrayJobID:          KeySlurmArrayJobID,
	keyArraySLUID:          KeySlurmArraySLUID,
	keyArrayTaskID:         KeySlurmArrayTaskID,
	keyClusterName:         KeySlurmClusterName,
	keyHeadNodeName:        KeySlurmHeadNodeName,
	keyJobAccount:          KeySlurmJobAccount,
	keyJobID:               KeySlurmJobID,
	keyJobIDRaw:            KeySlurmJobIDRaw,
	keyJobName:             KeySlurmJobName,
	keyJobQOS:              KeySlurmJobQOS,
	keyJobReservation:      KeySlurmJobReservation,
	keyJobUser:             KeySlurmJobUser,
	keyNNodes:              KeySlurmNNodes,
	keyNTasks:              KeySlurmNTasks,
	keyPartition:           KeySlurmPartition,
	keyRestartCount:        KeySlurmRestartCount,
	keySegment:             KeySlurmSegment,
	keySLUID:               KeySlurmSLUID,
	keyTopologyAddr:        KeySlurmTopologyAddr,
	keyTopologyAddrPattern: KeySlurmTopologyAddrPattern,
}

// IsKey reports whether key is one of the 23 keys the Slurm detector
// reads from an inherited OTEL_RESOURCE_ATTRIBUTES: the 21 slurm.* keys it
// derives, plus nv.dl.job.uuid and nv.dl.run.uuid. Retired keys such as
// slurm.nodelist, slurm.cluster and slurm.torchelastic.restart_count are not
// in the list.
func IsKey(key string) bool {
	return slurmKey(key) >= 0
}

// isSlurmInteger reports whether the allowlisted key of index i has integer
// values.
func isSlurmInteger(i int) bool {
	return i >= 0 && libcarrier.IsIntegerKey(slurmKeys[i])
}

// slurmValues are the values of a detection by allowlist index.
type slurmValues struct {
	value [slurmKeyCount]string
	set   uint32 // bit i: value[i] is set
}

func (v *slurmValues) has(i int) bool { return v.set&(1<<i) != 0 }

func (v *slurmValues) put(i int, value string) {
	v.value[i] = value
	v.set |= 1 << i
}

// inherit records the inherited value of key, if key is allowlisted and
// value usable, and returns warns with a warning for an inherited integer
// key that is not an integer.
func (v *slurmValues) inherit(key, value string, warns []libcarrier.Warning) []libcarrier.Warning {
	i := slurmKey(key)
	if i < 0 || value == "" {
		return warns
	}
	if isSlurmInteger(i) {
		canon, ok := canonicalInteger(value)
		if !ok {
			return append(warns, libcarrier.Warning{Key: key,
				Message: "inherited value " + libcarrier.Quote(value) + " is not an integer: discarded"})
		}
		value = canon
	}
	v.put(i, value)
	return warns
}

// Strings is the Slurm detector. It returns the Slurm identity of the
// task whose environment is env, with every value a string (integers in
// canonical base 10), and warnings for the values it had to leave out.
//
// Values inherited through the allowlisted keys of env's
// OTEL_RESOURCE_ATTRIBUTES (see [IsKey]) win; an empty inherited value is
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
// result map is built once, at its final size. [AppendStrings] avoids
// the map altogether.
func Strings(env uuidderive.Env) (map[string]string, []libcarrier.Warning) {
	se := VarsOf(env)
	var v slurmValues
	var warns []libcarrier.Warning
	if text := se.value(varCarrier); text != "" {
		var buf [32]libcarrier.KeyValue
		inherited, _ := libcarrier.AppendParse(buf[:0], text)
		for _, kv := range inherited {
			warns = v.inherit(kv.Key, kv.Value, warns)
		}
	}
	warns = detectSlurm(&se, &v, warns)
	return v.toMap(), warns
}

// AppendStrings is [Strings] for the per-task hot path: the task's
// environment is a [Vars] (see [VarsOf] for any other Env), the inherited
// carrier and the result are slices. It appends the result to dst sorted by
// key, and returns the extended slice and the warnings. inherited holds the
// entries of env's OTEL_RESOURCE_ATTRIBUTES as the caller has parsed (and
// perhaps repaired) them with [libcarrier.AppendParse], so that the carrier is
// not parsed twice per task; env's own carrier is not read. When a key
// occurs more than once, its last entry counts, as in a map built in order.
// env and inherited are only read.
//
// With a dst of enough capacity (23 entries), only a derived
// nv.dl.job.uuid or slurm.job.id of an array element, and the warnings,
// allocate.
func AppendStrings(dst []libcarrier.KeyValue, env *Vars, inherited []libcarrier.KeyValue) ([]libcarrier.KeyValue, []libcarrier.Warning) {
	var v slurmValues
	return v.appendStrings(dst, env, inherited)
}

// Task is the state of one task's detection: its variables and the values
// detected, about 900 bytes. The per-task path keeps it on the heap (see
// taskenv): on the 4 KB stack a call from C starts on, it would make the
// runtime grow the stack. Fill Vars with [Vars.ReadList].
type Task struct {
	Vars   Vars
	values slurmValues
}

// AppendStrings is the function [AppendStrings] with t.Vars as env, and
// t's own room for the values.
func (t *Task) AppendStrings(dst []libcarrier.KeyValue, inherited []libcarrier.KeyValue) ([]libcarrier.KeyValue, []libcarrier.Warning) {
	t.values = slurmValues{}
	return t.values.appendStrings(dst, &t.Vars, inherited)
}

func (v *slurmValues) appendStrings(dst []libcarrier.KeyValue, env *Vars, inherited []libcarrier.KeyValue) ([]libcarrier.KeyValue, []libcarrier.Warning) {
	var warns []libcarrier.Warning
	var seen uint32 // bit i: the last entry of allowlisted key i was read
	for n := len(inherited) - 1; n >= 0; n-- {
		kv := inherited[n]
		if i := slurmKey(kv.Key); i >= 0 && seen&(1<<i) == 0 {
			seen |= 1 << i
			warns = v.inherit(kv.Key, kv.Value, warns)
		}
	}
	warns = detectSlurm(env, v, warns)
	// By index: ranging over the array by value would copy it to the stack.
	for i := range v.value {
		if v.has(i) {
			dst = append(dst, libcarrier.KeyValue{Key: slurmKeys[i], Value: v.value[i]})
		}
	}
	return dst, warns
}

// detectSlurm completes v, which holds the usable inherited values, with
// the values derived from env, and returns warns, with the warnings of the
// derivation added, ordered by key.
//
// The detector reads env by variable index, never by name, so it cannot
// read a variable that a Vars does not hold.
func detectSlurm(env *Vars, v *slurmValues, warns []libcarrier.Warning) []libcarrier.Warning {
	if jobID := env.value(varJobID); jobID != "" {
		warns = deriveSlurm(env, jobID, v, warns)
	}
	// Stable: a key's inherited warning stays before its local one.
	slices.SortStableFunc(warns, func(a, b libcarrier.Warning) int { return cmp.Compare(a.Key, b.Key) })
	return warns
}

// toMap returns the values of v in a map. It is never nil.
func (v *slurmValues) toMap() map[string]string {
	m := make(map[string]string, bits.OnesCount32(v.set))
	for i, value := range v.value {
		if v.has(i) {
			m[slurmKeys[i]] = value
		}
	}
	return m
}

// deriveSlurm fills the keys of v that are still missing with the values
// derived from env's SLURM_* variables. Values are computed only for missing
// keys, so a local value that an inherited one replaces costs nothing and
// warns about nothing.
func deriveSlurm(env *Vars, jobID string, v *slurmValues, warns []libcarrier.Warning) []libcarrier.Warning {
	// An array element is recognised by SLURM_ARRAY_TASK_ID being set; the
	// job UUID derivation uses the same test.
	taskID, array := env.value(varArrayTaskID), env.has(varArrayTaskID)
	arrayJobID := env.value(varArrayJobID)

	if !v.has(keyJobID) {
		if array && arrayJobID != "" {
			v.put(keyJobID, arrayJobID+"_"+taskID)
		} else {
			v.put(keyJobID, jobID)
		}
	}
	v.fill(keyJobIDRaw, jobID)
	v.fill(keyArrayJobID, cmp.Or(arrayJobID, jobID))
	v.fill(keyArrayTaskID, cmp.Or(taskID, "0"))
	warns = v.fillInteger(env, warns, keyArrayCount, "1", varArrayTaskCount)

	// Slurm's own SLURM_JOB_SLUID (from 25.11) comes last: a launcher's
	// value names the job as that launcher knows it.
	v.fillFrom(env, keySLUID, varLensSLUID, varNVSLUID, varJobSLUID)
	v.fillFrom(env, keyArraySLUID, varLensArraySLUID, varNVArraySLUID)
	v.fillFrom(env, keyJobName, varJobName)
	v.fillFrom(env, keyClusterName, varClusterName)
	v.fillFrom(env, keyPartition, varJobPartition, varPartition)
	warns = v.fillInteger(env, warns, keyNNodes, "", varJobNumNodes, varNNodes)
	warns = v.fillInteger(env, warns, keyNTasks, "", varNTasks)
	warns = v.fillInteger(env, warns, keyRestartCount, "0", varRestartCount)
	v.fillFrom(env, keyJobUser, varJobUser)
	v.fillFrom(env, keyJobAccount, varJobAccount)
	v.fillFrom(env, keyJobQOS, varJobQOS)
	v.fillFrom(env, keyJobReservation, varJobReservation)
	v.fillFrom(env, keySegment, varSegment)
	v.fillFrom(env, keyTopologyAddr, varTopologyAddr)
	v.fillFrom(env, keyTopologyAddrPattern, varTopologyAddrPattern)

	// The head node is the node of the batch script. A step's tasks run on
	// other nodes too, so there SLURMD_NODENAME names the wrong node.
	if !inStep(env) {
		v.fillFrom(env, keyHeadNodeName, varNodeName)
	}
	if !v.has(keyJobUUID) {
		// The values, not env: as an Env, env would move to the heap.
		job := uuidderive.JobVars{Cluster: env.value(varClusterName), JobID: jobID,
			ArrayJobID: arrayJobID, ArrayTask: array}
		v.put(keyJobUUID, job.UUID().String())
	}
	return warns
}

// inStep reports whether the task belongs to a job step rather than to the
// batch script; see [InStep].
func inStep(env *Vars) bool { return env.InStep() }

// InStep is [InStep] for e, without the interface conversion that would move
// e to the heap on the per-task path, unless [Vars.SetInStep] has fixed
// the answer.
func (e *Vars) InStep() bool {
	switch e.step {
	case stepJobLevel:
		return false
	case stepInStep:
		return true
	}
	id := e.value(varStepID)
	if id == "" {
		id = e.value(varStepIDOld)
	}
	return isStepID(id)
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
func InStep(env uuidderive.Env) bool {
	id, _ := env.Lookup("SLURM_STEP_ID")
	if id == "" {
		id, _ = env.Lookup("SLURM_STEPID")
	}
	return isStepID(id)
}

// maxRegularStepID is the largest id Slurm gives a regular step; the ids
// above it name the batch, extern and interactive steps.
const maxRegularStepID = 0xfffffff0

func isStepID(id string) bool {
	switch id {
	case "", "batch", "extern", "interactive":
		return false
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return n >= 0 && n <= maxRegularStepID
	}
	return true
}

// fill sets key i to value unless it is already set or value is empty.
func (v *slurmValues) fill(i int, value string) {
	if value != "" && !v.has(i) {
		v.put(i, value)
	}
}

// fillFrom fills key i with the first non-empty of the variables vars.
func (v *slurmValues) fillFrom(env *Vars, i int, vars ...int) {
	if !v.has(i) {
		if value, _ := env.firstOf(vars...); value != "" {
			v.put(i, value)
		}
	}
}

// fillInteger fills the integer key i with the first non-empty of the
// variables vars, in canonical form, or with def when they are all unset
// or empty. A value that is not an integer is omitted, with a warning; def
// does not replace it.
func (v *slurmValues) fillInteger(env *Vars, warns []libcarrier.Warning, i int, def string, vars ...int) []libcarrier.Warning {
	if v.has(i) {
		return warns
	}
	value, from := env.firstOf(vars...)
	if value == "" {
		if def != "" {
			v.put(i, def)
		}
		return warns
	}
	canon, ok := canonicalInteger(value)
	if !ok {
		return append(warns, libcarrier.Warning{Key: slurmKeys[i],
			Message: slurmVarNames[from] + "=" + libcarrier.Quote(value) + " is not an integer: omitted"})
	}
	v.put(i, canon)
	return warns
}

// canonicalInteger returns s as a canonical base-10 integer if it is one
// by the rule of [libcarrier.ParseInteger]. A value that is already
// canonical, as Slurm writes them, is returned as it is, without
// allocating.
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
	digits := s
	if digits != "" && digits[0] == '-' {
		digits = digits[1:]
	}
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
