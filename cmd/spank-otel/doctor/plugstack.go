package doctor

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Plugin is one plugin line of a plugstack.conf, as Slurm reads it.
type Plugin struct {
	File     string   // the file the line is in
	Line     int      // its line number, from 1
	Required bool     // "required"; false for "optional"
	Path     string   // the plugin's path as written
	Resolved string   // the file Slurm loads: Path, or found in PluginDir
	Args     []string // the plugin's arguments
}

// Where is "file:line", for messages.
func (p Plugin) Where() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Include is one include line and the files its pattern matched.
type Include struct {
	File    string
	Line    int
	Pattern string   // absolute: relative patterns are taken from File's directory
	Matches []string // sorted, as glob(3) returns them
}

// Stack is a plugstack.conf with its includes read in Slurm's order.
type Stack struct {
	Files    []string  // every file read, the top one first
	Plugins  []Plugin  // in the order Slurm loads (and calls) them
	Includes []Include // every include line
	Problems []string  // lines Slurm ignores or stops at, with file:line
}

// maxLine is the buffer Slurm reads each line into (fgets, 4096 bytes):
// a longer line is read as several.
const maxLine = 4096

// ReadPlugstack reads the plugstack.conf at path the way Slurm's SPANK
// loader does: '#' starts a comment anywhere, each line is "required",
// "optional" or "include" and words separated by blanks; an include
// pattern is a glob, relative to the including file's directory, its
// matches read in sorted order; a relative plugin path is looked up in
// each of pluginDirs (slurm.conf's PluginDir) in turn. A missing top file
// is an empty stack, as for Slurm. Only an unreadable file is an error.
func ReadPlugstack(path string, pluginDirs []string) (Stack, error) {
	var s Stack
	if err := s.read(path, pluginDirs, 0); err != nil && !(errors.Is(err, fs.ErrNotExist) && len(s.Files) == 0) {
		return s, err
	}
	return s, nil
}

// maxDepth stops an include loop; Slurm itself would recurse until it ran
// out of descriptors.
const maxDepth = 16

func (s *Stack) read(path string, pluginDirs []string, depth int) error {
	if depth > maxDepth {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: included more than %d levels deep (an include loop?)", path, maxDepth))
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s.Files = append(s.Files, path)
	r := bufio.NewReaderSize(f, maxLine)
	for num := 1; ; num++ {
		line, err := readLine(r)
		if line == "" && err != nil {
			break
		}
		if err := s.line(path, num, line, pluginDirs, depth); err != nil {
			return err
		}
	}
	return nil
}

// readLine returns at most maxLine-1 bytes, up to and without the newline,
// as fgets would split it.
func readLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for b.Len() < maxLine-1 {
		c, err := r.ReadByte()
		if err != nil {
			return b.String(), err
		}
		if c == '\n' {
			return b.String(), nil
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func (s *Stack) line(file string, num int, text string, pluginDirs []string, depth int) error {
	if i := strings.IndexByte(text, '#'); i >= 0 {
		text = text[:i]
	}
	words := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
	if len(words) == 0 {
		return nil
	}
	where := fmt.Sprintf("%s:%d", file, num)
	if len(words) < 2 {
		s.Problems = append(s.Problems, where+": invalid line, ignored by Slurm: "+strings.Join(words, " "))
		return nil
	}
	switch words[0] {
	case "include":
		return s.include(file, num, words[1], pluginDirs, depth)
	case "required", "optional":
		p := Plugin{File: file, Line: num, Required: words[0] == "required", Path: words[1], Args: words[2:]}
		p.Resolved = resolvePlugin(p.Path, pluginDirs)
		s.Plugins = append(s.Plugins, p)
	default:
		s.Problems = append(s.Problems, fmt.Sprintf("%s: invalid line, ignored by Slurm: %q is not required, optional or include", where, words[0]))
	}
	return nil
}

func (s *Stack) include(file string, num int, pattern string, pluginDirs []string, depth int) error {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(file), pattern)
	}
	// filepath.Glob sorts its matches, as glob(3) does without GLOB_NOSORT.
	matches, err := filepath.Glob(pattern)
	if err != nil {
		s.Problems = append(s.Problems, fmt.Sprintf("%s:%d: include %s: %v", file, num, pattern, err))
	}
	s.Includes = append(s.Includes, Include{File: file, Line: num, Pattern: pattern, Matches: matches})
	for _, m := range matches {
		if err := s.read(m, pluginDirs, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// resolvePlugin is where Slurm finds a plugin named by a relative path:
// the first directory of PluginDir that has it; otherwise the path as
// written (which Slurm then fails to load).
func resolvePlugin(path string, pluginDirs []string) string {
	if filepath.IsAbs(path) {
		return path
	}
	for _, dir := range pluginDirs {
		candidate := filepath.Join(dir, path)
		if st, err := os.Stat(candidate); err == nil && st.Mode().IsRegular() {
			return candidate
		}
	}
	return path
}
