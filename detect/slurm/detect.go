package slurm

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// Strings returns the Slurm identity of the task whose environment is env,
// with every value a string (integers in canonical base 10), and warnings
// for the values it had to leave out.
//
// Values inherited through the allowlisted keys of env's
// OTEL_RESOURCE_ATTRIBUTES (see [IsKey]) win; an empty inherited value is
// ignored, and an inherited integer key whose value is not an integer is
// discarded with a warning. Values derived from the SLURM_* variables fill
// the remaining keys, but only when SLURM_JOB_ID is non-empty.
// nv.dl.job.uuid is derived from the raw variables alone (see
// [uuidderive.JobUUID]); nv.dl.run.uuid is only ever inherited. The result
// is empty, never nil, when there is neither a job nor an inherited key.
//
// Entries of the carrier that cannot be parsed are ignored here without a
// warning: they concern the whole carrier, which its reader reports.
//
// Strings is [Task.AppendStrings], the one detection, over the variables
// of env that a [Vars] holds and the entries of its carrier.
func Strings(env environ.Env) (map[string]string, []libcarrier.Warning) {
	return detectStrings(env, false)
}

// detectStrings is [Strings], with the rank keys when ranks is set.
func detectStrings(env environ.Env, ranks bool) (map[string]string, []libcarrier.Warning) {
	t := Task{Vars: varsOf(env), Ranks: ranks}
	var in [32]libcarrier.KeyValue
	inherited, _ := libcarrier.AppendParse(in[:0], t.Vars.value(varCarrier))
	var out [NumKeys]libcarrier.KeyValue
	kvs, warns := t.AppendStrings(out[:0], inherited)
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m, warns
}

// Detect is [Strings] with the integer keys ([libcarrier.IsIntegerKey],
// such as slurm.ntasks and slurm.task.id) as int64 values; every other
// value is a string.
func Detect(env environ.Env) (map[string]any, []libcarrier.Warning) {
	s, warns := Strings(env)
	out := make(map[string]any, len(s))
	for k, v := range s {
		if libcarrier.IsIntegerKey(k) {
			// Strings only returns valid integers for these keys.
			n, _ := libcarrier.ParseInteger(v)
			out[k] = n
			continue
		}
		out[k] = v
	}
	return out, warns
}

// Task is the detection of one task for the per-task path: its variables
// and the values detected, about 900 bytes. Fill Vars with
// [Vars.ReadList], then call [Task.AppendStrings].
type Task struct {
	Vars Vars
	// Ranks asks for the rank keys too (nv.dl.rank, nv.dl.world_size,
	// nv.dl.local_rank: the plugin's --otel-rank and rank=on).
	Ranks  bool
	values values
}

// Manages reports whether key is one of the keys t writes and reads from an
// inherited carrier: [IsKey], and the rank keys when t.Ranks is set.
func (t *Task) Manages(key string) bool {
	return IsKey(key) || t.Ranks && IsRankKey(key)
}

// AppendStrings is [Strings] for t.Vars with the inherited carrier and the
// result in slices. It appends the result to dst sorted by key, and returns
// the extended slice and the warnings. inherited holds the entries of the
// task's OTEL_RESOURCE_ATTRIBUTES as the caller has parsed (and perhaps
// repaired) them with [libcarrier.AppendParse], so that the carrier is not
// parsed twice per task; the carrier in t.Vars is not read. When a key
// occurs more than once, its last entry counts, as in a map built in order.
// inherited is only read.
//
// With a dst of enough capacity ([NumKeys] entries), only a derived
// nv.dl.job.uuid or slurm.job.id of an array element, and the warnings,
// allocate.
func (t *Task) AppendStrings(dst, inherited []libcarrier.KeyValue) ([]libcarrier.KeyValue, []libcarrier.Warning) {
	v := &t.values
	*v = values{}
	var warns []libcarrier.Warning
	var seen keySet // the last entry of each allowlisted key that was read
	if other, ok := otherJob(inherited, t.Vars.value(varJobID)); ok {
		// A carrier of another job (one this job was submitted from, with
		// sbatch, salloc or srun --jobid) names that job: none of its
		// Slurm keys is this job's. The user's own keys stay (merge).
		warns = append(warns, libcarrier.Warning{Key: "slurm.job.id.raw",
			Message: "inherited attributes are job " + libcarrier.Quote(other) + "'s, not this job's: its Slurm keys are replaced"})
		inherited = nil
	}
	for n := len(inherited) - 1; n >= 0; n-- {
		kv := inherited[n]
		if i := keyIndex(kv.Key); i >= 0 && !seen.has(i) {
			seen.add(i)
			warns = v.inherit(kv.Key, kv.Value, warns)
		}
	}
	warns = v.derive(&t.Vars, t.Ranks, warns)
	// By index: ranging over the array by value would copy it to the stack.
	for i := range v.value {
		if v.has(i) {
			dst = append(dst, libcarrier.KeyValue{Key: rules[i].key, Value: v.value[i]})
		}
	}
	return dst, warns
}

