// Command spank-otel shows and applies what the spank-otel SPANK plugin
// writes into a Slurm task's OTEL_RESOURCE_ATTRIBUTES.
//
// Admins use it to check the plugin; sites without the plugin use
// `eval "$(spank-otel export)"` in batch scripts or a TaskProlog.
//
// Usage:
//
//	spank-otel task-env [--step-id N] [--rank on|off]
//	                                    the value the plugin would write
//	spank-otel export [--stage S] [--step-id N] [--rank on|off]
//	                                    the same as a shell export line
//	spank-otel decode [VALUE]           a carrier as a JSON object
//	spank-otel detect                   the detected resource as JSON
//	spank-otel run-uuid [--run-id ID]   the run (attempt) UUID
//	spank-otel doctor [--json]          check this node's set-up (as root), or this task's
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/detect/nvidiasmi"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
	"github.com/spank-otel/spank-otel/uuidderive"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), execveBudget(), os.Stdout, os.Stderr))
}

// command is one subcommand.
type command struct {
	name    string
	args    string
	summary string
	run     func(c *cli, args []string) int
	flags   []*stringFlag
	// setFlags declares flags that are not strings (doctor's --json).
	setFlags func(c *cli, fs *flag.FlagSet)
}

// stringFlag is a command's flag, --name VALUE, stored in the field of the
// invocation that value returns.
type stringFlag struct {
	name, usage string
	value       func(c *cli) *string
}

// cli carries one invocation's inputs and outputs; nothing is global so
// tests run invocations side by side.
type cli struct {
	env            []string
	maxEnvBytes    int // the execve budget for task-env and export; 0: none
	stdout, stderr io.Writer
	stage          string
	stepID         string
	rank           string
	root           string
	admitted       string
	runID          string
	doctor         doctorFlags
}

func commands() []command {
	stage := &stringFlag{"stage", "treat the environment as the batch script (sbatch) or a step's task (task); default: from SLURM_STEP_ID",
		func(c *cli) *string { return &c.stage }}
	stepID := &stringFlag{"step-id", "the step as Slurm gives it to the plugin: a number, or batch or interactive (default: from SLURM_STEP_ID)",
		func(c *cli) *string { return &c.stepID }}
	rank := &stringFlag{"rank", "on: also write nv.dl.rank, nv.dl.world_size and nv.dl.local_rank, as the plugin's --otel-rank (default off)",
		func(c *cli) *string { return &c.rank }}
	root := &stringFlag{"root", "the file system root where a step's task finds its GPUs (gres.conf, /dev, /proc/driver/nvidia), as the plugin reads / (default /)",
		func(c *cli) *string { return &c.root }}
	admitted := &stringFlag{"admitted", "the minors of the /dev/nvidiaN a bound task's device cgroup admits (e.g. 2 or 0,3), for a copy of a node under --root, which has no device cgroup to ask; on / the kernel is asked, from this process's cgroups",
		func(c *cli) *string { return &c.admitted }}
	runID := &stringFlag{"run-id", "run id to use outside Slurm (default: $TORCHELASTIC_RUN_ID)",
		func(c *cli) *string { return &c.runID }}
	return []command{
		{name: "task-env", args: "[--step-id N] [--rank on|off] [--root DIR] [--admitted MINORS]", run: (*cli).taskEnv, flags: []*stringFlag{stepID, rank, root, admitted},
			summary: "print the OTEL_RESOURCE_ATTRIBUTES value the plugin would write for this environment"},
		{name: "export", args: "[--stage sbatch|task] [--step-id N] [--rank on|off] [--root DIR] [--admitted MINORS]", run: (*cli).export,
			flags:   []*stringFlag{stage, stepID, rank, root, admitted},
			summary: "print it as a shell export line, for eval in a batch script or TaskProlog"},
		{name: "decode", args: "[VALUE]", run: (*cli).decode,
			summary: "decode VALUE (default: $OTEL_RESOURCE_ATTRIBUTES) into a JSON object of strings"},
		{name: "detect", run: (*cli).detect,
			summary: "print the detected resource (local, Slurm, Kubernetes) as a JSON object"},
		{name: "run-uuid", args: "[--run-id ID]", run: (*cli).runUUID, flags: []*stringFlag{runID},
			summary: "print the run (attempt) UUID of this job or run"},
		{name: "doctor", args: "[--json] [--slurm-conf F] [--plugstack F] [--probe F]", run: (*cli).runDoctor, setFlags: doctorFlagSet,
			summary: "check this node's set-up (as root) or, in a job (srun spank-otel doctor), this task's; exit 1 on any problem"},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: spank-otel COMMAND [ARGS]\n\nCommands:\n")
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, "\nRun 'spank-otel COMMAND --help' for a command's flags.\n")
}

