package gpu

import (
	"errors"
	"syscall"
)

// FS is what [Find] reads of a node's file system. Names are absolute
// ("/etc/slurm/gres.conf"), as the task would see them.
type FS interface {
	// AppendFile appends the contents of the named file to dst and
	// returns the extended buffer. Find reads every file into one
	// buffer, which on the task path spares a fresh page per file.
	AppendFile(dst []byte, name string) ([]byte, error)
	// ReadDir returns the names of the entries of the named directory,
	// "." and ".." excluded, in any order.
	ReadDir(name string) ([]string, error)
	// Stat describes the named file, following links, without opening
	// it: opening a GPU's device node may initialise the GPU.
	Stat(name string) (Stat, error)
	// Usable reports whether the task may read and write the named device
	// node, as access(2) answers in the task's cgroups: the mode bits,
	// then the kernel's device controller (cgroup v1's list, cgroup v2's
	// BPF program), without opening it. An FS that cannot tell (a copy
	// of a node has no device cgroup) returns [ErrNoOracle].
	Usable(name string) (bool, error)
}

// ErrNoOracle is the error of an [FS] whose Usable cannot tell which
// devices the task may use.
var ErrNoOracle = errors.New("no device cgroup to ask")

// Stat is what [FS.Stat] tells of a file.
type Stat struct {
	CharDevice   bool   // a character device node
	Major, Minor uint32 // its device number, when CharDevice
}

// ErrNotExist is the error, or wraps the error, an [FS] returns for a
// file that does not exist. Find tells it apart from other errors only for
// the files whose absence has a meaning (cgroup.conf, fake_gpus.conf).
var ErrNotExist = errors.New("file does not exist")

// Root returns the FS of this machine below the directory dir: Root("/")
// is the node itself, Root("/srv/copy") a copy of a node's files (for
// spank-otel task-env --root). It reads with system calls only, so that
// the per-task library links no os package.
func Root(dir string) FS {
	for len(dir) > 1 && dir[len(dir)-1] == '/' {
		dir = dir[:len(dir)-1]
	}
	if dir == "/" {
		dir = ""
	}
	// A string, "" for "/": the conversion to FS then allocates nothing
	// on the task path.
	return rootFS(dir)
}

// rootFS is the directory the names are below, "" for "/".
type rootFS string

// PathError is the error of one system call on one file, as an [FS]
// reports it: [Root]'s, and an FS answering from records of a node's
// files (package cgo/nodefiles) for a file recorded as absent, worded as
// the node's own would be.
type PathError struct {
	Op, Name string
	Errno    syscall.Errno
}

func (e *PathError) Error() string { return e.Op + " " + e.Name + ": " + e.Errno.Error() }

// Is makes errors.Is(err, ErrNotExist) hold for ENOENT and ENOTDIR.
func (e *PathError) Is(target error) bool { return target == ErrNotExist && e.notExist() }

func (e *PathError) notExist() bool { return e.Errno == syscall.ENOENT || e.Errno == syscall.ENOTDIR }

func (e *PathError) Unwrap() error { return e.Errno }

// notExist is errors.Is(err, ErrNotExist), with a *PathError told by its
// type first: errors.Is asks for an interface of the error's dynamic type,
// which the runtime builds on first use, a fresh page in a new helper
// (about 2 faults, each tens of microseconds in a virtual machine), and a
// task given GPUs meets an absent file on every search (fake_gpus.conf).
func notExist(err error) bool {
	if e, ok := err.(*PathError); ok {
		return e.notExist()
	}
	return errors.Is(err, ErrNotExist)
}

// wrap is err of the system call op on the file name, a *PathError when
// it is an errno. Its own frame keeps the error off the callers'
// (the stack rule: package taskenv).
//
//go:noinline
func wrap(op, name string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		return &PathError{Op: op, Name: name, Errno: errno}
	}
	return err
}

// Usable asks the kernel by path, with the caller's real ids (the helper
// has the job's). A copy of a node (Root of a directory) has no device
// cgroup of its own: ErrNoOracle.
func (r rootFS) Usable(name string) (bool, error) {
	if r != "" {
		return false, ErrNoOracle
	}
	return usable(name)
}

