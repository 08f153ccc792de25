//go:build cluster

package cluster

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/cmd/spank-otel/doctor"
)

// doctorNode is where the doctor's cases break and repair the set-up; the
// other nodes stay healthy.
const doctorNode = "c1"

// runDoctor runs `spank-otel doctor --json` on node, as root or, with
// srun from the controller, inside a one-task job step there, and returns
// its report and exit code.
func runDoctor(t *testing.T, node string, inJob bool, srunArgs ...string) (doctor.Report, int) {
	t.Helper()
	var out, errOut string
	var err error
	if inJob {
		argv := append([]string{"srun", "-N1", "-n1", "-w", node}, srunArgs...)
		argv = append(argv, "spank-otel", "doctor", "--json")
		out, errOut, err = clusterCmd(t, "", false, nil, argv...)
	} else {
		out, errOut, err = clusterCmd(t, node, true, nil, "spank-otel", "doctor", "--json")
	}
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("doctor on %s: %v\n%s", node, err, errOut)
	}
	var r doctor.Report
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil {
		t.Fatalf("doctor on %s (exit %d) printed no report: %v\n--- stdout\n%s\n--- stderr\n%s", node, code, jerr, out, errOut)
	}
	return r, code
}

// wantCheck fails unless the report has check name with status st and a
// message containing part.
func wantCheck(t *testing.T, r doctor.Report, name string, st doctor.Status, part string) {
	t.Helper()
	c, ok := r.Get(name)
	if !ok {
		t.Fatalf("no %s check in the report: %+v", name, r.Checks)
	}
	if c.Status != st || !strings.Contains(c.Message, part) {
		t.Errorf("%s: %s %q\nwant %s and a message containing %q", name, c.Status, c.Message, st, part)
	}
}

// wantHealthy fails unless every check is ok or info and the exit code 0.
func wantHealthy(t *testing.T, r doctor.Report, code int) {
	t.Helper()
	if code != 0 || !r.OK {
		t.Errorf("doctor exited %d on a healthy node: %+v", code, r.Checks)
	}
	for _, c := range r.Checks {
		if c.Status != doctor.StatusOK && c.Status != doctor.StatusInfo {
			t.Errorf("healthy node: %s %s %s", c.Name, c.Status, c.Message)
		}
	}
}

// wantProblem fails unless the doctor exited 1 and named the problem.
func wantProblem(t *testing.T, r doctor.Report, code int, name string, st doctor.Status, part string) {
	t.Helper()
	if code != 1 || r.OK {
		t.Errorf("doctor exited %d (ok=%v), want 1: %+v", code, r.OK, r.Checks)
	}
	wantCheck(t, r, name, st, part)
}

// onNode runs a root script on the doctor's node.
func onNode(t *testing.T, script string) {
	t.Helper()
	asRoot(t, script, doctorNode)
}

// otherRelease returns the shim's bytes with plugin_version, the one
// number Slurm compares before it loads a plugin, set to Slurm 24.11, a
// release no site-profile cluster (25.11, 26.05) runs.
func otherRelease(t *testing.T, shim []byte) []byte {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(shim))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name != "plugin_version" {
			continue
		}
		sec := f.Sections[s.Section]
		off := sec.Offset + (s.Value - sec.Addr)
		out := bytes.Clone(shim)
		binary.LittleEndian.PutUint32(out[off:], 24<<16|11<<8|7)
		return out
	}
	t.Fatal("the shim has no plugin_version symbol")
	return nil
}

