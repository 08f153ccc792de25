package doctor

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// SlurmConf is what the doctor needs of slurm.conf.
type SlurmConf struct {
	Path          string   // the file read; "" when none was found
	PlugStack     string   // PlugStackConfig, or plugstack.conf beside slurm.conf
	PluginDirs    []string // PluginDir, split at ':'
	SlurmdLogFile string   // SlurmdLogFile; "" means syslog (the journal)
}

// ReadSlurmConf reads the keys the doctor needs from the slurm.conf at
// path: keys are case-insensitive, '#' starts a comment, the first value
// of a key wins (as for Slurm's own parser, which rejects a second one).
// Missing keys get Slurm's defaults; defaultPluginDirs stands for the
// PluginDir compiled into the node's Slurm. A file that cannot be read
// leaves only the defaults, with Path "".
func ReadSlurmConf(path string, defaultPluginDirs []string) SlurmConf {
	c := SlurmConf{PluginDirs: defaultPluginDirs}
	f, err := os.Open(path)
	if err != nil {
		c.PlugStack = filepath.Join(filepath.Dir(path), "plugstack.conf")
		return c
	}
	defer f.Close()
	c.Path = path
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if seen[key] {
			continue
		}
		seen[key] = true
		switch key {
		case "plugstackconfig":
			c.PlugStack = value
		case "plugindir":
			c.PluginDirs = strings.Split(value, ":")
		case "slurmdlogfile":
			c.SlurmdLogFile = value
		}
	}
	if c.PlugStack == "" {
		c.PlugStack = filepath.Join(filepath.Dir(path), "plugstack.conf")
	}
	return c
}
