package uuidderive_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/uuidderive"
)

func ExampleJobUUID() {
	task := environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345"}
	fmt.Println(uuidderive.JobName(task))
	fmt.Println(uuidderive.JobUUID(task))
	// Output:
	// nemo.lens.job/cluster-a/12345
	// be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
}

func ExampleJobUUID_array() {
	// Every element of array job 100 shares the job UUID of job 100.
	element := environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "103",
		"SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "3"}
	fmt.Println(uuidderive.JobName(element))
	// Output:
	// nemo.lens.job/cluster-a/100
}

func ExampleRunUUID() {
	task := environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345", "SLURM_RESTART_COUNT": "1"}
	name, _ := uuidderive.RunName(task, "")
	u, ok := uuidderive.RunUUID(task, "")
	fmt.Println(name)
	fmt.Println(u, ok)
	// Output:
	// nemo.lens.run/cluster-a/12345/sr1
	// be42db52-ed95-5653-b035-190f2392e702 true
}

func ExampleRunName_local() {
	// Outside Slurm a run id is needed: the argument, else TORCHELASTIC_RUN_ID.
	fmt.Println(uuidderive.RunName(environ.Map{"TORCHELASTIC_RESTART_COUNT": "2"}, "exp-7"))
	fmt.Println(uuidderive.RunName(environ.Map{}, ""))
	// Output:
	// nemo.lens.run/local/exp-7/te2 true
	//  false
}

func ExampleJobVars() {
	vars := uuidderive.JobVars{Cluster: "cluster-a", JobID: "12345"}
	fmt.Println(vars.UUID())
	// Output: be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
}
