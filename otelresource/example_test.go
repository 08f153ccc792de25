package otelresource_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/otelresource"
)

func ExampleDetector() {
	// In a program: environ.List(os.Environ()).
	env := environ.Map{
		"SLURM_JOB_ID":        "12345",
		"SLURM_CLUSTER_NAME":  "cluster-a",
		"SLURM_JOB_NUM_NODES": "2",
		"SLURM_STEP_ID":       "0",
	}
	d := otelresource.NewDetector(env, otelresource.WithDetectOptions(detect.Options{
		// No nvidia-smi here: without CUDA_VISIBLE_DEVICES, no GPU count.
		CountGPUs: func() (int, bool) { return 0, false },
	}))
	res, err := resource.New(context.Background(), resource.WithDetectors(d))
	if err != nil {
		fmt.Println(err)
	}
	for _, kv := range res.Attributes() {
		if kv.Key == "host.name" || kv.Key == "process.pid" {
			continue // the machine's own
		}
		fmt.Printf("%s %s %v\n", kv.Key, kv.Value.Type(), kv.Value.AsInterface())
	}
	// Output:
	// nv.dl.job.uuid STRING be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
	// slurm.array.count INT64 1
	// slurm.array.job_id STRING 12345
	// slurm.array.task_id STRING 0
	// slurm.cluster.name STRING cluster-a
	// slurm.job.id STRING 12345
	// slurm.job.id.raw STRING 12345
	// slurm.nnodes INT64 2
	// slurm.restart_count INT64 0
	// slurm.step.id INT64 0
}

func ExampleDefaultAttributes() {
	env := environ.Map{
		"OTEL_SERVICE_NAME":        "megatron-lm",
		"OTEL_RESOURCE_ATTRIBUTES": "nv.dl.rank=5,nv.dl.world_size=8,nemo.run.id=abc123",
		"RANK":                     "0", // never read
	}
	attrs, warnings := otelresource.DefaultAttributes(otelresource.Options{Env: env, ServiceVersion: "0.1.0"})
	for _, kv := range attrs {
		fmt.Printf("%s=%v\n", kv.Key, kv.Value.AsInterface())
	}
	fmt.Println(len(warnings), "warnings")
	// Output:
	// nemo.run.id=abc123
	// nv.dl.rank=5
	// nv.dl.world_size=8
	// service.instance.id=abc123-rank5
	// service.name=megatron-lm
	// service.version=0.1.0
	// 0 warnings
}

func ExampleDefaultAttributes_missingRank() {
	// A missing rank is reported once; the run id is generated.
	_, warnings := otelresource.DefaultAttributes(otelresource.Options{
		NewRunID: func() string { return "run-1" },
	})
	for _, w := range warnings {
		fmt.Println(w.Key)
	}
	// Output:
	// nv.dl.rank
}
