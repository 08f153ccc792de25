package slurm_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

func ExampleStrings() {
	// The environment of one task of step 0 of job 12345, given explicitly.
	task := environ.List([]string{
		"SLURM_JOB_ID=12345",
		"SLURM_CLUSTER_NAME=cluster-a",
		"SLURM_JOB_NUM_NODES=2",
		"SLURM_NTASKS=+08",
		"SLURM_STEP_ID=0",
		"SLURMD_NODENAME=c1", // not the head node: this is a step
		"OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=pretrain%2C%20v2,service.name=ignored",
	})
	attrs, warnings := slurm.Strings(task)
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		fmt.Printf("%s=%s\n", k, attrs[k])
	}
	fmt.Println(len(warnings), "warnings")
	// Output:
	// nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
	// slurm.array.count=1
	// slurm.array.job_id=12345
	// slurm.array.task_id=0
	// slurm.cluster.name=cluster-a
	// slurm.job.id=12345
	// slurm.job.id.raw=12345
	// slurm.job.name=pretrain, v2
	// slurm.nnodes=2
	// slurm.node.name=c1
	// slurm.ntasks=8
	// slurm.restart_count=0
	// slurm.step.id=0
	// 0 warnings
}

func ExampleDetect() {
	element := environ.Map{
		"SLURM_JOB_ID":           "103",
		"SLURM_ARRAY_JOB_ID":     "100",
		"SLURM_ARRAY_TASK_ID":    "3",
		"SLURM_ARRAY_TASK_COUNT": "4",
		"SLURM_NNODES":           "many",
	}
	attrs, warnings := slurm.Detect(element)
	fmt.Printf("%v %T\n", attrs["slurm.job.id"], attrs["slurm.job.id"])
	fmt.Printf("%v %T\n", attrs["slurm.array.count"], attrs["slurm.array.count"])
	fmt.Println(warnings)
	// Output:
	// 100_3 string
	// 4 int64
	// [key "slurm.nnodes": SLURM_NNODES="many" is not an integer: omitted]
}

func ExampleIsKey() {
	for _, k := range []string{"slurm.job.id", "nv.dl.run.uuid", "slurm.nodelist", "nv.dl.rank"} {
		fmt.Println(k, slurm.IsKey(k))
	}
	// Output:
	// slurm.job.id true
	// nv.dl.run.uuid true
	// slurm.nodelist false
	// nv.dl.rank false
}

func ExampleVars_ReadList() {
	// Only the variables the Slurm detector reads are kept, in a fixed
	// array: no map of the whole environment is built.
	var env slurm.Vars
	env.ReadList([]string{
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

func ExampleTask_AppendStrings() {
	// Task 3 of step 2, as the plugin sees it: the step id is Slurm's,
	// and ranks were asked for.
	task := slurm.Task{Ranks: true}
	task.Vars.ReadList([]string{
		"SLURM_JOB_ID=12345",
		"SLURM_CLUSTER_NAME=cluster-a",
		"SLURM_STEP_ID=0", // the variable; SetStep overrides it
		"SLURM_PROCID=3",
		"SLURM_LOCALID=1",
		"SLURM_STEP_NUM_TASKS=4",
		"OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=pretrain,team=ml,nv.dl.rank=0",
	})
	task.Vars.SetStep(2)
	text, _ := task.Vars.Lookup(libcarrier.EnvVar)
	var buf [16]libcarrier.KeyValue
	inherited, _ := libcarrier.AppendParse(buf[:0], text)
	var out [slurm.NumKeys]libcarrier.KeyValue
	attrs, _ := task.AppendStrings(out[:0], inherited)
	for _, kv := range attrs {
		fmt.Printf("%s=%s\n", kv.Key, kv.Value)
	}
	// Output:
	// nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
	// nv.dl.local_rank=1
	// nv.dl.rank=3
	// nv.dl.world_size=4
	// slurm.array.count=1
	// slurm.array.job_id=12345
	// slurm.array.task_id=0
	// slurm.cluster.name=cluster-a
	// slurm.job.id=12345
	// slurm.job.id.raw=12345
	// slurm.job.name=pretrain
	// slurm.restart_count=0
	// slurm.step.id=2
	// slurm.step.ntasks=4
	// slurm.task.id=3
	// slurm.task.local_id=1
}
