package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// ProbeMessage is one line the shim would log.
type ProbeMessage struct {
	Level string // error, info, verbose or debug
	Text  string
}

// ProbeResult is spank-otel-probe's report on one plugstack line.
type ProbeResult struct {
	Args       map[string]string // lib, lib_ok, default, rank, exclude, max_env, timeout_ms
	Messages   []ProbeMessage    // in the order logged
	LibStatus  string            // so_lib_open's status name: "called" when it passes
	CallStatus string            // the helper's status name, "" when not called
	// StepHelperStatus is so_lib_open's status name for spank-otel-helper
	// with a call, "" otherwise.
	StepHelperStatus string
	RC               int    // the library's return code (SO_RC_*)
	Value            string // its value, when it gave one
	argMsgs          int    // Messages[:argMsgs] came from the arguments
}

// ArgProblems are the messages about the arguments themselves (a relative
// lib=, a bad timeout=, an unknown argument), nil when there are none.
func (r ProbeResult) ArgProblems() []string {
	var out []string
	for _, m := range r.Messages[:r.argMsgs] {
		out = append(out, m.Text)
	}
	return out
}

// Errors are the error-level messages, those that cost tasks their value.
func (r ProbeResult) Errors() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Level == "error" {
			out = append(out, m.Text)
		}
	}
	return out
}

// TimeoutMS is timeout= as the shim reads it.
func (r ProbeResult) TimeoutMS() int {
	n, _ := strconv.Atoi(r.Args["timeout_ms"])
	return n
}

// ParseProbe reads the probe's report (spank/probe_main.c).
func ParseProbe(out string) (ProbeResult, error) {
	r := ProbeResult{Args: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "msg "); ok {
			level, text, _ := strings.Cut(rest, " ")
			r.Messages = append(r.Messages, ProbeMessage{Level: level, Text: text})
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch key {
		case "lib", "lib_ok", "default", "rank", "exclude", "max_env", "timeout_ms":
			r.Args[key] = value
			r.argMsgs = len(r.Messages)
		case "lib_status":
			r.LibStatus = value
		case "step_helper_status":
			// spank-otel-helper beside the library; one that
			// fails its checks is the call's failure, with its reason
			// among the messages.
			r.StepHelperStatus = value
		case "call_status":
			r.CallStatus = value
		case "rc":
			r.RC, _ = strconv.Atoi(value)
		case "value":
			r.Value = value
		}
	}
	if r.LibStatus == "" {
		return r, fmt.Errorf("no lib_status in the probe's report: %q", out)
	}
	return r, nil
}

// SyntheticJobID is the job id of the synthetic task the library runs for.
const SyntheticJobID = "4242"

// syntheticTask is the environment of a made-up task of a job step: what
// Slurm gives every task, nothing of the doctor's own.
func syntheticTask() []string {
	return []string{
		"PATH=/usr/bin:/bin",
		"SLURM_JOB_ID=" + SyntheticJobID,
		"SLURM_JOB_NAME=spank-otel-doctor",
		"SLURM_CLUSTER_NAME=doctor",
		"SLURM_STEP_ID=0",
		"SLURM_PROCID=0",
		"SLURM_NTASKS=1",
		"SLURM_JOB_NUM_NODES=1",
	}
}

// RunProbe runs spank-otel-probe on a plugin line's arguments and has it
// call the library for a synthetic task: as root, as the user probeUser,
// as the plugin runs it as the job's user.
func RunProbe(run func(argv, env []string) Command, probe string, args []string, euid, probeUser int) (ProbeResult, error) {
	if _, err := os.Stat(probe); errors.Is(err, fs.ErrNotExist) {
		return ProbeResult{}, fmt.Errorf("%s is missing (it comes with the package, beside %s)", probe, ShimFile)
	}
	argv := []string{probe, "--call"}
	if euid == 0 {
		argv = append(argv, "--as-user", strconv.Itoa(probeUser))
	}
	argv = append(argv, "--")
	argv = append(argv, args...)
	res := run(argv, syntheticTask())
	if res.Err != nil {
		return ProbeResult{}, fmt.Errorf("%s: %v", probe, res.Err)
	}
	return ParseProbe(res.Stdout)
}
