package doctor

import (
	"strings"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// OptionEnv is the variable that carries --otel-attrs to a job's steps
// (spank/option.h: SO_OPTION_ENV); the shim writes it back into each task
// of a step that received a value.
const OptionEnv = "_SLURM_SPANK_OPTION_spank_otel_otel_attrs"

// inJob reports whether env is a task of a job step, where the plugin
// would have run: srun spank-otel doctor, or a batch script.
func inJob(env []string) bool {
	l := environ.List(env)
	id, ok := l.Lookup("SLURM_JOB_ID")
	if !ok || id == "" {
		return false
	}
	_, step := l.Lookup("SLURM_STEP_ID")
	_, oldStep := l.Lookup("SLURM_STEPID")
	return step || oldStep
}

// task checks, from inside a task, whether it got its attributes, and if
// not, which of the causes visible from there applies.
func (d *diagnosis) task() {
	env := environ.List(d.sys.Env)
	job, _ := env.Lookup("SLURM_JOB_ID")
	value, set := env.Lookup(libcarrier.EnvVar)
	attrs, _ := libcarrier.Parse(value)
	if set && attrs["slurm.job.id.raw"] == job {
		d.add("task", StatusOK, "this task got its attributes (slurm.job.id=%s)", attrs["slurm.job.id"])
		return
	}
	// Turned off on purpose: a fact, not a problem.
	option, _ := env.Lookup(OptionEnv)
	switch {
	case strings.EqualFold(option, "off"):
		d.add("task", StatusInfo, "this task has no attributes of job %s: the job or step turned them off (--otel-attrs=off)", job)
		return
	case d.probed != nil && d.probed.Args["default"] == "off" && !strings.EqualFold(option, "on"):
		d.add("task", StatusInfo, "this task has no attributes of job %s: the plugstack line says default=off "+
			"and the job did not ask with --otel-attrs=on", job)
		return
	}
	var causes []string
	// The task's own computation, as the library would do it: the reason
	// it leaves the variable alone (over its limit, or the whole
	// environment over the execve budget).
	res := taskenv.Compute(d.sys.Env, taskenv.Options{MaxEnvBytes: d.sys.ExecBudget})
	if res.Reason != "" {
		causes = append(causes, res.Reason)
	}
	for _, name := range []string{"plugstack", "release", "library", "helper", "kernel"} {
		if d.failed(name) {
			causes = append(causes, "the "+name+" check above")
		}
	}
	if len(causes) == 0 {
		causes = append(causes, "none visible from inside the job")
	}
	node, _ := env.Lookup("SLURMD_NODENAME")
	log := d.conf.SlurmdLogFile
	if log == "" {
		log = "the journal (journalctl -u slurmd)"
	}
	d.add("task", StatusFail, "this task has no attributes of job %s; cause: %s; slurmd's log on %s (%s) says why, in lines starting with \"spank-otel:\"",
		job, strings.Join(causes, "; "), orUnknown(node), log)
}

func orUnknown(s string) string {
	if s == "" {
		return "this node"
	}
	return s
}