// run executes one invocation and returns its exit code. maxEnvBytes is
// the execve budget of the environment (taskenv.Options.MaxEnvBytes).
func run(args, env []string, maxEnvBytes int, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	}
	for _, cmd := range commands() {
		if cmd.name != args[0] {
			continue
		}
		c := &cli{env: env, maxEnvBytes: maxEnvBytes, stdout: stdout, stderr: stderr}
		fs := flag.NewFlagSet("spank-otel "+cmd.name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.Usage = func() {
			fmt.Fprintf(fs.Output(), "Usage: spank-otel %s %s\n\n%s.\n", cmd.name, cmd.args, cmd.summary)
			fs.PrintDefaults()
		}
		for _, f := range cmd.flags {
			fs.StringVar(f.value(c), f.name, "", f.usage)
		}
		if cmd.setFlags != nil {
			cmd.setFlags(c, fs)
		}
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return exitOK
			}
			return exitUsage
		}
		return cmd.run(c, fs.Args())
	}
	fmt.Fprintf(stderr, "spank-otel: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func (c *cli) warn(ws []libcarrier.Warning) {
	for _, w := range ws {
		fmt.Fprintf(c.stderr, "spank-otel: warning: %s\n", w)
	}
}

func (c *cli) noArgs(name string, args []string) bool {
	if len(args) == 0 {
		return true
	}
	fmt.Fprintf(c.stderr, "spank-otel %s: unexpected argument %q\n", name, args[0])
	return false
}

// request is the task path's Request of the command's environment and
// flags, or why they are wrong.
func (c *cli) request(stage taskenv.Stage) (taskenv.Request, error) {
	root := c.root
	if root == "" {
		root = "/"
	}
	fsys := gpu.Root(root)
	if c.admitted != "" {
		minors, err := parseMinors(c.admitted)
		if err != nil {
			return taskenv.Request{}, err
		}
		fsys = admittedFS{fsys, minors}
	}
	req := taskenv.Request{Env: c.env, Node: fsys,
		Options: taskenv.Options{MaxEnvBytes: c.maxEnvBytes, Stage: stage}}
	switch c.rank {
	case "", "off":
	case "on":
		req.Options.Ranks = true
	default:
		return req, fmt.Errorf("--rank must be on or off, not %q", c.rank)
	}
	if c.stepID != "" {
		id, err := parseStepID(c.stepID)
		if err != nil {
			return req, err
		}
		req.Options.Step = &id
	}
	return req, nil
}

// admittedFS is a node's files with the device nodes a task's device
// cgroup admits given by the admin (--admitted), as the task would find
// them with access(2) (spank/devices.c).
type admittedFS struct {
	gpu.FS
	minors map[string]bool // by device node name
}

func (a admittedFS) Usable(name string) (bool, error) { return a.minors[name], nil }

// parseMinors reads --admitted: comma-separated device minors.
func parseMinors(list string) (map[string]bool, error) {
	minors := map[string]bool{}
	for _, m := range strings.Split(list, ",") {
		n, err := strconv.ParseUint(m, 10, 20)
		if err != nil {
			return nil, fmt.Errorf("--admitted must list device minors such as 0,3, not %q", list)
		}
		minors["/dev/nvidia"+strconv.FormatUint(n, 10)] = true
	}
	return minors, nil
}

// Slurm's ids of its special steps that run a task (slurm.h).
const (
	stepBatch       = 0xfffffffb
	stepInteractive = 0xfffffffa
)

// parseStepID reads a --step-id: a step's number, or the name of the
// batch or interactive step.
func parseStepID(s string) (uint32, error) {
	switch s {
	case "batch":
		return stepBatch, nil
	case "interactive":
		return stepInteractive, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("--step-id must be a step number, batch or interactive, not %q", s)
	}
	return uint32(n), nil
}

