package detect_test

import (
	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
)

// The fixtures of the Slurm detector's tests, under the short names
// that the tables here use.

const deleted = slurmtest.Deleted

var (
	jobUUID = slurmtest.JobUUID
	taskEnv = slurmtest.TaskEnv
)

var warningKeys = slurmtest.WarningKeys

func with[M ~map[string]string](m M, pairs ...string) M { return slurmtest.With(m, pairs...) }
