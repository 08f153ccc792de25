// Package taskenv computes the value that spank-otel writes into one Slurm
// task's OTEL_RESOURCE_ATTRIBUTES. The SPANK plugin (through the c-shared
// library) and the spank-otel command both call Compute, so what an admin
// sees from the command is what the plugin does.
//
// The data path is: the task's environment in, the Slurm detector, the merge
// with the inherited carrier, the canonical format, the execve size check,
// and the value out.
package taskenv

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spank-otel/spank-otel/internal/carrier"
	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// MaxArgStrlen is the kernel's limit on one argument or environment string
// given to execve, its terminating NUL included (MAX_ARG_STRLEN on Linux).
const MaxArgStrlen = 32 * 4096

// Stage says which kind of Slurm step a task belongs to.
type Stage int

const (
	// StageAuto takes the stage from the environment: a task is in a step
	// when SLURM_STEP_ID or SLURM_STEPID names a regular step (see
	// detect.InStep).
	StageAuto Stage = iota
	// StageBatch treats the task as the batch script: topology is not
	// written, the head node is.
	StageBatch
	// StageTask treats the task as a task of a job step: topology is
	// written, the head node is not.
	StageTask
)

// Options adjust Compute. The zero value is what the plugin does by default,
// without the total-size check.
type Options struct {
	// Exclude lists keys that are never written. An inherited value of an
	// excluded key is kept as the user's own attribute.
	Exclude []string
	// MaxEnvBytes is the execve budget for the whole environment: the bytes
	// of every "NAME=value" string with its NUL plus one pointer each.
	// Zero or less disables the total check; the per-variable limit
	// (MaxArgStrlen) always applies.
	MaxEnvBytes int
	// Stage overrides how the task's step is recognised.
	Stage Stage
}

// Result is what Compute decided for one task.
type Result struct {
	// Value is the canonical carrier to write. It is only meaningful when
	// Changed is true.
	Value string
	// Changed is true when the variable must be set to Value. When false,
	// the variable is left exactly as it was: unset stays unset.
	Changed bool
	// Warnings are details worth a verbose log line: dropped inherited
	// integers and the like. They never stop the write.
	Warnings []libcarrier.Warning
	// Reason, when not empty, says why the variable was left alone although
	// there was something to write. The task keeps its old value; a user
	// would want to know this.
	Reason string
}

// stepVars are the variables by which Slurm marks a task as part of a step.
var stepVars = [...]string{"SLURM_STEP_ID", "SLURM_STEPID"}

// Capacities of the per-task buffers: a realistic task fits, so that
// nothing but the result allocates; a larger one still works.
const (
	inheritedBuf = 48 // entries of the inherited carrier
	slurmBuf     = 23 // the whole Slurm allowlist
	carrierBuf   = 64 // entries written
)

// Compute returns what the plugin writes into a task whose environment is
// env ("NAME=value" strings, as execve receives them).
//
// Inherited keys outside the Slurm allowlist are kept as they are. For the
// allowlisted keys the result holds exactly the Slurm detector's values.
// A malformed inherited carrier, or one that the canonical format could not
// reproduce without loss, is left untouched: the user's attributes matter
// more than ours.
func Compute(env []string, opts Options) Result {
	// Only the variables the Slurm detector reads are looked at, in one
	// pass over env: no map of the whole environment is built.
	vars := detect.SlurmEnvList(env)
	inStep := vars.InStep()
	switch opts.Stage {
	case StageBatch:
		if inStep {
			vars = detect.SlurmEnvList(withoutStep(env))
		}
		inStep = false
	case StageTask:
		inStep = true
	}

	inheritedText, inheritedSet := vars.Lookup(libcarrier.EnvVar)
	var ibuf [inheritedBuf]carrier.KeyValue
	inherited, parseWarnings := carrier.AppendParse(ibuf[:0], inheritedText)
	if len(parseWarnings) > 0 {
		return Result{Warnings: parseWarnings, Reason: libcarrier.EnvVar +
			" is malformed (" + parseWarnings[0].String() + "); left as it was"}
	}

	var sbuf [slurmBuf]carrier.KeyValue
	slurm, warnings := detect.AppendSlurmStrings(sbuf[:0], &vars, inherited)
	if len(slurm) == 0 {
		return Result{Warnings: warnings}
	}

	var cbuf [carrierBuf]carrier.KeyValue
	out, changed := merge(cbuf[:0], inherited, slurm, opts.Exclude, inStep)
	if !changed {
		return Result{Warnings: warnings}
	}

	value, formatWarnings := carrier.FormatList(out)
	warnings = append(warnings, formatWarnings...)
	// Canonical values never hold a raw comma, so the entry count tells
	// whether the format had to drop something (a key or value it cannot
	// encode). Dropping a user's attribute is worse than writing none.
	if entries(value) != len(out) {
		return Result{Warnings: warnings, Reason: libcarrier.EnvVar +
			" holds an entry that cannot be written back without loss (" +
			firstWarning(formatWarnings) + "); left as it was"}
	}
	if reason := tooLarge(env, inheritedText, inheritedSet, value, opts.MaxEnvBytes); reason != "" {
		return Result{Warnings: warnings, Reason: reason}
	}
	return Result{Value: value, Changed: true, Warnings: warnings}
}

