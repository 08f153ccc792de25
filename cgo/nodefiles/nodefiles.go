// Package nodefiles reads the records of a node's files that the SPANK
// plugin's step parent makes once per step (cgo/contract.h, SO_NODE_*),
// as the [gpu.FS] a task's GPU search reads: the step's helper then makes
// no system call for the files they hold.
//
// A record holds one name's answer: a file's contents, a directory's
// entries, a device's number, or that the name does not exist. A question
// the records do not answer goes to the node, so a record left out costs
// time, never a result.
package nodefiles

import (
	"errors"
	"syscall"

	"github.com/spank-otel/spank-otel/detect/gpu"
)

// The kinds of record, contract.h's SO_NODE_* (cgo's TestContractCopies
// holds them equal).
const (
	KindFile    = 'f' // a regular file: its contents
	KindDir     = 'd' // a directory: its entries' names, each followed by a NUL
	KindCharDev = 'c' // a character device: major and minor, uint32 each
	KindOther   = 'o' // exists, and is no character device
	KindAbsent  = 'n' // does not exist
	// KindStalled is the only record of a step whose reading did not
	// finish within the plugin's timeout: the name it was reading. The
	// node is then never asked: its read would block as the step
	// parent's did.
	KindStalled = 's'
)

// FS answers from the records and asks the node for the rest. It counts
// both, for the helper's debug line. Its methods are not safe for
// concurrent use.
type FS struct {
	records string
	node    gpu.FS
	stalled string // the name a stalled reading blocked on, or ""
	// With fromTask, Usable answers from the task's own answers
	// (TaskAnswers), never the node.
	fromTask              bool
	taskAsked, taskUsable [4]uint64
	// Answered counts the questions the records answered, Asked those
	// passed to the node.
	Answered, Asked int
}

// New returns the FS of records, which it borrows (the plugin's are C
// memory that outlives the call), over node.
func New(records string, node gpu.FS) *FS {
	f := &FS{records: records, node: node}
	if len(records) > 1 && records[0] == KindStalled {
		end := 1
		for end < len(records) && records[end] != 0 {
			end++
		}
		f.stalled = records[1:end]
	}
	return f
}

// ErrStalled is wrapped by the error of every question asked of records
// whose reading stalled ([KindStalled]).
var ErrStalled = errors.New("the step's reading of the node's files did not finish")

// stalledError is the answer to every question of a stalled step.
type stalledError struct{ op, name, stalled string }

// Is makes errors.Is(err, ErrStalled) hold.
func (e *stalledError) Is(target error) bool { return target == ErrStalled }

func (e *stalledError) Error() string {
	return e.op + " " + e.name + ": not read: when the step started, reading " + e.stalled +
		" did not finish within the plugin's timeout (a wedged GPU driver or a hung file system?)"
}

// stall answers a question of a stalled step.
//
//go:noinline
func (f *FS) stall(op, name string) error {
	f.Answered++
	return &stalledError{op, name, f.stalled}
}

// lookup returns the record of name. Records are read in order, and a
// damaged one ends them: what follows is asked of the node. Not inlined:
// its frame is gone by the time a method asks the node, whose frames
// follow on the task path's stack (the stack rule: package taskenv).
//
//go:noinline
func (f *FS) lookup(name string) (kind byte, data string, ok bool) {
	rest := f.records
	for len(rest) > 0 {
		kind = rest[0]
		end := 1
		for end < len(rest) && rest[end] != 0 {
			end++
		}
		// The length is in the byte order of the machine: both that
		// the plugin builds for (x86_64, aarch64) are little-endian.
		if end+5 > len(rest) {
			return 0, "", false
		}
		n := int(uint32(rest[end+1]) | uint32(rest[end+2])<<8 | uint32(rest[end+3])<<16 | uint32(rest[end+4])<<24)
		start := end + 5
		if n < 0 || n > len(rest)-start {
			return 0, "", false
		}
		if rest[1:end] == name {
			return kind, rest[start : start+n], true
		}
		rest = rest[start+n:]
	}
	return 0, "", false
}

// absent is the error for a name recorded as absent, worded as the
// node's own (gpu.Root's) for the same name. Its own frame holds the
// allocation, off the methods' (the stack rule: package taskenv).
//
//go:noinline
func absent(op, name string) error {
	return &gpu.PathError{Op: op, Name: name, Errno: syscall.ENOENT}
}

// errDamaged is the answer for a device record of the wrong size.
var errDamaged = errors.New("nodefiles: damaged device record")

// AppendFile implements [gpu.FS].
func (f *FS) AppendFile(dst []byte, name string) ([]byte, error) {
	if f.stalled != "" {
		return dst, f.stall("open", name)
	}
	if kind, data, _ := f.lookup(name); kind == KindFile || kind == KindAbsent {
		return f.appendRecord(dst, name, kind, data)
	}
	f.Asked++
	return f.node.AppendFile(dst, name)
}

// The methods answer from a record in a function of their own, so that
// what they hold while the node answers is small: the node's frames
// follow theirs on the task path's stack (the stack rule: package taskenv).

