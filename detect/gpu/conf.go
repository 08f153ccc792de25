package gpu

import (
	"errors"
	"strconv"

	"github.com/spank-otel/spank-otel/internal/strs"
)

// autodetect is gres.conf's AutoDetect for the GPUs of this node.
type autodetect int

const (
	autoOff    autodetect = iota // unset or off: File= order
	autoNVML                     // NVML's order, PCI bus order
	autoNVIDIA                   // the driver's files, by device file name
)

// gresConf is what gres.conf says of this node's GPUs.
type gresConf struct {
	auto  autodetect
	files []string // the device files of Name=gpu, GRES index order
}

// parseGresConf reads gres.conf as slurmd does (Slurm's s_p parser and
// interfaces/gres.c), for the node named node, keeping only what names
// the GPUs' device files. Whatever it cannot read exactly as slurmd does
// (Include, MultipleFiles, a hostlist it does not know, a GPU line without
// File=) is an error, never a guess.
func parseGresConf(text []byte, node string) (gresConf, error) {
	var conf gresConf
	var lineAuto, globalAuto string
	lines := lineReader{text: text}
	for line, ok := lines.next(); ok; line, ok = lines.next() {
		var name, file, nodes, auto string
		hasFile := false
		pairs := pairReader{line: line, first: true}
		for key, value, ok := pairs.next(); ok; key, value, ok = pairs.next() {
			switch {
			case key == "":
				return conf, confError("gres.conf: ", value, "")
			case equalFold(key, "Name"):
				name = value
			case equalFold(key, "File"), equalFold(key, "Files"):
				file, hasFile = value, true
			case equalFold(key, "NodeName"):
				nodes = value
			case equalFold(key, "AutoDetect"):
				auto = value
			case equalFold(key, "MultipleFiles"):
				return conf, errors.New("gres.conf: MultipleFiles (MIG or shared devices) is not supported")
			case equalFold(key, "Include"):
				return conf, errors.New("gres.conf: Include is not supported")
			}
		}
		if nodes != "" {
			match, err := hostlistHas(nodes, node)
			if err != nil {
				return conf, confError("gres.conf: NodeName=", nodes, ": "+err.Error())
			}
			if !match {
				continue
			}
			if auto != "" {
				lineAuto = auto
			}
		} else if auto != "" {
			globalAuto = auto
		}
		if name != "gpu" {
			continue
		}
		if !hasFile {
			// Without AutoDetect such a GPU has no device file, and the
			// GRES indices of the others are slurmd's to tell.
			conf.files = append(conf.files, "")
			continue
		}
		if err := conf.addFiles(file); err != nil {
			return conf, err
		}
	}
	// A node's own AutoDetect wins over the global one (interfaces/gres.c).
	auto := globalAuto
	if lineAuto != "" {
		auto = lineAuto
	}
	switch {
	case auto == "" || equalFold(auto, "off"):
		conf.auto = autoOff
	case containsFold(auto, "nvml"):
		conf.auto = autoNVML
	case containsFold(auto, "nvidia"):
		conf.auto = autoNVIDIA
	default:
		return conf, confError("gres.conf: AutoDetect=", auto, " names no NVIDIA GPU")
	}
	if conf.auto == autoOff {
		for _, f := range conf.files {
			if f == "" {
				return conf, errors.New("gres.conf: a Name=gpu line without File=")
			}
		}
	} else {
		// slurmd merges File= lines with what it detects, and may drop
		// detected GPUs (gres_gpu.c, _merge_system_gres_conf): not
		// reproduced here.
		for _, f := range conf.files {
			if f != "" {
				return conf, errors.New("gres.conf: File= together with AutoDetect is not supported")
			}
		}
		conf.files = nil
	}
	return conf, nil
}

// addFiles appends the device files of a File= value.
//
//go:noinline
func (c *gresConf) addFiles(file string) error {
	err := hostlistEach(file, func(f string) {
		c.files = append(c.files, f)
	})
	if err != nil {
		return confError("gres.conf: File=", file, ": "+err.Error())
	}
	return nil
}

// confError is the error of a, b and c joined, built in a frame of its
// own, off the parser's (the stack rule: package taskenv).
//
//go:noinline
func confError(a, b, c string) error { return errors.New(a + b + c) }