//go:noinline
func usable(name string) (bool, error) {
	const rw = 4 | 2 // R_OK | W_OK
	for {
		switch err := syscall.Faccessat(_AT_FDCWD, name, rw, 0); err {
		case nil:
			return true, nil
		case syscall.EINTR:
			continue
		case syscall.EACCES, syscall.EPERM, syscall.ENOENT, syscall.ENOTDIR:
			return false, nil
		default:
			return false, wrap("access", name, err)
		}
	}
}

// _AT_FDCWD is the kernel's AT_FDCWD: names relative to the working
// directory (every name here is absolute).
const _AT_FDCWD = -100

// maxFile bounds what AppendFile reads: gres.conf and the driver's files
// are a few KiB, and the step's helper must not read a huge file.
const maxFile = 1 << 20

func (r rootFS) AppendFile(dst []byte, name string) ([]byte, error) {
	path := string(r) + name
	fd, err := open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK)
	if err != nil {
		return dst, wrap("open", path, err)
	}
	defer syscall.Close(fd)
	// O_NONBLOCK and this check keep a FIFO or device put in place of a
	// configuration file from blocking or being read.
	size, err := regularSize(fd, path)
	if err != nil {
		return dst, err
	}
	if size > maxFile {
		return dst, tooLarge(path)
	}
	// A file on disk says its size, and is read whole when that many
	// bytes have come: one read(2), not two. Files in /proc say 0 and
	// are read to the end.
	start := len(dst)
	if free := cap(dst) - start; free < int(size)+1 || free < 512 {
		grown := make([]byte, start, start+max(int(size)+1, 4096))
		copy(grown, dst)
		dst = grown
	}
	for {
		if len(dst) == cap(dst) {
			if len(dst)-start >= maxFile {
				return dst[:start], tooLarge(path)
			}
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := syscall.Read(fd, dst[len(dst):cap(dst)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return dst[:start], wrap("read", path, err)
		}
		dst = dst[:len(dst)+n]
		if n == 0 || size > 0 && int64(len(dst)-start) == size {
			return dst, nil
		}
	}
}

// tooLarge is AppendFile's error for a file over maxFile. Its own frame
// holds the formatting, off the reading loop's (the stack rule: package taskenv).
//
//go:noinline
func tooLarge(path string) error { return errors.New(path + ": larger than 1 MiB") }

// regularSize returns the size of fd, an error unless it is a regular
// file. Its own frame holds the stat buffer, off the reading loop's.
//
//go:noinline
func regularSize(fd int, path string) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, wrap("fstat", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0, errors.New(path + ": not a regular file")
	}
	return st.Size, nil
}

func (r rootFS) ReadDir(name string) ([]string, error) {
	path := string(r) + name
	fd, err := open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY)
	if err != nil {
		return nil, wrap("open", path, err)
	}
	defer syscall.Close(fd)
	var names []string
	buf := direntBuffer()
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, wrap("getdents", path, err)
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

// direntBuffer returns a buffer for getdents on the heap, not the
// stack (the stack rule: package taskenv).
//
//go:noinline
func direntBuffer() []byte { return make([]byte, 4096) }

func (r rootFS) Stat(name string) (Stat, error) {
	path := string(r) + name
	var st syscall.Stat_t
	for {
		err := syscall.Stat(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return Stat{}, wrap("stat", path, err)
		}
		break
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		return Stat{}, nil
	}
	return Stat{CharDevice: true, Major: devMajor(st.Rdev), Minor: devMinor(st.Rdev)}, nil
}

func open(path string, mode int) (int, error) {
	for {
		fd, err := syscall.Open(path, mode, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// devMajor and devMinor split a Linux dev_t as glibc's major(3) and
// minor(3) do.
func devMajor(dev uint64) uint32 {
	return uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff)
}

func devMinor(dev uint64) uint32 {
	return uint32(dev&0xff) | uint32((dev>>12)&^0xff)
}
