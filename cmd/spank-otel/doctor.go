package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spank-otel/spank-otel/cmd/spank-otel/doctor"
	"github.com/spank-otel/spank-otel/environ"
)

// doctorFlags are the flags of spank-otel doctor.
type doctorFlags struct {
	json      bool
	slurmConf string
	plugstack string
	probe     string
}

func doctorFlagSet(c *cli, fs *flag.FlagSet) {
	fs.BoolVar(&c.doctor.json, "json", false, "print the report as one JSON object")
	fs.StringVar(&c.doctor.slurmConf, "slurm-conf", "", "slurm.conf to read (default: $SLURM_CONF, else /etc/slurm/slurm.conf, else a configless node's /run/slurm/conf/slurm.conf)")
	fs.StringVar(&c.doctor.plugstack, "plugstack", "", "plugstack.conf to read (default: slurm.conf's PlugStackConfig)")
	fs.StringVar(&c.doctor.probe, "probe", "", "spank-otel-probe to run (default: beside the plugin)")
}

// defaultPluginDirs stands for the PluginDir compiled into Slurm when
// slurm.conf sets none: Debian's and the RPMs'.
var defaultPluginDirs = []string{"/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib64/slurm"}

// slurmConfs are where slurm.conf is looked for: the node's own, then
// /run/slurm/conf, the link a configless slurmd makes to the copy it
// fetched (its conf-cache). Inside a job, SLURM_CONF says which one.
var slurmConfs = []string{"/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf"}

// defaultSlurmConf is the first of candidates that exists, else the first.
func defaultSlurmConf(candidates []string) string {
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return candidates[0]
}

// nobody is the user the library runs as when the doctor runs as root.
const nobody = 65534

// probeTimeout bounds each program the doctor runs; the probe's own
// helper call is bounded by timeout= (60 s at most).
const probeTimeout = 90 * time.Second

func (c *cli) runDoctor(args []string) int {
	if !c.noArgs("doctor", args) {
		return exitUsage
	}
	conf := c.doctor.slurmConf
	if conf == "" {
		conf, _ = environ.List(c.env).Lookup("SLURM_CONF")
	}
	if conf == "" {
		conf = defaultSlurmConf(slurmConfs)
	}
	report := doctor.Diagnose(doctor.System{
		Env:               c.env,
		SlurmConf:         conf,
		Plugstack:         c.doctor.plugstack,
		DefaultPluginDirs: defaultPluginDirs,
		Probe:             c.doctor.probe,
		Euid:              os.Geteuid(),
		ProbeUser:         nobody,
		ExecBudget:        c.maxEnvBytes,
		Run:               runCommand,
		KernelRelease:     kernelRelease,
		PidfdOpen:         pidfdOpen,
		CgroupVersion:     cgroupVersion,
	})
	if c.doctor.json {
		if rc := c.printJSON(report); rc != exitOK {
			return rc
		}
	} else {
		for _, ck := range report.Checks {
			fmt.Fprintf(c.stdout, "%-4s %-9s %s\n", ck.Status, ck.Name, ck.Message)
		}
	}
	if !report.OK {
		return exitFail
	}
	return exitOK
}

func runCommand(argv, env []string) doctor.Command {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return doctor.Command{Stdout: out.String(), ExitCode: exit.ExitCode()}
	}
	return doctor.Command{Stdout: out.String(), Err: err}
}

func kernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}

func pidfdOpen() error {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// cgroupVersion tells the hierarchies apart by the file system type of
// /sys/fs/cgroup and of its unified mount.
func cgroupVersion() (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "", err
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "cgroup v2", nil
	}
	if err := unix.Statfs("/sys/fs/cgroup/unified", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "cgroup v1 (hybrid, with a v2 hierarchy)", nil
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		return "cgroup v1", nil
	}
	return "", fmt.Errorf("/sys/fs/cgroup holds %s", strings.TrimSpace(fmt.Sprintf("file system 0x%x", st.Type)))
}
