// Package taskenv computes the value that spank-otel writes into one Slurm
// task's OTEL_RESOURCE_ATTRIBUTES. The SPANK plugin (through the c-shared
// library) and the spank-otel command both call Run, so what an admin
// sees from the command is what the plugin does.
//
// The task path is Run's stages, in order: read the task (its variables,
// in one pass over its environment, and its inherited carrier), detect
// Slurm, find the GPUs (from the same variables), merge with the inherited
// carrier, format it canonically, and check its size against execve's
// limits.
//
// The plugin calls Run from C, where a goroutine starts on a 4 KB stack,
// and a path that outgrows it makes the runtime move the stack, which in
// the plugin's new helper process costs more than the computation
// (docs/performance.md). So every stage keeps its state in the heap
// scratch of one Run, and the stages are separate, not inlined, calls
// from shallow frames. cgo's TestTaskPathStack measures the deepest
// paths and fails when one does not fit.
package taskenv

//go:generate go test -run TestContractGenerated -update .

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/internal/strs"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// Stage says which kind of Slurm step a task belongs to. One decision
// drives both stage-dependent keys: the head node is written only at the
// job level, the topology only in a step.
type Stage int

const (
	// StageAuto takes the stage from the environment: a task is in a step
	// when SLURM_STEP_ID or SLURM_STEPID names a regular step (see
	// slurm.Vars.InStep); the batch script and Slurm's other special steps
	// are at the job level.
	StageAuto Stage = iota
	// StageBatch treats the task as the batch script: the head node is
	// written, the topology is not.
	StageBatch
	// StageTask treats the task as a task of a job step: the topology is
	// written, the head node is not (an inherited one is kept).
	StageTask
)

// Options adjust Run. The zero value is what the plugin does by default,
// without the total-size check.
type Options struct {
	// Exclude lists keys that are never written ("prefix.*": every key
	// that starts with "prefix."). An inherited value of an
	// excluded key is kept as the user's own attribute.
	Exclude []string
	// MaxEnvBytes, when above zero, is the execve budget for the whole
	// environment: the bytes of every "NAME=value" string with its NUL
	// plus one pointer each. Otherwise the budget is computed from Exec.
	// The per-variable limit (MaxArgStrlen) always applies.
	MaxEnvBytes int
	// Exec describes the execve the task makes next, for the budget when
	// MaxEnvBytes is not set; its zero value skips the total check.
	Exec Exec
	// Step, when set, is the task's step as Slurm numbers it (the
	// plugin's S_JOB_STEPID): it decides the task's level and
	// slurm.step.id, and Stage is not used.
	Step *uint32
	// Stage overrides how the task's step is recognised when Step is not
	// set.
	Stage Stage
	// Ranks also writes the rank keys (nv.dl.rank, nv.dl.world_size,
	// nv.dl.local_rank) in a step's tasks: the plugin's --otel-rank and
	// rank=on. Without it they are the user's own keys.
	Ranks bool
}

// budget is the execve budget opts give, 0 for no total check.
func (opts *Options) budget() int {
	if opts.MaxEnvBytes > 0 {
		return opts.MaxEnvBytes
	}
	if opts.Exec.StackLimit == 0 {
		return 0
	}
	return ExecBudget(opts.Exec)
}

// Result is what Run decided for one task.
//
// Its warnings are libcarrier.Warning values.
type Result struct {
	// Value is the canonical carrier to write. It is only meaningful when
	// Changed is true.
	Value string
	// Changed is true when the variable must be set to Value, or unset
	// when Unset is true. When false, the variable is left exactly as it
	// was: unset stays unset.
	Changed bool
	// Unset is true when the variable must be removed: every inherited
	// entry was one that Run removes, and an empty variable would
	// still be a variable. Changed is then true and Value empty.
	Unset bool
	// Dropped has one warning per entry that could not be written: an
	// inherited entry that the carrier format drops (no '=', an empty or
	// invalid key, a value that is not valid UTF-8), and a Slurm value that
	// is not valid UTF-8. The rest is written all the same; a user would
	// want to know what was lost.
	Dropped []libcarrier.Warning
	// Warnings are details worth a verbose log line: dropped inherited
	// integers and the like. They never stop the write.
	Warnings []libcarrier.Warning
	// Debug are details for a debug log line only: why a task that names
	// GPUs gets no GPU keys (package gpu), which on a node whose GPUs
	// cannot be told is every such task.
	Debug []libcarrier.Warning
	// Reason, when not empty, says why the variable was left alone although
	// there was something to write. The task keeps its old value; a user
	// would want to know this.
	Reason string
}