// constrainDevices reports cgroup.conf's ConstrainDevices (default no).
func constrainDevices(text []byte) (bool, error) {
	on := false
	lines := lineReader{text: text}
	for line, ok := lines.next(); ok; line, ok = lines.next() {
		pairs := pairReader{line: line, first: true}
		for key, value, ok := pairs.next(); ok; key, value, ok = pairs.next() {
			if key == "" {
				return false, errors.New("cgroup.conf: " + value)
			}
			if equalFold(key, "ConstrainDevices") {
				switch {
				case equalFold(value, "yes") || equalFold(value, "true") || value == "1":
					on = true
				case equalFold(value, "no") || equalFold(value, "false") || value == "0":
					on = false
				default:
					return false, errors.New("cgroup.conf: ConstrainDevices=" + value)
				}
			}
		}
	}
	return on, nil
}

// lineReader reads the logical lines of a Slurm configuration file:
// comments removed, a line ending in a backslash joined to the next.
// A loop, not an iterator: the iterator's closures would nest their frames
// on the task path's stack.
type lineReader struct {
	text []byte
}

// next returns the next line that is not blank, and false at the end.
//
//go:noinline
func (r *lineReader) next() (string, bool) {
	var joined []byte
	for len(r.text) > 0 {
		end := 0
		for end < len(r.text) && r.text[end] != '\n' {
			end++
		}
		line := r.text[:end]
		if end < len(r.text) {
			end++
		}
		r.text = r.text[end:]
		if i := commentStart(line); i >= 0 {
			line = line[:i]
		}
		line = unescapeHash(trimSpace(line))
		if n := len(line); n > 0 && line[n-1] == '\\' {
			joined = append(joined, line[:n-1]...)
			joined = append(joined, ' ')
			continue
		}
		var s string
		if joined != nil {
			s = string(append(joined, line...))
			joined = nil
		} else {
			s = string(line)
		}
		if s != "" {
			return s, true
		}
	}
	if len(joined) > 0 {
		return string(joined), true
	}
	return "", false
}

// commentStart returns where a '#' that is not escaped by a backslash
// starts a comment, or -1.
func commentStart(line []byte) int {
	for i, c := range line {
		if c == '#' && (i == 0 || line[i-1] != '\\') {
			return i
		}
	}
	return -1
}