// merge appends to dst the carrier to write: the inherited entries, with
// the allowlisted keys that the plugin manages holding exactly the Slurm
// detector's values. It reports whether that differs from inherited.
// inherited and slurm are sorted by key with distinct keys, and so is the
// result.
//
// An excluded key is left to the user. In the batch step topology would
// describe the batch node only, yet every later step would inherit it, so
// it is not written there.
func merge(dst, inherited, slurm []carrier.KeyValue, exclude []string, inStep bool) ([]carrier.KeyValue, bool) {
	written := func(key string) bool {
		return !slices.Contains(exclude, key) && (inStep || !strings.HasPrefix(key, "slurm.topology."))
	}
	changed := false
	i, j := 0, 0
	for i < len(inherited) || j < len(slurm) {
		// order < 0: the next key is only inherited; > 0: only detected;
		// 0: both.
		order := -1
		switch {
		case i == len(inherited):
			order = 1
		case j < len(slurm):
			order = strings.Compare(inherited[i].Key, slurm[j].Key)
		}
		switch {
		case order < 0:
			// An allowlisted key that the detector did not confirm is
			// removed, unless it is excluded and so the user's.
			kv := inherited[i]
			i++
			if detect.IsSlurmKey(kv.Key) && !slices.Contains(exclude, kv.Key) {
				changed = true
			} else {
				dst = append(dst, kv)
			}
		case order > 0:
			kv := slurm[j]
			j++
			if written(kv.Key) {
				dst = append(dst, kv)
				changed = true
			}
		default:
			// Both: the user's value when excluded, else the detector's
			// when written here, else none.
			old, kv := inherited[i], slurm[j]
			i, j = i+1, j+1
			switch {
			case slices.Contains(exclude, kv.Key):
				dst = append(dst, old)
			case written(kv.Key):
				dst = append(dst, kv)
				changed = changed || old.Value != kv.Value
			default:
				changed = true
			}
		}
	}
	return dst, changed
}

// withoutStep returns a copy of env without the step markers, for a task
// of a step that is to be treated as the batch script.
func withoutStep(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(stepVars[:], name)
	})
}

func entries(value string) int {
	if value == "" {
		return 0
	}
	return strings.Count(value, ",") + 1
}

func firstWarning(ws []libcarrier.Warning) string {
	if len(ws) == 0 {
		return "unknown entry"
	}
	return ws[0].String()
}

// tooLarge reports why writing value would make the task's execve fail, or
// "" when it fits.
func tooLarge(env []string, oldValue string, oldSet bool, value string, maxEnvBytes int) string {
	entry := len(libcarrier.EnvVar) + 1 + len(value) + 1
	if entry > MaxArgStrlen {
		return libcarrier.EnvVar + " would be " + strconv.Itoa(entry) + " bytes, over the kernel's " +
			strconv.Itoa(MaxArgStrlen) + "-byte limit for one variable; left as it was"
	}
	if maxEnvBytes <= 0 {
		return ""
	}
	const pointer = 8
	total := 0
	for _, kv := range env {
		total += len(kv) + 1 + pointer
	}
	if oldSet {
		total -= len(libcarrier.EnvVar) + 1 + len(oldValue) + 1 + pointer
	}
	total += entry + pointer
	if total > maxEnvBytes {
		return "the task environment would be " + strconv.Itoa(total) + " bytes, over the " +
			strconv.Itoa(maxEnvBytes) + "-byte execve budget; " + libcarrier.EnvVar + " left as it was"
	}
	return ""
}