// scratch holds the fixed-size state of one Run: the task's Slurm
// variables, the detected values, and room for the entry lists and the
// strings built, in one heap allocation; only the pages written are
// touched. The plugin calls Run once, in a new process, from C, and
// both other places cost more there (docs/performance.md has the figures):
//   - on the stack: the package's stack rule;
//   - in one allocation per list or string: each size of allocation takes
//     a new heap span, on pages the process has never touched.
//
// The lists grow on the heap by append past this room: a hostile carrier
// with thousands of entries costs only its own allocations.
type scratch struct {
	// The small fields first, on a page written anyway: after text they
	// would take a page of their own, a fault in a new process.
	result Result // Run's
	// state is what each stage of Run hands the next.
	state struct {
		text                     libcarrier.Buffer // writes into text
		oldValue                 string            // the inherited carrier
		oldSet, repair           bool              // set; repaired
		inherited, detected, out []libcarrier.KeyValue
		value                    string // the carrier formatted, in text
		dropped, warnings, debug []libcarrier.Warning
	}
	task      slurm.Task
	detected  [numKeys]libcarrier.KeyValue
	inherited [inheritedRoom]libcarrier.KeyValue
	out       [inheritedRoom + numKeys]libcarrier.KeyValue
	// text holds the decoded inherited values and then the result.
	text [textRoom]byte
}

// numKeys is how many keys Run writes at most: the Slurm detector's
// and the two GPU keys.
const numKeys = slurm.NumKeys + 2

// inheritedRoom is the room made for a carrier's entries: the canonical
// carrier of a step task has about 25, and users add a few.
const inheritedRoom = 32

// textRoom is the room made for the strings Run builds: the carrier
// of a step task with a 25-key inherited one is about 1.7 KB, and its
// decoded values a few hundred bytes.
const textRoom = 4096

// newScratch returns a new scratch on the heap. Left to itself, the
// compiler would put it on the stack, which it does not fit.
//
//go:noinline
func newScratch() *scratch { return new(scratch) }

// Request is one task's question to the task path.
type Request struct {
	// Env is the task's environment, "NAME=value" strings as execve
	// receives them.
	Env []string
	// Node reads the node's files for the GPU search (gpu.Root("/") in
	// the plugin, over the step parent's records); nil searches nothing.
	Node gpu.FS
	// Options are the plugin's options and the task's figures.
	Options Options
}

// Run returns what the plugin writes into the task of req: the value of
// OTEL_RESOURCE_ATTRIBUTES, or why the variable is left as it is.
//
// Inherited keys outside the Slurm allowlist are kept as they are. For the
// allowlisted keys the result holds exactly the Slurm detector's values.
// A malformed inherited carrier is repaired, not kept: the entries that
// the carrier format drops are dropped (see Result.Dropped) and the rest is
// written with the identity. The Java and JavaScript SDKs discard the whole
// variable on one bad entry, so a carrier left malformed would give them
// nothing, the user's own attributes included. A Slurm variable that is
// not valid UTF-8 costs only its own key.
//
// The variable is left alone when nothing would change (outside Slurm,
// always) and when the result would not fit execve. The Result lives in
// the call's scratch; Run keeps no reference to req.
//
// Run is the task path's stages in order, each a call from this shallow
// frame that keeps what it hands on in the scratch (the package's stack
// rule): it reads the task, detects Slurm, finds the GPUs, merges, formats
// and checks the size. A stage takes at most req, so that Run's frame,
// below the GPU search's, holds no more than two pointers.
//
//go:noinline
func Run(req *Request) *Result {
	return newScratch().run(req)
}