// unescapeHash turns Slurm's escaped "\#" into '#'.
func unescapeHash(line []byte) []byte {
	for i := 1; i < len(line); i++ {
		if line[i] == '#' && line[i-1] == '\\' {
			out := make([]byte, 0, len(line))
			for j := 0; j < len(line); j++ {
				if line[j] == '\\' && j+1 < len(line) && line[j+1] == '#' {
					continue
				}
				out = append(out, line[j])
			}
			return out
		}
	}
	return line
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// pairReader reads the Key=Value pairs of a line, a value in double
// quotes taken whole. A word without '=' is returned with an empty key and
// a message as its value, except Slurm's "include" directive, returned as
// the key Include; either ends the line.
type pairReader struct {
	line  string
	first bool // no pair read yet
}

// next returns the next pair, and false at the end of the line.
//
//go:noinline
func (r *pairReader) next() (key, value string, ok bool) {
	line := r.line
	for line != "" && isSpace(line[0]) {
		line = line[1:]
	}
	if line == "" {
		r.line = ""
		return "", "", false
	}
	end := 0
	for end < len(line) && !isSpace(line[end]) && line[end] != '=' {
		end++
	}
	key, line = line[:end], line[end:]
	first := r.first
	r.first = false
	if line == "" || line[0] != '=' {
		r.line = ""
		if first && equalFold(key, "include") {
			return "Include", line, true
		}
		return "", "a word without '=': " + key, true
	}
	line = line[1:]
	if line != "" && line[0] == '"' {
		end := strs.IndexByte(line[1:], '"')
		if end < 0 {
			r.line = ""
			return "", "an unterminated quote after " + key + "=", true
		}
		r.line = line[2+end:]
		return key, line[1 : 1+end], true
	}
	end = 0
	for end < len(line) && !isSpace(line[end]) {
		end++
	}
	r.line = line[end:]
	return key, line[:end], true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold reports whether ASCII a and b are equal but for case.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// containsFold reports whether ASCII s contains sub, but for case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// A hostlist is Slurm's list of names: "a,b", "pre[0-3,7]suf",
// "node[01-10]". One bracket per name is supported; slurmd accepts more
// (several dimensions), which is an error here.
type hostRange struct {
	lo, hi uint64
	width  int // digits of lo as written: zero padding
}

// hostlistEach calls f with each name of list, in the order written.
func hostlistEach(list string, f func(string)) error {
	return hostlistWalk(list, func(prefix string, ranges []hostRange, suffix string) error {
		if ranges == nil {
			f(prefix)
			return nil
		}
		for _, r := range ranges {
			if r.hi-r.lo > 4096 {
				return errors.New("a range of more than 4096 names")
			}
			for n := r.lo; n <= r.hi; n++ {
				f(prefix + pad(n, r.width) + suffix)
			}
		}
		return nil
	})
}

// hostlistHas reports whether name is one of list's names.
func hostlistHas(list, name string) (bool, error) {
	found := false
	err := hostlistWalk(list, func(prefix string, ranges []hostRange, suffix string) error {
		if ranges == nil {
			found = found || prefix == name || prefix == "ALL"
			return nil
		}
		if len(name) < len(prefix)+len(suffix) || name[:len(prefix)] != prefix || name[len(name)-len(suffix):] != suffix {
			return nil
		}
		digits := name[len(prefix) : len(name)-len(suffix)]
		n, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || !isDigits(digits) {
			return nil
		}
		for _, r := range ranges {
			if r.lo <= n && n <= r.hi && pad(n, r.width) == digits {
				found = true
			}
		}
		return nil
	})
	return found, err
}

// hostlistWalk parses list and calls f with each comma-separated element:
// a plain name (ranges nil), or prefix, bracketed ranges, suffix.
func hostlistWalk(list string, f func(prefix string, ranges []hostRange, suffix string) error) error {
	for list != "" {
		// An element ends at a comma outside brackets.
		end, depth := 0, 0
		for ; end < len(list); end++ {
			c := list[end]
			if c == '[' {
				depth++
			} else if c == ']' {
				depth--
			} else if c == ',' && depth == 0 {
				break
			}
		}
		elem := list[:end]
		if end < len(list) {
			end++
		}
		list = list[end:]
		if elem == "" {
			continue
		}
		open := strs.IndexByte(elem, '[')
		if open < 0 {
			if strs.IndexByte(elem, ']') >= 0 {
				return errors.New("an unmatched ']'")
			}
			if err := f(elem, nil, ""); err != nil {
				return err
			}
			continue
		}
		closing := strs.IndexByte(elem, ']')
		if closing < open {
			return errors.New("an unmatched '['")
		}
		prefix, inner, suffix := elem[:open], elem[open+1:closing], elem[closing+1:]
		if strs.IndexByte(suffix, '[') >= 0 || strs.IndexByte(suffix, ']') >= 0 {
			return errors.New("more than one bracket in a name")
		}
		var ranges []hostRange
		for inner != "" {
			comma := strs.IndexByte(inner, ',')
			part := inner
			if comma >= 0 {
				part, inner = inner[:comma], inner[comma+1:]
			} else {
				inner = ""
			}
			lo, hi := part, part
			if dash := strs.IndexByte(part, '-'); dash >= 0 {
				lo, hi = part[:dash], part[dash+1:]
			}
			if !isDigits(lo) || !isDigits(hi) {
				return errors.New("a range that is not decimal: " + part)
			}
			l, err1 := strconv.ParseUint(lo, 10, 64)
			h, err2 := strconv.ParseUint(hi, 10, 64)
			if err1 != nil || err2 != nil || h < l {
				return errors.New("a bad range: " + part)
			}
			ranges = append(ranges, hostRange{lo: l, hi: h, width: len(lo)})
		}
		if ranges == nil {
			return errors.New("empty brackets")
		}
		if err := f(prefix, ranges, suffix); err != nil {
			return err
		}
	}
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// pad formats n in base 10 with at least width digits.
func pad(n uint64, width int) string {
	s := strconv.FormatUint(n, 10)
	for len(s) < width {
		s = "0" + s
	}
	return s
}
