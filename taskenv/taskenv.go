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
	"fmt"
	"strings"

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
	// when SLURM_STEP_ID or SLURM_STEPID is set and non-empty.
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

// Compute returns what the plugin writes into a task whose environment is
// env ("NAME=value" strings, as execve receives them).
//
// Inherited keys outside the Slurm allowlist are kept as they are. For the
// allowlisted keys the result holds exactly the Slurm detector's values.
// A malformed inherited carrier, or one that the canonical format could not
// reproduce without loss, is left untouched: the user's attributes matter
// more than ours.
func Compute(env []string, opts Options) Result {
	vars := detect.EnvList(env)
	inStep := isStep(vars)
	switch opts.Stage {
	case StageBatch:
		if inStep {
			vars = withoutStep(vars)
		}
		inStep = false
	case StageTask:
		inStep = true
	}

	inheritedText, inheritedSet := vars.Lookup(libcarrier.EnvVar)
	inherited, parseWarnings := libcarrier.Parse(inheritedText)
	if len(parseWarnings) > 0 {
		return Result{Warnings: parseWarnings, Reason: fmt.Sprintf(
			"%s is malformed (%s); left as it was", libcarrier.EnvVar, parseWarnings[0])}
	}

	slurm, warnings := detect.SlurmStringsInherited(vars, inherited)
	if len(slurm) == 0 {
		return Result{Warnings: warnings}
	}

	excluded := func(key string) bool {
		for _, e := range opts.Exclude {
			if e == key {
				return true
			}
		}
		return false
	}
	// written reports whether the plugin manages key in this task. An
	// excluded key is left to the user; in the batch step topology would
	// describe the batch node only, yet every later step would inherit it.
	written := func(key string) bool {
		return !excluded(key) && (inStep || !strings.HasPrefix(key, "slurm.topology."))
	}

	// Merge in place: the parsed map is ours. Track whether anything
	// differs so that an unchanged carrier is left byte for byte.
	changed := false
	for key := range inherited {
		if !detect.IsSlurmKey(key) || excluded(key) {
			continue
		}
		if _, ok := slurm[key]; !ok || !written(key) {
			delete(inherited, key)
			changed = true
		}
	}
	for key, value := range slurm {
		if !written(key) {
			continue
		}
		if old, ok := inherited[key]; !ok || old != value {
			inherited[key] = value
			changed = true
		}
	}
	if !changed {
		return Result{Warnings: warnings}
	}

	value, formatWarnings := libcarrier.FormatStrings(inherited)
	warnings = append(warnings, formatWarnings...)
	// Canonical values never hold a raw comma, so the entry count tells
	// whether the format had to drop something (a key or value it cannot
	// encode). Dropping a user's attribute is worse than writing none.
	if entries(value) != len(inherited) {
		return Result{Warnings: warnings, Reason: fmt.Sprintf(
			"%s holds an entry that cannot be written back without loss (%s); left as it was",
			libcarrier.EnvVar, firstWarning(formatWarnings))}
	}
	if reason := tooLarge(env, inheritedText, inheritedSet, value, opts.MaxEnvBytes); reason != "" {
		return Result{Warnings: warnings, Reason: reason}
	}
	return Result{Value: value, Changed: true, Warnings: warnings}
}

func isStep(vars detect.EnvMap) bool {
	for _, name := range stepVars {
		if v, ok := vars.Lookup(name); ok && v != "" {
			return true
		}
	}
	return false
}

// withoutStep returns a copy of vars without the step markers.
func withoutStep(vars detect.EnvMap) detect.EnvMap {
	copied := make(detect.EnvMap, len(vars))
	for k, v := range vars {
		copied[k] = v
	}
	for _, name := range stepVars {
		delete(copied, name)
	}
	return copied
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
		return fmt.Sprintf("%s would be %d bytes, over the kernel's %d-byte limit for one variable; left as it was",
			libcarrier.EnvVar, entry, MaxArgStrlen)
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
		return fmt.Sprintf("the task environment would be %d bytes, over the %d-byte execve budget; %s left as it was",
			total, maxEnvBytes, libcarrier.EnvVar)
	}
	return ""
}
