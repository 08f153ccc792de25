package nodefiles_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/cgo/nodefiles"
	"github.com/spank-otel/spank-otel/detect/gpu"
)

// A record answers for its file; a name without one is read from the
// node.
func ExampleFS() {
	records := nodefiles.AppendRecord(nil, nodefiles.KindFile, "/etc/slurm/gres.conf", []byte("AutoDetect=nvidia\n"))
	records = nodefiles.AppendRecord(records, nodefiles.KindAbsent, "/etc/slurm/cgroup.conf", nil)
	files := nodefiles.New(string(records), gpu.Root("/"))

	text, _ := files.AppendFile(nil, "/etc/slurm/gres.conf")
	_, err := files.AppendFile(nil, "/etc/slurm/cgroup.conf")
	st, _ := files.Stat("/dev/null") // not recorded: this machine's
	fmt.Printf("%q\n%v\n%+v\n%s\n", text, err, st, files.Source())
	// Output:
	// "AutoDetect=nvidia\n"
	// open /etc/slurm/cgroup.conf: no such file or directory
	// {CharDevice:true Major:1 Minor:3}
	// step+node
}