//go:noinline
func (f *FS) appendRecord(dst []byte, name string, kind byte, data string) ([]byte, error) {
	f.Answered++
	if kind == KindAbsent {
		return dst, absent("open", name)
	}
	return append(dst, data...), nil
}

// ReadDir implements [gpu.FS].
func (f *FS) ReadDir(name string) ([]string, error) {
	if f.stalled != "" {
		return nil, f.stall("open", name)
	}
	if kind, data, _ := f.lookup(name); kind == KindDir || kind == KindAbsent {
		return f.readDirRecord(name, kind, data)
	}
	f.Asked++
	return f.node.ReadDir(name)
}

//go:noinline
func (f *FS) readDirRecord(name string, kind byte, data string) ([]string, error) {
	f.Answered++
	if kind == KindAbsent {
		return nil, absent("open", name)
	}
	n := 0
	for i := 0; i < len(data); i++ {
		if data[i] == 0 {
			n++
		}
	}
	names := make([]string, 0, n)
	for start, i := 0, 0; i < len(data); i++ {
		if data[i] == 0 {
			names = append(names, data[start:i])
			start = i + 1
		}
	}
	return names, nil
}

// Stat implements [gpu.FS].
func (f *FS) Stat(name string) (gpu.Stat, error) {
	if f.stalled != "" {
		return gpu.Stat{}, f.stall("stat", name)
	}
	if kind, data, ok := f.lookup(name); ok {
		return f.statRecord(name, kind, data)
	}
	f.Asked++
	return f.node.Stat(name)
}

//go:noinline
func (f *FS) statRecord(name string, kind byte, data string) (gpu.Stat, error) {
	f.Answered++
	switch kind {
	case KindCharDev:
		if len(data) != 8 {
			return gpu.Stat{}, errDamaged
		}
		return gpu.Stat{CharDevice: true, Major: le32(data[:4]), Minor: le32(data[4:])}, nil
	case KindAbsent:
		return gpu.Stat{}, absent("stat", name)
	}
	return gpu.Stat{}, nil
}

// TaskAnswers gives f the task's own answers to "may I read and write
// /dev/nvidia<N>?" for N below 256, as the plugin asks them in the task
// (contract.h, SO_REQ_DEVICES): bit N%64 of asked[N/64] says the task
// asked of /dev/nvidia<N>, the same bit of usable what it was told. From
// then on Usable answers from them and never asks the node: a helper
// that is not in the task's cgroups would get its own answer, not the
// task's.
func (f *FS) TaskAnswers(asked, usable [4]uint64) {
	f.fromTask, f.taskAsked, f.taskUsable = true, asked, usable
}

// Usable implements [gpu.FS]. With the task's answers ([FS.TaskAnswers])
// it gives the task's answer for a GPU's device node /dev/nvidia<N> the
// task asked of; one it did not ask of has no device node on the node
// (the plugin asks of every /dev/nvidia<N> the step's records hold), which
// no task can use, as access(2) would say; any other name, or N of 256 or
// more, gets [gpu.ErrNoOracle]: the GPU search then decides as for a node
// without a device cgroup. Without
// them it gives the node's answer, in the process that asks (the task's
// own helper, in the task's cgroups); the records, made in the step
// parent, cannot hold it. It is not counted: no file is read.
func (f *FS) Usable(name string) (bool, error) {
	if f.stalled != "" {
		return false, f.stall("access", name)
	}
	if f.fromTask {
		return f.taskAnswer(name)
	}
	return f.node.Usable(name)
}

// taskAnswer is Usable from the task's answers.
func (f *FS) taskAnswer(name string) (bool, error) {
	n, ok := nvidiaMinor(name)
	if !ok {
		return false, gpu.ErrNoOracle
	}
	word, bit := n/64, uint64(1)<<(n%64)
	return f.taskAsked[word]&bit != 0 && f.taskUsable[word]&bit != 0, nil
}

// nvidiaMinor returns N of a name "/dev/nvidia<N>", N in decimal as the
// GPU search writes it (no leading zero but for "0"), when N is below
// 256, the minors the task's answers can hold.
func nvidiaMinor(name string) (int, bool) {
	const prefix = "/dev/nvidia"
	if len(name) <= len(prefix) || len(name) > len(prefix)+3 || name[:len(prefix)] != prefix {
		return 0, false
	}
	digits := name[len(prefix):]
	if digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n < 256
}

func le32(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// Source says where the files of one search came from, for the helper's
// debug line: "none" (no file was read: a task without GPUs), "step" (all
// from the records), "node" (all from the node), "step+node", or
// "stalled" (the step's reading did not finish: nothing was read).
func (f *FS) Source() string {
	switch {
	case f.Answered == 0 && f.Asked == 0:
		return "none"
	case f.stalled != "":
		return "stalled"
	case f.Asked == 0:
		return "step"
	case f.Answered == 0:
		return "node"
	}
	return "step+node"
}

// AppendRecord appends one record to dst, as the plugin's step parent
// writes it (contract.h): for tests, and for tools that record a node.
func AppendRecord(dst []byte, kind byte, name string, data []byte) []byte {
	dst = append(dst, kind)
	dst = append(dst, name...)
	n := uint32(len(data))
	dst = append(dst, 0, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(dst, data...)
}
