package taskenv_test

import (
	"fmt"
	"strings"

	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/taskenv"
)

func ExampleRun() {
	// The plugin's call for task 0 of step 1, whose node has no NVIDIA
	// driver: the task names no GPUs, so the search reads nothing.
	step := uint32(1)
	res := taskenv.Run(&taskenv.Request{
		Env:     []string{"SLURM_JOB_ID=7", "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURMD_NODENAME=c1"},
		Node:    gpu.Root("/"),
		Options: taskenv.Options{Step: &step, Ranks: true},
	})
	fmt.Println(res.Value)
	// Output:
	// nv.dl.job.uuid=f9f08413-8d27-50e7-bbee-41ce6d4a3c5a,nv.dl.local_rank=0,nv.dl.rank=0,slurm.array.count=1,slurm.array.job_id=7,slurm.array.task_id=0,slurm.job.id=7,slurm.job.id.raw=7,slurm.node.name=c1,slurm.restart_count=0,slurm.step.id=1,slurm.task.id=0,slurm.task.local_id=0
}

func ExampleCompute() {
	// Task 1 of step 3, with the step id Slurm gave the plugin.
	env := []string{
		"SLURM_JOB_ID=12345",
		"SLURM_CLUSTER_NAME=cluster-a",
		"SLURM_NTASKS=2",
		"SLURM_STEP_NUM_TASKS=2",
		"SLURM_PROCID=1",
		"SLURM_LOCALID=0",
		"SLURMD_NODENAME=c2",
		"OTEL_RESOURCE_ATTRIBUTES=service.name=train,team=ml%2Cinfra",
	}
	step := uint32(3)
	res := taskenv.Compute(env, taskenv.Options{Step: &step, Exclude: []string{"slurm.restart_count"}})
	fmt.Println(res.Changed)
	fmt.Println(res.Value)
	// Output:
	// true
	// nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,service.name=train,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.node.name=c2,slurm.ntasks=2,slurm.step.id=3,slurm.step.ntasks=2,slurm.task.id=1,slurm.task.local_id=0,team=ml%2Cinfra
}

func ExampleCompute_unchanged() {
	// Outside Slurm the carrier is left exactly as it was.
	res := taskenv.Compute([]string{"OTEL_RESOURCE_ATTRIBUTES=a=1 , b=2"}, taskenv.Options{})
	fmt.Println(res.Changed)
	// Output:
	// false
}

func ExampleCompute_repair() {
	// One entry without '=' costs only that entry.
	env := []string{
		"SLURM_JOB_ID=12345",
		"SLURM_CLUSTER_NAME=cluster-a",
		"SLURM_STEP_ID=0",
		"OTEL_RESOURCE_ATTRIBUTES=team=ml,stray",
	}
	res := taskenv.Compute(env, taskenv.Options{Exclude: []string{"slurm.restart_count"}})
	fmt.Println(res.Dropped)
	fmt.Println(res.Value)
	// Output:
	// [entry "stray" has no '=': dropped]
	// nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.step.id=0,team=ml
}

func ExampleRunner() {
	// A process that answers the tasks of a step one after another (the
	// step's helper) runs them in one Runner: each Result is valid until
	// the next Run.
	var r taskenv.Runner
	for _, task := range []string{"0", "1"} {
		res := r.Run(&taskenv.Request{Env: []string{"SLURM_JOB_ID=7", "SLURM_STEP_ID=1", "SLURM_PROCID=" + task}})
		fmt.Println(strings.Contains(res.Value, "slurm.task.id="+task))
	}
	// Output:
	// true
	// true
}