// TestDoctor creates each problem the doctor names on one node, runs it
// there, and restores the node; on the healthy node, and in a job there,
// it reports no problem and exits 0.
func TestDoctor(t *testing.T) {
	const (
		top      = "/etc/slurm/plugstack.conf"
		include  = "include /etc/slurm/plugstack.conf.d/*.conf"
		ourLine  = "optional " + installedSo + " lib=" + installedLib
		setLine  = "printf '%s\\n' '" + ourLine + "' >" + plugstack
		ourConf  = plugstack
		earlyCnf = "/etc/slurm/plugstack.conf.d/00-spank-otel.conf"
	)
	healthy := func(t *testing.T) {
		t.Helper()
		r, code := runDoctor(t, doctorNode, false)
		wantHealthy(t, r, code)
		wantCheck(t, r, "order", doctor.StatusOK, "after pyxis")
		wantCheck(t, r, "helper", doctor.StatusOK, "answered for a synthetic task")
	}
	// Every case restores the line, whatever it changed.
	t.Cleanup(func() { onNode(t, setLine) })

	t.Run("healthy node", healthy)

	t.Run("healthy task", func(t *testing.T) {
		r, code := runDoctor(t, doctorNode, true)
		wantHealthy(t, r, code)
		if !r.InJob {
			t.Errorf("srun spank-otel doctor did not see a job: %+v", r)
		}
		wantCheck(t, r, "task", doctor.StatusOK, "this task got its attributes")
		r, code = runDoctor(t, doctorNode, true, "--otel-attrs=off")
		wantHealthy(t, r, code)
		wantCheck(t, r, "task", doctor.StatusInfo, "turned them off (--otel-attrs=off)")
	})

	t.Run("missing include", func(t *testing.T) {
		onNode(t, "cp -p "+top+" "+top+".doctor && sed -i '\\|^include /etc/slurm/plugstack.conf.d/|d' "+top)
		defer onNode(t, "mv "+top+".doctor "+top)
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "plugstack", doctor.StatusFail, "no line of "+top+" loads spank_otel.so; it has no include line")
		// In a job on that node the task has no attributes, and says why.
		r, _ = runDoctor(t, doctorNode, true)
		wantCheck(t, r, "task", doctor.StatusFail, "cause: the plugstack check above; slurmd's log on c1 (/var/log/slurm/")
	})

	t.Run("include of a missing directory", func(t *testing.T) {
		onNode(t, "cp -p "+top+" "+top+".doctor && sed -i 's|^include /etc/slurm/plugstack.conf.d/|include /etc/slurm/plugstack.d/|' "+top)
		defer onNode(t, "mv "+top+".doctor "+top)
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "plugstack", doctor.StatusFail, "include /etc/slurm/plugstack.d/*.conf ("+top)
	})

	t.Run("listed as required", func(t *testing.T) {
		onNode(t, "sed -i 's/^optional /required /' "+ourConf)
		defer onNode(t, setLine)
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "plugstack", doctor.StatusFail, ourConf+":1 lists "+installedSo+" as required")
	})

	t.Run("listed twice", func(t *testing.T) {
		onNode(t, "cp -p "+top+" "+top+".doctor && echo '"+ourLine+"' >>"+top)
		defer onNode(t, "mv "+top+".doctor "+top)
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "plugstack", doctor.StatusFail, "spank-otel is listed 2 times")
	})

	t.Run("placed before pyxis", func(t *testing.T) {
		onNode(t, "mv "+ourConf+" "+earlyCnf)
		defer onNode(t, "mv "+earlyCnf+" "+ourConf)
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "order", doctor.StatusWarn, "spank-otel comes before pyxis (/etc/slurm/plugstack.conf.d/pyxis.conf:1)")
	})

	t.Run("a shim of another release", func(t *testing.T) {
		shim, errOut, err := clusterCmd(t, doctorNode, true, nil, "cat", installedSo)
		if err != nil {
			t.Fatalf("reading the shim: %v %s", err, errOut)
		}
		old := otherRelease(t, []byte(shim))
		onNode(t, "cp -p "+installedSo+" /root/spank_otel.so.doctor")
		defer onNode(t, "mv /root/spank_otel.so.doctor "+installedSo)
		if _, errOut, err := clusterCmd(t, doctorNode, true, bytes.NewReader(old), "bash", "-c", "cat >"+installedSo); err != nil {
			t.Fatalf("writing the shim: %v %s", err, errOut)
		}
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "release", doctor.StatusFail,
			installedSo+" was built for Slurm 24.11, this node runs "+*slurmVersion)
		// Slurm agrees: it skips the plugin, and the task says so.
		r, _ = runDoctor(t, doctorNode, true)
		wantCheck(t, r, "task", doctor.StatusFail, "cause: the release check above")
		out, _, _ := clusterCmd(t, doctorNode, true, nil, "bash", "-c",
			"grep -a 'Incompatible Slurm plugin "+installedSo+" version (24.11.7)' /var/log/slurm/slurmd.log | tail -n 1")
		if strings.TrimSpace(out) == "" {
			t.Errorf("slurmd's log on %s has no \"Incompatible Slurm plugin\" line for the patched shim", doctorNode)
		}
	})

	t.Run("group-writable lib= directory", func(t *testing.T) {
		onNode(t, "install -d -m 0775 /opt/doctor-lib && cp -p "+installedLib+" /opt/doctor-lib/ && "+
			"printf '%s\\n' 'optional "+installedSo+" lib=/opt/doctor-lib/libspankotel.so' >"+ourConf)
		defer onNode(t, setLine+" && rm -rf /opt/doctor-lib")
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "library", doctor.StatusFail,
			"refusing to load /opt/doctor-lib/libspankotel.so: directory /opt/doctor-lib is writable by group or others (mode 0775)")
	})

	t.Run("no library", func(t *testing.T) {
		onNode(t, "mv "+installedLib+" /root/libspankotel.so.doctor")
		defer onNode(t, "mv /root/libspankotel.so.doctor "+installedLib)
		r, code := runDoctor(t, doctorNode, false)
		wantProblem(t, r, code, "library", doctor.StatusFail, "cannot open "+installedLib+": No such file or directory")
		r, _ = runDoctor(t, doctorNode, true)
		wantCheck(t, r, "task", doctor.StatusFail, "cause: the library check above")
	})

	t.Run("restored", healthy)
}
