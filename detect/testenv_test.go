package detect

import (
	"github.com/spank-otel/spank-otel/internal/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// The fixtures of package internal/slurm's tests, under the short names
// that the tables here use.

const deleted = slurmtest.Deleted

var (
	jobUUID = slurmtest.JobUUID
	taskEnv = slurmtest.TaskEnv
)

func with[M ~map[string]string](m M, pairs ...string) M { return slurmtest.With(m, pairs...) }

func warningKeys(ws []libcarrier.Warning) []string {
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.Key)
	}
	return keys
}