// A Runner runs the task path for one task after another in the same
// memory: a process that answers many tasks (the step's helper) then
// touches no new pages for the scratch of each call, and a new page costs
// a fault (tens of microseconds in a virtual machine). The Result of Run
// is valid until the next Run. The zero Runner is ready to use; a Runner
// is not for concurrent use.
type Runner struct {
	sc *scratch
}

// Run is the package's Run in r's memory.
//
//go:noinline
func (r *Runner) Run(req *Request) *Result {
	if r.sc == nil {
		r.sc = newScratch()
	} else {
		*r.sc = scratch{}
	}
	return r.sc.run(req)
}

// run is Run's stages on sc, which is zero.
//
//go:noinline
func (sc *scratch) run(req *Request) *Result {
	sc.readTask(req)
	sc.detectSlurm()
	sc.findGPUs(req)
	if sc.mergeCarrier(req) {
		sc.formatCarrier()
		sc.checkSize(req)
	}
	return &sc.result
}

// Compute is Run for a task whose GPUs are not searched for (a Request
// without Node): what the tests and doctor's job check ask.
func Compute(env []string, opts Options) Result {
	return *Run(&Request{Env: env, Options: opts})
}

// readTask reads the task's variables from its environment, in the one
// pass over it (no map of the whole environment is built): the Vars that
// the Slurm detector and the GPU search both read. It fixes the task's
// step as the options say and parses the inherited carrier, repaired.
//
//go:noinline
func (sc *scratch) readTask(req *Request) {
	vars, st, opts := &sc.task.Vars, &sc.state, &req.Options
	vars.ReadList(req.Env)
	sc.task.Ranks = opts.Ranks
	switch {
	case opts.Step != nil:
		vars.SetStep(*opts.Step)
	case opts.Stage == StageBatch:
		vars.SetInStep(false)
	case opts.Stage == StageTask:
		vars.SetInStep(true)
	}
	st.oldValue, st.oldSet = vars.Lookup(libcarrier.EnvVar)
	st.text.Use(sc.text[:0])
	inherited, dropped := st.text.AppendParse(sc.inherited[:0], st.oldValue)
	inherited, repaired := libcarrier.Repair(inherited)
	st.inherited, st.dropped = inherited, append(dropped, repaired...)
	st.repair = len(st.dropped) > 0
}

// detectSlurm finds the Slurm detector's keys to write, with its warnings.
//
//go:noinline
func (sc *scratch) detectSlurm() {
	st := &sc.state
	st.detected, st.warnings = sc.task.AppendStrings(sc.detected[:0], st.inherited)
}

// findGPUs finds the GPUs Slurm gave the task, on the node whose files
// req.Node reads (nil: none searched), and adds their keys to the detected
// ones in a step's task, with the search's notes. The search reads the
// task's Vars, which readTask filled; it reads no file when the task
// names no GPUs (neither CUDA_VISIBLE_DEVICES nor SLURM_STEP_GPUS set and
// non-empty). A stage of its own, called from Run's shallow frame, so that
// the search's system calls fit the stack of a call from C.
//
//go:noinline
func (sc *scratch) findGPUs(req *Request) {
	if req.Node == nil {
		return
	}
	st := &sc.state
	uuids, debug := gpu.Find(&sc.task.Vars, req.Node)
	// The GPU keys are a step task's own (docs/spec.md, section 3).
	// Outside a step the task's GPUs are not asked for: no note either.
	if sc.task.Vars.InStep() {
		st.debug = debug
		st.detected = appendGPUs(st.detected, uuids)
	}
}

// mergeCarrier merges the detected keys into the inherited carrier and
// reports whether the result is to be formatted. Otherwise it sets
// sc.result: the carrier is not Slurm's to write, or it stays as it was.
//
//go:noinline
func (sc *scratch) mergeCarrier(req *Request) bool {
	st := &sc.state
	if !sc.slurmsCarrier() {
		// Outside Slurm there is no identity to write, so no reason to
		// touch the user's carrier, malformed or not. An inherited Slurm
		// key still makes it Slurm's: a task's key, which the detector
		// never confirms outside a step, is removed.
		sc.result = Result{Warnings: st.warnings, Debug: st.debug}
		return false
	}
	detected, unwritable := libcarrier.Repair(st.detected)
	st.dropped = append(st.dropped, unwritable...)
	var changed bool
	st.out, changed = merge(sc.out[:0], st.inherited, detected, req.Options.Exclude, &sc.task)
	if !changed && !st.repair {
		sc.result = Result{Warnings: st.warnings, Dropped: st.dropped, Debug: st.debug}
		return false
	}
	return true
}

