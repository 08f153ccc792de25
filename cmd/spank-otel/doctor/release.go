package doctor

import (
	"bytes"
	"debug/elf"
	"fmt"
	"regexp"
	"strconv"
)

// Release is a Slurm release, as Slurm compares them when it loads a
// plugin: only the major and minor numbers must agree.
type Release struct {
	Major, Minor, Micro int
}

// String is "26.05.1", as slurmd -V prints it.
func (r Release) String() string { return fmt.Sprintf("%d.%02d.%d", r.Major, r.Minor, r.Micro) }

// Series is "26.05": what a plugin must have been built for.
func (r Release) Series() string { return fmt.Sprintf("%d.%02d", r.Major, r.Minor) }

// Loads reports whether Slurm r loads a plugin built for p.
func (r Release) Loads(p Release) bool { return r.Major == p.Major && r.Minor == p.Minor }

// releaseRE finds a version in `slurmd -V` ("slurm 26.05.1") or `scontrol
// version` ("slurm 26.05.1", "slurm-wlm 24.11.5") output; SchedMD's
// pre-releases add a suffix ("25.11.0-0rc1").
var releaseRE = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)`)

// ParseRelease reads the first version number of a Slurm command's output.
func ParseRelease(out string) (Release, error) {
	m := releaseRE.FindStringSubmatch(out)
	if m == nil {
		return Release{}, fmt.Errorf("no Slurm version in %q", out)
	}
	var r Release
	r.Major, _ = strconv.Atoi(m[1])
	r.Minor, _ = strconv.Atoi(m[2])
	r.Micro, _ = strconv.Atoi(m[3])
	return r, nil
}

// PluginInfo is what Slurm reads from a plugin file before it loads it.
type PluginInfo struct {
	Name    string  // plugin_name, e.g. "spank-otel"
	Release Release // plugin_version: SLURM_VERSION_NUMBER of the headers it was built with
}

// ReadPluginInfo reads plugin_name and plugin_version from a plugin's
// dynamic symbols, which Slurm looks up with dlsym before it uses the
// plugin (plugin_load_from_file): an optional plugin whose version has
// another major.minor than Slurm's own is skipped with "Incompatible Slurm
// plugin". Reading the file instead of loading it works for any release
// and runs none of the plugin's code.
func ReadPluginInfo(path string) (PluginInfo, error) {
	f, err := elf.Open(path)
	if err != nil {
		return PluginInfo{}, err
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return PluginInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	var info PluginInfo
	var haveVersion bool
	for _, s := range syms {
		switch s.Name {
		case "plugin_version":
			b, err := symbolBytes(f, s, 4)
			if err != nil {
				return info, fmt.Errorf("%s: plugin_version: %w", path, err)
			}
			v := f.ByteOrder.Uint32(b)
			info.Release = Release{Major: int(v >> 16 & 0xff), Minor: int(v >> 8 & 0xff), Micro: int(v & 0xff)}
			haveVersion = true
		case "plugin_name":
			b, err := symbolBytes(f, s, s.Size)
			if err == nil {
				info.Name = string(bytes.TrimRight(b, "\x00"))
			}
		}
	}
	if !haveVersion {
		return info, fmt.Errorf("%s: no plugin_version symbol: not a Slurm plugin", path)
	}
	return info, nil
}

// symbolBytes returns n bytes of a data symbol's initial value.
func symbolBytes(f *elf.File, s elf.Symbol, n uint64) ([]byte, error) {
	if int(s.Section) <= 0 || int(s.Section) >= len(f.Sections) {
		return nil, fmt.Errorf("undefined")
	}
	sec := f.Sections[s.Section]
	if sec.Type == elf.SHT_NOBITS {
		return make([]byte, n), nil // .bss: zero
	}
	if s.Value < sec.Addr || s.Value-sec.Addr+n > sec.Size {
		return nil, fmt.Errorf("outside its section %s", sec.Name)
	}
	b := make([]byte, n)
	if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err != nil {
		return nil, err
	}
	return b, nil
}
