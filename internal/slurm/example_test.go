package slurm_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/internal/slurm"
	"github.com/spank-otel/spank-otel/libcarrier"
)

func ExampleVarsList() {
	// Only the variables the Slurm detector reads are kept, in a fixed
	// array: no map of the whole environment is built.
	env := slurm.VarsList([]string{
		"SLURM_JOB_ID=12345",
		"SLURM_CLUSTER_NAME=cluster-a",
		"HOME=/home/alice",
		"SLURM_JOB_ID=99999", // the first occurrence wins, as for getenv
	})
	fmt.Println(env.Lookup("SLURM_JOB_ID"))
	fmt.Println(env.Lookup("HOME"))
	attrs, _ := slurm.Strings(&env)
	fmt.Println(attrs["nv.dl.job.uuid"])
	// Output:
	// 12345 true
	//  false
	// be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
}

func ExampleAppendStrings() {
	env := slurm.VarsList([]string{
		"SLURM_JOB_ID=12345",
		"SLURM_CLUSTER_NAME=cluster-a",
		"SLURM_STEP_ID=0",
		"OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=pretrain,team=ml",
	})
	text, _ := env.Lookup(libcarrier.EnvVar)
	var buf [16]libcarrier.KeyValue
	inherited, _ := libcarrier.AppendParse(buf[:0], text)
	var out [23]libcarrier.KeyValue
	attrs, _ := slurm.AppendStrings(out[:0], &env, inherited)
	for _, kv := range attrs {
		fmt.Printf("%s=%s\n", kv.Key, kv.Value)
	}
	// Output:
	// nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
	// slurm.array.count=1
	// slurm.array.job_id=12345
	// slurm.array.task_id=0
	// slurm.cluster.name=cluster-a
	// slurm.job.id=12345
	// slurm.job.id.raw=12345
	// slurm.job.name=pretrain
	// slurm.restart_count=0
}