// slurmsCarrier reports whether the carrier is Slurm's to write: a key
// was detected, the Slurm detector's or a GPU key, or an inherited key is
// one Run manages.
func (sc *scratch) slurmsCarrier() bool {
	st := &sc.state
	return len(st.detected) > 0 || slices.ContainsFunc(st.inherited, func(kv libcarrier.KeyValue) bool { return manages(&sc.task, kv.Key) })
}

// formatCarrier formats the merged carrier in its canonical form.
//
//go:noinline
func (sc *scratch) formatCarrier() {
	st := &sc.state
	// Inherited and Slurm entries are repaired, so nothing is dropped here;
	// the warnings are about long values, which are written.
	var formatWarnings []libcarrier.Warning
	st.value, formatWarnings = st.text.FormatList(st.out)
	st.warnings = append(st.warnings, formatWarnings...)
}

// checkSize sets sc.result to the formatted carrier, unless it would not
// fit the task's execve (fitResult).
//
//go:noinline
func (sc *scratch) checkSize(req *Request) {
	st := &sc.state
	sc.result = fitResult(req.Env, st.oldValue, st.oldSet, st.value, req.Options.budget(), st.warnings, st.dropped, st.debug)
}

// excluded reports whether exclude names key: itself, or an entry
// "prefix.*" names every key that starts with "prefix." (nv.gpu.*: every
// GPU key, however many GPUs).
func excluded(exclude []string, key string) bool {
	for _, e := range exclude {
		if e == key || len(e) > 1 && e[len(e)-1] == '*' && e[len(e)-2] == '.' && strs.HasPrefix(key, e[:len(e)-1]) {
			return true
		}
	}
	return false
}

// manages reports whether key is one of the keys Run writes for task,
// and so never keeps from an inherited carrier unless excluded: the Slurm
// detector's and the GPU keys.
func manages(task *slurm.Task, key string) bool {
	return task.Manages(key) || gpu.IsKey(key)
}

// appendGPUs adds the GPU keys of uuids to detected, which is sorted by
// key and stays so.
func appendGPUs(detected []libcarrier.KeyValue, uuids []string) []libcarrier.KeyValue {
	for _, kv := range gpu.Keys(uuids) {
		at, _ := slices.BinarySearchFunc(detected, kv.Key, func(d libcarrier.KeyValue, key string) int {
			return cmp.Compare(d.Key, key)
		})
		detected = slices.Insert(detected, at, kv)
	}
	return detected
}

// fitResult is the Result for a task of environment env whose carrier,
// set or not (oldSet) to oldValue, changes to value: unset when value is
// empty, left as it was when value would not fit execve.
func fitResult(env []string, oldValue string, oldSet bool, value string, maxEnvBytes int, warnings, dropped, debug []libcarrier.Warning) Result {
	if value == "" {
		return Result{Changed: true, Unset: true, Warnings: warnings, Dropped: dropped, Debug: debug}
	}
	if reason := tooLarge(env, oldValue, oldSet, value, maxEnvBytes); reason != "" {
		return Result{Warnings: warnings, Dropped: dropped, Reason: reason, Debug: debug}
	}
	return Result{Value: value, Changed: true, Warnings: warnings, Dropped: dropped, Debug: debug}
}

