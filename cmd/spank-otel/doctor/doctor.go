// Package doctor checks that a node is set up to run the spank-otel SPANK
// plugin and explains what is wrong: the checks of `spank-otel doctor`.
//
// The rules a lib= path must pass are the shim's C code; the doctor does
// not copy them but runs spank-otel-probe, a small C program built from
// the shim's own sources and installed beside it. Everything else
// (plugstack.conf and its includes, the plugin's Slurm release, the
// kernel, cgroups, the task's own variable inside a job) is read here.
package doctor

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Status is the verdict of one check.
type Status string

// The verdicts. A report with any StatusWarn or StatusFail is a problem.
const (
	StatusOK   Status = "ok"   // as it should be
	StatusInfo Status = "info" // a fact worth knowing, neither good nor bad
	StatusWarn Status = "warn" // works, but not as recommended
	StatusFail Status = "fail" // tasks get no attributes, or the check could not run
)

// Check is one line of the report.
type Check struct {
	Name    string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
}

// Report is the result of Diagnose: its checks in the order they ran.
type Report struct {
	InJob  bool    `json:"in_job"` // run from a task of a job step
	Checks []Check `json:"checks"`
	OK     bool    `json:"ok"` // no warn and no fail
}

// Get returns the check named name, if it ran.
func (r Report) Get(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// Command is the outcome of one program the doctor ran.
type Command struct {
	Stdout   string
	ExitCode int
	Err      error // it could not be started (or was killed); ExitCode is then meaningless
}

// System is everything the doctor reads from the machine, so that tests
// can stand in for each part.
type System struct {
	// Env is the doctor's own environment: inside a job, the task's.
	Env []string
	// SlurmConf is slurm.conf's path.
	SlurmConf string
	// Plugstack overrides slurm.conf's PlugStackConfig when not "".
	Plugstack string
	// DefaultPluginDirs stands for the PluginDir compiled into Slurm.
	DefaultPluginDirs []string
	// Probe is spank-otel-probe's path; "" means beside the plugin.
	Probe string
	// Euid is the doctor's effective uid: as root the probe runs the
	// library as ProbeUser, as the plugin runs it as the job's user.
	Euid      int
	ProbeUser int
	// ExecBudget is the execve budget of the task's environment
	// (taskenv.ExecBudget); 0 checks only the variable's own limit.
	ExecBudget int
	// Run runs a program with argv and, when env is not nil, that
	// environment.
	Run func(argv, env []string) Command
	// KernelRelease is uname's release ("6.1.0-18-amd64").
	KernelRelease func() (string, error)
	// PidfdOpen tries pidfd_open(2) on the doctor itself.
	PidfdOpen func() error
	// CgroupVersion says which cgroup hierarchy /sys/fs/cgroup holds.
	CgroupVersion func() (string, error)
}

// PluginName is the shim's plugin_name, ShimFile its installed file name,
// and ProbeFile the name of spank-otel-probe, installed beside it.
const (
	PluginName = "spank-otel"
	ShimFile   = "spank_otel.so"
	ProbeFile  = "spank-otel-probe"
)

// containerPlugins are the plugin names (plugin_name, or a part of the
// file name) of SPANK plugins that import a container's environment into
// the task: spank-otel must come after them (README: With a container
// plugin).
var containerPlugins = []string{"pyxis", "singularity", "apptainer", "shifter", "enroot", "charliecloud", "podman"}

// Diagnose runs every check and returns the report. Checks that depend on
// an earlier one that failed say so instead of running.
func Diagnose(sys System) Report {
	d := &diagnosis{sys: sys}
	d.inJob = inJob(sys.Env)
	d.plugstack()
	d.order()
	d.release()
	d.probe()
	d.kernel()
	d.cgroup()
	if d.inJob {
		d.task()
	}
	r := Report{InJob: d.inJob, Checks: d.checks, OK: true}
	for _, c := range r.Checks {
		if c.Status == StatusWarn || c.Status == StatusFail {
			r.OK = false
		}
	}
	return r
}

// diagnosis is one run's state: what each check found, for the later
// checks that depend on it.
type diagnosis struct {
	sys    System
	inJob  bool
	checks []Check

	conf   SlurmConf
	stack  Stack
	plugin *Plugin // spank-otel's line, when there is exactly one
	probed *ProbeResult
}

func (d *diagnosis) add(name string, st Status, format string, args ...any) {
	d.checks = append(d.checks, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
}

func (d *diagnosis) failed(name string) bool {
	for _, c := range d.checks {
		if c.Name == name && c.Status == StatusFail {
			return true
		}
	}
	return false
}

// isSpankOtel tells spank-otel's lines by the plugin's own name, or by
// the file name when the file cannot be read.
func isSpankOtel(p Plugin) bool {
	if info, err := ReadPluginInfo(p.Resolved); err == nil && info.Name != "" {
		return info.Name == PluginName
	}
	return filepath.Base(p.Path) == ShimFile
}

func containerPlugin(p Plugin) string {
	name := strings.ToLower(filepath.Base(p.Path))
	if info, err := ReadPluginInfo(p.Resolved); err == nil && info.Name != "" {
		name += " " + strings.ToLower(info.Name)
	}
	for _, c := range containerPlugins {
		if strings.Contains(name, c) {
			return c
		}
	}
	return ""
}

func (d *diagnosis) plugstack() {
	d.conf = ReadSlurmConf(d.sys.SlurmConf, d.sys.DefaultPluginDirs)
	path := d.conf.PlugStack
	if d.sys.Plugstack != "" {
		path = d.sys.Plugstack
	}
	st, err := ReadPlugstack(path, d.conf.PluginDirs)
	d.stack = st
	for _, p := range st.Problems {
		d.add("plugstack", StatusWarn, "%s", p)
	}
	if err != nil {
		d.add("plugstack", StatusFail, "cannot read %s: %v", path, err)
		return
	}
	var ours []Plugin
	for _, p := range st.Plugins {
		if isSpankOtel(p) {
			ours = append(ours, p)
		}
	}
	switch {
	case len(st.Files) == 0:
		d.add("plugstack", StatusFail, "%s does not exist: Slurm loads no SPANK plugin on this node", path)
	case len(ours) == 0:
		var empty []string
		for _, inc := range st.Includes {
			if len(inc.Matches) == 0 {
				empty = append(empty, fmt.Sprintf("include %s (%s:%d) matches no file", inc.Pattern, inc.File, inc.Line))
			}
		}
		msg := fmt.Sprintf("no line of %s loads %s", strings.Join(st.Files, ", "), ShimFile)
		if len(empty) > 0 {
			msg += "; " + strings.Join(empty, "; ")
		} else if len(st.Includes) == 0 {
			msg += "; it has no include line (README: Enable)"
		}
		d.add("plugstack", StatusFail, "%s", msg)
	case len(ours) > 1:
		var where []string
		for _, p := range ours {
			where = append(where, p.Where())
		}
		d.add("plugstack", StatusFail, "spank-otel is listed %d times (%s): keep one line", len(ours), strings.Join(where, ", "))
	case ours[0].Required:
		d.plugin = &ours[0]
		d.add("plugstack", StatusFail, "%s lists %s as required: should it ever fail to load "+
			"(missing, or built for another Slurm release) Slurm fails every job step and drains the node; use optional",
			ours[0].Where(), ours[0].Path)
	default:
		d.plugin = &ours[0]
		d.add("plugstack", StatusOK, "%s loads %s as optional", ours[0].Where(), ours[0].Resolved)
	}
}

func (d *diagnosis) order() {
	if d.plugin == nil {
		return
	}
	ours := slices.IndexFunc(d.stack.Plugins, func(p Plugin) bool { return p.File == d.plugin.File && p.Line == d.plugin.Line })
	var before, after []string
	for i, p := range d.stack.Plugins {
		c := containerPlugin(p)
		if c == "" {
			continue
		}
		desc := fmt.Sprintf("%s (%s)", c, p.Where())
		if i < ours {
			before = append(before, desc)
		} else {
			after = append(after, desc)
		}
	}
	switch {
	case len(after) > 0:
		d.add("order", StatusWarn, "spank-otel comes before %s: in a container the image's "+
			"OTEL_RESOURCE_ATTRIBUTES replaces the job's identity; list spank-otel after it (docs/reference.md: With a container plugin)",
			strings.Join(after, ", "))
	case len(before) > 0:
		d.add("order", StatusOK, "spank-otel comes after %s", strings.Join(before, ", "))
	default:
		d.add("order", StatusInfo, "no container plugin in plugstack.conf")
	}
}

// nodeRelease asks slurmd, then scontrol (a login node has no slurmd).
func (d *diagnosis) nodeRelease() (Release, string, error) {
	var errs []string
	for _, argv := range [][]string{{"slurmd", "-V"}, {"scontrol", "version"}} {
		res := d.sys.Run(argv, nil)
		if res.Err != nil || res.ExitCode != 0 {
			errs = append(errs, fmt.Sprintf("%s: %s", strings.Join(argv, " "), describe(res)))
			continue
		}
		r, err := ParseRelease(res.Stdout)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		return r, strings.Join(argv, " "), nil
	}
	return Release{}, "", fmt.Errorf("%s", strings.Join(errs, "; "))
}

func describe(c Command) string {
	if c.Err != nil {
		return c.Err.Error()
	}
	return fmt.Sprintf("exit status %d", c.ExitCode)
}

func (d *diagnosis) release() {
	if d.plugin == nil {
		return
	}
	info, err := ReadPluginInfo(d.plugin.Resolved)
	if err != nil {
		d.add("release", StatusFail, "cannot read the plugin %s: %v; Slurm cannot load it either", d.plugin.Resolved, err)
		return
	}
	node, how, err := d.nodeRelease()
	if err != nil {
		d.add("release", StatusFail, "%s was built for Slurm %s; the node's release is unknown (%v)", d.plugin.Resolved, info.Release.Series(), err)
		return
	}
	if !node.Loads(info.Release) {
		d.add("release", StatusFail, "%s was built for Slurm %s, this node runs %s (%s): Slurm skips it "+
			"(\"Incompatible Slurm plugin\" in slurmd's log) and tasks get no attributes; install the package built for %s",
			d.plugin.Resolved, info.Release.Series(), node, how, node.Series())
		return
	}
	d.add("release", StatusOK, "%s was built for Slurm %s, this node runs %s", d.plugin.Resolved, info.Release.Series(), node)
}

// probePath is spank-otel-probe beside the plugin, as the packages install it.
func (d *diagnosis) probePath() string {
	if d.sys.Probe != "" {
		return d.sys.Probe
	}
	return filepath.Join(filepath.Dir(d.plugin.Resolved), ProbeFile)
}

func (d *diagnosis) probe() {
	if d.plugin == nil {
		return
	}
	res, err := RunProbe(d.sys.Run, d.probePath(), d.plugin.Args, d.sys.Euid, d.sys.ProbeUser)
	if err != nil {
		d.add("library", StatusFail, "cannot check lib= with the shim's rules: %v", err)
		return
	}
	d.probed = &res
	if res.ArgProblems() != nil {
		d.add("arguments", StatusWarn, "%s: %s", d.plugin.Where(), strings.Join(res.ArgProblems(), "; "))
	} else {
		d.add("arguments", StatusOK, "default=%s rank=%s timeout=%d ms%s", res.Args["default"], res.Args["rank"], res.TimeoutMS(), excludeNote(res.Args["exclude"]))
	}
	if res.LibStatus != "called" {
		why := strings.Join(res.Errors(), "; ")
		if why == "" {
			why = res.LibStatus
		}
		d.add("library", StatusFail, "the shim refuses %s: %s", res.Args["lib"], why)
		return
	}
	d.add("library", StatusOK, "%s passes the shim's checks (owner, mode, every directory on the way, ELF layout)", res.Args["lib"])
	if res.CallStatus != "called" || res.RC != 1 {
		why := strings.Join(res.Errors(), "; ")
		if why == "" {
			why = fmt.Sprintf("status %s, library return code %d", res.CallStatus, res.RC)
		}
		d.add("helper", StatusFail, "the library gave no value for a synthetic task: %s", why)
		return
	}
	d.add("helper", StatusOK, "the library answered for a synthetic task (%d bytes)", len(res.Value))
}

func excludeNote(exclude string) string {
	if exclude == "" {
		return ""
	}
	return " exclude=" + exclude
}

func (d *diagnosis) kernel() {
	rel, err := d.sys.KernelRelease()
	if err != nil {
		d.add("kernel", StatusFail, "uname: %v", err)
		return
	}
	// The step's helper is started with a pidfd from clone (Linux 5.2)
	// and reaped through it (waitid P_PIDFD, 5.4); without close_range
	// (5.9) descriptors are closed through /proc/self/fd.
	if !kernelAtLeast(rel, 5, 4) {
		d.add("kernel", StatusFail, "Linux %s: the step's helper needs waitid on a pidfd, Linux 5.4 or later; tasks get no attributes", rel)
		return
	}
	if err := d.sys.PidfdOpen(); err != nil {
		d.add("kernel", StatusFail, "Linux %s, but pidfd_open fails (%v): a seccomp filter? tasks get no attributes", rel, err)
		return
	}
	d.add("kernel", StatusOK, "Linux %s has pidfd_open", rel)
}

// kernelAtLeast compares the leading "X.Y" of a kernel release.
func kernelAtLeast(release string, major, minor int) bool {
	var x, y int
	if n, _ := fmt.Sscanf(release, "%d.%d", &x, &y); n < 2 {
		return false
	}
	return x > major || x == major && y >= minor
}

func (d *diagnosis) cgroup() {
	v, err := d.sys.CgroupVersion()
	if err != nil {
		d.add("cgroup", StatusInfo, "cgroup version unknown: %v", err)
		return
	}
	d.add("cgroup", StatusInfo, "%s: the step's helper loads the library if its cgroups (the step parent's) have room for it", v)
}