// otherJob reports whether the inherited carrier describes another job
// than jobID, and which: its last slurm.job.id.raw is set and is not
// jobID. Every task of a job sees the job's own SLURM_JOB_ID, the steps of
// an array element and all components of a heterogeneous job included
// (the leader's), so within one job the two agree.
func otherJob(inherited []libcarrier.KeyValue, jobID string) (string, bool) {
	if jobID == "" {
		return "", false
	}
	for n := len(inherited) - 1; n >= 0; n-- {
		if inherited[n].Key == "slurm.job.id.raw" {
			raw := inherited[n].Value
			return raw, raw != "" && raw != jobID
		}
	}
	return "", false
}

// values are the values of a detection by allowlist index.
type values struct {
	value [NumKeys]string
	set   keySet // the i with value[i] set
}

func (v *values) has(i int) bool { return v.set.has(i) }

func (v *values) put(i int, value string) {
	v.value[i] = value
	v.set.add(i)
}

// keySet is a set of allowlist indexes, one bit each: no cap on the
// allowlist's size, and no allocation.
type keySet [(NumKeys + 63) / 64]uint64

func (s *keySet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

func (s *keySet) add(i int) { s[i/64] |= 1 << (i % 64) }

// inherit records the inherited value of key, if key is allowlisted and
// value usable, and returns warns with a warning for an inherited integer
// key that is not an integer.
func (v *values) inherit(key, value string, warns []libcarrier.Warning) []libcarrier.Warning {
	i := keyIndex(key)
	if i < 0 || value == "" || rules[i].level == keys.LevelTask {
		return warns
	}
	if libcarrier.IsIntegerKey(key) {
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

// derive completes v, which holds the usable inherited values, with the
// values derived from env when it has a job, and returns warns, with the
// warnings of the derivation added, ordered by key.
//
// Values are computed only for the keys still missing, so a local value
// that an inherited one replaces costs nothing and warns about nothing. The
// detector reads env by variable index, never by name, so it cannot read a
// variable that a Vars does not hold.
func (v *values) derive(env *Vars, ranks bool, warns []libcarrier.Warning) []libcarrier.Warning {
	if env.value(varJobID) != "" {
		warns = v.deriveLocal(env, ranks, warns)
	}
	// Stable: a key's inherited warning stays before its local one.
	slices.SortStableFunc(warns, func(a, b libcarrier.Warning) int { return cmp.Compare(a.Key, b.Key) })
	return warns
}

// deriveLocal fills the keys of v still missing by their rules: those of
// the task's level, the rank keys only when ranks are asked for.
func (v *values) deriveLocal(env *Vars, ranks bool, warns []libcarrier.Warning) []libcarrier.Warning {
	inStep := env.InStep()
	for i := range rules {
		r := &rules[i]
		if v.has(i) || r.level == keys.LevelJobContext && inStep || r.level == keys.LevelTask && !inStep || r.rank && !ranks {
			continue
		}
		if r.derive != nil {
			if value := r.derive(env); value != "" {
				v.put(i, value)
			}
			continue
		}
		value, from := env.firstOf(ruleVars[i])
		switch {
		case value == "":
			if r.unset != "" {
				v.put(i, r.unset)
			}
		case libcarrier.IsIntegerKey(r.key):
			canon, ok := canonicalInteger(value)
			if !ok {
				warns = append(warns, libcarrier.Warning{Key: r.key,
					Message: varNames[from] + "=" + libcarrier.Quote(value) + " is not an integer: omitted"})
				continue
			}
			v.put(i, canon)
		default:
			v.put(i, value)
		}
	}
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