// merge appends to dst the carrier to write: the inherited entries, with
// the keys that task manages holding exactly the Slurm detector's values. It reports whether that differs from inherited.
// inherited and detected are sorted by key with distinct keys, and so is the
// result.
//
// An excluded key is left to the user. Where each key is written (the
// job's keys everywhere, the task's only in a step) is the detector's
// decision, by its rules table.
func merge(dst, inherited, detected []libcarrier.KeyValue, exclude []string, task *slurm.Task) ([]libcarrier.KeyValue, bool) {
	written := func(key string) bool { return !excluded(exclude, key) }
	changed := false
	i, j := 0, 0
	for i < len(inherited) || j < len(detected) {
		// order < 0: the next key is only inherited; > 0: only detected;
		// 0: both.
		order := -1
		switch {
		case i == len(inherited):
			order = 1
		case j < len(detected):
			order = cmp.Compare(inherited[i].Key, detected[j].Key)
		}
		switch {
		case order < 0:
			// An allowlisted key that the detector did not confirm is
			// removed, unless it is excluded and so the user's.
			kv := inherited[i]
			i++
			if manages(task, kv.Key) && !excluded(exclude, kv.Key) {
				changed = true
			} else {
				dst = append(dst, kv)
			}
		case order > 0:
			kv := detected[j]
			j++
			if written(kv.Key) {
				dst = append(dst, kv)
				changed = true
			}
		default:
			// Both: the user's value when excluded, else the detector's
			// when written here, else none.
			old, kv := inherited[i], detected[j]
			i, j = i+1, j+1
			switch {
			case excluded(exclude, kv.Key):
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

// pointerBytes is the size of one envp pointer, which execve counts too.
const pointerBytes = 8

// entryBytes is what one "NAME=value" string costs execve: its bytes, its
// NUL and its pointer.
func entryBytes(nameValue int) int { return nameValue + 1 + pointerBytes }

// tooLarge reports why writing value would make the task's execve fail, or
// "" when it fits.
func tooLarge(env []string, oldValue string, oldSet bool, value string, maxEnvBytes int) string {
	entry := len(libcarrier.EnvVar) + 1 + len(value) + 1
	if entry >= MaxArgStrlen {
		return libcarrier.EnvVar + " would be " + strconv.Itoa(entry) + " bytes with its name and NUL, not under the " +
			strconv.Itoa(MaxArgStrlen) + "-byte limit for one variable; left as it was"
	}
	if maxEnvBytes <= 0 {
		return ""
	}
	total := 0
	for _, kv := range env {
		total += entryBytes(len(kv))
	}
	if oldSet {
		total -= entryBytes(len(libcarrier.EnvVar) + 1 + len(oldValue))
	}
	total += entryBytes(len(libcarrier.EnvVar) + 1 + len(value))
	if total > maxEnvBytes {
		return "the task environment would be " + strconv.Itoa(total) + " bytes, over the " +
			strconv.Itoa(maxEnvBytes) + "-byte execve budget; " + libcarrier.EnvVar + " left as it was"
	}
	return ""
}

// Exec describes the execve a task makes next, which bounds its
// environment: the RLIMIT_STACK soft limit it runs under and its
// arguments.
type Exec struct {
	// StackLimit is the soft limit in bytes, ^uint64(0) (RLIM_INFINITY)
	// for none; 0 means unknown.
	StackLimit uint64
	// ArgCount and ArgBytes are the arguments: how many, and their bytes
	// with their NULs.
	ArgCount, ArgBytes int
}

// ExecOf returns the Exec of argv under the stack limit stack.
func ExecOf(stack uint64, argv []string) Exec {
	e := Exec{StackLimit: stack, ArgCount: len(argv)}
	for _, arg := range argv {
		e.ArgBytes += len(arg) + 1
	}
	return e
}

// ExecBudget returns the bytes the environment of e may take (see
// [Options.MaxEnvBytes]): a quarter of the stack limit, within
// ExecArgFloor and ExecArgCeiling (the kernel's rule, fs/exec.c), minus the
// argument strings, one pointer per argument (at least one) and ExecSlack.
// It is never below 1, so that a full budget still means a check. This is
// the one computation of it: the plugin's shim sends the inputs.
func ExecBudget(e Exec) int {
	limit := uint64(ExecArgCeiling)
	if e.StackLimit/4 < limit {
		limit = e.StackLimit / 4
	}
	limit = max(limit, ExecArgFloor)
	used := uint64(max(e.ArgCount, 1)*pointerBytes+ExecSlack) + uint64(max(e.ArgBytes, 0))
	if used >= limit {
		return 1
	}
	return int(limit - used)
}