// compute runs the plugin's own task path on req and returns the
// variable's resulting value and whether it is set at all.
func (c *cli) compute(req taskenv.Request) (string, bool) {
	res := taskenv.Run(&req)
	for _, w := range res.Dropped {
		fmt.Fprintf(c.stderr, "spank-otel: %s: %s\n", libcarrier.EnvVar, w)
	}
	c.warn(res.Warnings)
	// What the plugin logs at debug level only, such as why a task that
	// names GPUs gets no GPU keys: the admin who runs this asked.
	for _, w := range res.Debug {
		fmt.Fprintf(c.stderr, "spank-otel: note: %s\n", w)
	}
	if res.Reason != "" {
		fmt.Fprintf(c.stderr, "spank-otel: %s\n", res.Reason)
	}
	if res.Changed {
		return res.Value, !res.Unset
	}
	return environ.List(c.env).Lookup(libcarrier.EnvVar)
}

func (c *cli) taskEnv(args []string) int {
	if !c.noArgs("task-env", args) {
		return exitUsage
	}
	req, err := c.request(taskenv.StageAuto)
	if err != nil {
		fmt.Fprintf(c.stderr, "spank-otel task-env: %v\n", err)
		return exitUsage
	}
	if value, set := c.compute(req); set {
		fmt.Fprintln(c.stdout, value)
	}
	return exitOK
}

func (c *cli) export(args []string) int {
	if !c.noArgs("export", args) {
		return exitUsage
	}
	var stage taskenv.Stage
	switch c.stage {
	case "":
		stage = taskenv.StageAuto
	case "sbatch":
		stage = taskenv.StageBatch
	case "task":
		stage = taskenv.StageTask
	default:
		fmt.Fprintf(c.stderr, "spank-otel export: --stage must be sbatch or task, not %q\n", c.stage)
		return exitUsage
	}
	req, err := c.request(stage)
	if err != nil {
		fmt.Fprintf(c.stderr, "spank-otel export: %v\n", err)
		return exitUsage
	}
	// Both lines are what a shell's eval and a TaskProlog understand.
	if value, set := c.compute(req); set {
		fmt.Fprintf(c.stdout, "export %s=%s\n", libcarrier.EnvVar, shellQuote(value))
	} else {
		fmt.Fprintf(c.stdout, "unset %s\n", libcarrier.EnvVar)
	}
	return exitOK
}

func (c *cli) decode(args []string) int {
	var text string
	switch len(args) {
	case 0:
		text, _ = environ.List(c.env).Lookup(libcarrier.EnvVar)
	case 1:
		text = args[0]
	default:
		fmt.Fprintf(c.stderr, "spank-otel decode: takes at most one VALUE, got %d\n", len(args))
		return exitUsage
	}
	attrs, warnings := libcarrier.Parse(text)
	c.warn(warnings)
	return c.printJSON(attrs)
}

func (c *cli) detect(args []string) int {
	if !c.noArgs("detect", args) {
		return exitUsage
	}
	attrs, warnings := detect.Resource(environ.List(c.env), detect.Options{
		CountGPUs: nvidiasmi.CountGPUs,
	})
	c.warn(warnings)
	return c.printJSON(attrs)
}

func (c *cli) runUUID(args []string) int {
	if !c.noArgs("run-uuid", args) {
		return exitUsage
	}
	id, ok := uuidderive.RunUUID(environ.List(c.env), c.runID)
	if !ok {
		fmt.Fprintln(c.stderr, "spank-otel run-uuid: no identity: no Slurm job (SLURM_JOB_ID), no --run-id and no TORCHELASTIC_RUN_ID")
		return exitFail
	}
	fmt.Fprintln(c.stdout, id)
	return exitOK
}

// printJSON writes v as one JSON object; encoding/json sorts map keys.
func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "spank-otel: %v\n", err)
		return exitFail
	}
	return exitOK
}

// shellQuote quotes s for a POSIX shell. A canonical carrier is almost
// always plain, and then it stays unquoted, which also suits a TaskProlog,
// where Slurm takes the text after '=' literally. In an assignment the
// shell expands a '~' at the start of the value or after a ':' (~root
// becomes /root), so such a value is quoted too.
func shellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("%,=._~-:/@+", r))
	}) < 0 && !strings.HasPrefix(s, "~") && !strings.Contains(s, ":~")
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// execveBudget is taskenv.ExecBudget for this process's stack limit, the
// rule the plugin applies to a task; 0 (no total check) when the limit
// cannot be read. A TaskProlog or a batch script does not know the
// arguments of the program that will run, so none are counted.
func execveBudget() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &lim); err != nil {
		return 0
	}
	return taskenv.ExecBudget(taskenv.ExecOf(lim.Cur, nil))
}
