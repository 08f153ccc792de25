package otelresource

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

func fixedRunID() string { return "gen-1" }

func TestDefaultAttributes(t *testing.T) {
	const carrier = libcarrier.EnvVar
	rankMissing := []string{"nv.dl.rank"}
	tests := []struct {
		name  string
		opts  Options
		want  map[string]any
		warns []string // warning keys, in order
	}{
		{"nothing given", Options{},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1"}, rankMissing},
		{"service name from OTEL_SERVICE_NAME", Options{Env: environ.Map{"OTEL_SERVICE_NAME": " svc "}},
			map[string]any{"service.name": "svc", "nemo.run.id": "gen-1"}, rankMissing},
		{"blank OTEL_SERVICE_NAME is ignored", Options{Env: environ.Map{"OTEL_SERVICE_NAME": " "}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1"}, rankMissing},
		{"OTEL_SERVICE_NAME beats the carrier", Options{Env: environ.Map{"OTEL_SERVICE_NAME": "svc", carrier: "service.name=inh"}},
			map[string]any{"service.name": "svc", "nemo.run.id": "gen-1"}, rankMissing},
		{"service name from the carrier", Options{Env: environ.Map{carrier: "service.name=inh"}},
			map[string]any{"service.name": "inh", "nemo.run.id": "gen-1"}, rankMissing},
		{"caller's service name beats OTEL_SERVICE_NAME",
			Options{Env: environ.Map{"OTEL_SERVICE_NAME": "svc"}, Attributes: map[string]any{"service.name": "mine"}},
			map[string]any{"service.name": "mine", "nemo.run.id": "gen-1"}, rankMissing},
		{"ServiceName beats everything",
			Options{ServiceName: "opt", Env: environ.Map{"OTEL_SERVICE_NAME": "svc"}, Attributes: map[string]any{"service.name": "mine"}},
			map[string]any{"service.name": "opt", "nemo.run.id": "gen-1"}, rankMissing},
		{"version, user and run id", Options{ServiceVersion: "1.2.3", User: "my-team", RunID: "abc123"},
			map[string]any{"service.name": "nemo", "service.version": "1.2.3", "nemo.user.id": "my-team", "nemo.run.id": "abc123"}, rankMissing},
		{"run id from the carrier", Options{Env: environ.Map{carrier: "nemo.run.id=exp%2F2026-01%2Cseed%3D7"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "exp/2026-01,seed=7"}, rankMissing},
		{"RunID beats the carrier", Options{RunID: "r", Env: environ.Map{carrier: "nemo.run.id=inh"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "r"}, rankMissing},
		{"deployment environment from DEPLOYMENT_ENV", Options{Env: environ.Map{"DEPLOYMENT_ENV": "production", "ENVIRONMENT": "BATCH"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "deployment.environment": "production"}, rankMissing},
		{"deployment environment from ENVIRONMENT", Options{Env: environ.Map{"DEPLOYMENT_ENV": "", "ENVIRONMENT": "staging"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "deployment.environment": "staging"}, rankMissing},
		{"ENVIRONMENT=BATCH inside a Slurm job is Slurm's, not a deployment",
			Options{Env: environ.Map{"SLURM_JOB_ID": "7", "ENVIRONMENT": "BATCH"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1"}, rankMissing},
		{"ENVIRONMENT=BATCH inside a Slurm job leaves the carrier's",
			Options{Env: environ.Map{"SLURM_JOB_ID": "7", "ENVIRONMENT": "BATCH", carrier: "deployment.environment=inh"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "deployment.environment": "inh"}, rankMissing},
		{"ENVIRONMENT=BATCH outside Slurm counts",
			Options{Env: environ.Map{"SLURM_JOB_ID": "", "ENVIRONMENT": "BATCH"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "deployment.environment": "BATCH"}, rankMissing},
		{"another ENVIRONMENT inside a Slurm job counts",
			Options{Env: environ.Map{"SLURM_JOB_ID": "7", "ENVIRONMENT": "staging"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "deployment.environment": "staging"}, rankMissing},
		{"deployment environment variable beats the carrier",
			Options{Env: environ.Map{"DEPLOYMENT_ENV": "production", carrier: "deployment.environment=inh"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "deployment.environment": "production"}, rankMissing},

		// Rank and instance id.
		{"rank from the caller", Options{Attributes: map[string]any{"nv.dl.rank": 3, "nv.dl.world_size": "8"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(3), "nv.dl.world_size": int64(8),
				"service.instance.id": "gen-1-rank3"}, nil},
		{"rank from the carrier", Options{Env: environ.Map{carrier: "nv.dl.rank=5,nv.dl.world_size=8,nemo.run.id=abc123"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "abc123", "nv.dl.rank": int64(5), "nv.dl.world_size": int64(8),
				"service.instance.id": "abc123-rank5"}, nil},
		{"caller's rank beats the carrier", Options{Env: environ.Map{carrier: "nv.dl.rank=5"}, Attributes: map[string]any{"nv.dl.rank": "+02"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(2), "service.instance.id": "gen-1-rank2"}, nil},
		{"rank is never read from RANK, WORLD_SIZE or SLURM_PROCID",
			Options{Env: environ.Map{"RANK": "3", "WORLD_SIZE": "8", "SLURM_PROCID": "3", "LOCAL_RANK": "3"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1"}, rankMissing},
		{"explicit instance id suppresses the warning", Options{ServiceInstanceID: "agent-c1"},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "service.instance.id": "agent-c1"}, nil},
		{"explicit instance id beats the rank", Options{ServiceInstanceID: "agent-c1", Attributes: map[string]any{"nv.dl.rank": 1}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "service.instance.id": "agent-c1", "nv.dl.rank": int64(1)}, nil},
		{"instance id from the caller's attributes", Options{Attributes: map[string]any{"service.instance.id": "x"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "service.instance.id": "x"}, nil},
		{"instance id from the carrier", Options{Env: environ.Map{carrier: "service.instance.id=sidecar"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "service.instance.id": "sidecar"}, nil},
		{"empty instance id is not explicit", Options{Env: environ.Map{carrier: "service.instance.id=,nv.dl.rank=0"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "service.instance.id": "gen-1-rank0", "nv.dl.rank": int64(0)}, nil},
		{"an empty rank from the caller is missing, reported once", Options{Attributes: map[string]any{"nv.dl.rank": ""}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": ""}, rankMissing},
		{"an empty rank in the carrier is missing, reported once", Options{Env: environ.Map{carrier: "nv.dl.rank="}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": ""}, rankMissing},
		{"invalid rank stays a string and derives nothing", Options{Env: environ.Map{carrier: "nv.dl.rank=first"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": "first"}, []string{"nv.dl.rank"}},
		{"rank of another type", Options{Attributes: map[string]any{"nv.dl.rank": 1.5}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": 1.5}, []string{"nv.dl.rank"}},

		// The rest of the attributes.
		{"integer keys are typed, others are not",
			Options{Env: environ.Map{carrier: "nv.dl.topology.size.tp=+02,megatron.num_layers=32,nv.gpu.index=007,nv.dl.world_size=eight"},
				Attributes: map[string]any{"dl.tensor_parallel.size": 4, "nv.dl.rank": 0, "megatron.precision": "bf16", "flag": true}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(0), "service.instance.id": "gen-1-rank0",
				"nv.dl.topology.size.tp": int64(2), "megatron.num_layers": "32", "nv.gpu.index": int64(7), "nv.dl.world_size": "eight",
				"dl.tensor_parallel.size": int64(4), "megatron.precision": "bf16", "flag": true},
			[]string{"nv.dl.world_size"}},
		{"inherited Slurm keys are left to the detector",
			Options{Env: environ.Map{carrier: "slurm.nnodes=2,slurm.ntasks=x,slurm.job.name=,nv.dl.job.uuid=U,nv.dl.run.uuid=R,slurm.nodelist=c1,nv.dl.rank=0"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(0), "service.instance.id": "gen-1-rank0",
				"slurm.nodelist": "c1"}, nil},
		{"the caller's Slurm keys are kept",
			Options{Attributes: map[string]any{"slurm.nnodes": "3", "slurm.ntasks": "x", "nv.dl.rank": 0}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(0), "service.instance.id": "gen-1-rank0",
				"slurm.nnodes": int64(3)}, []string{"slurm.ntasks"}},
		{"caller's nil removes an inherited key", Options{Env: environ.Map{carrier: "team=a,nemo.user.id=u"}, Attributes: map[string]any{"team": nil, "nemo.user.id": nil, "nv.dl.rank": 1}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(1), "service.instance.id": "gen-1-rank1"}, nil},
		{"unsupported caller values are dropped", Options{Attributes: map[string]any{"b": []byte("x"), "a": struct{}{}, "": "e", "nv.dl.rank": 1}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(1), "service.instance.id": "gen-1-rank1"},
			[]string{"", "a", "b"}},
		{"carrier parse warnings", Options{Env: environ.Map{carrier: "broken,nv.dl.rank=1"}},
			map[string]any{"service.name": "nemo", "nemo.run.id": "gen-1", "nv.dl.rank": int64(1), "service.instance.id": "gen-1-rank1"},
			[]string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.NewRunID == nil {
				tt.opts.NewRunID = fixedRunID
			}
			kvs, warns := DefaultAttributes(tt.opts)
			if got := values(kvs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DefaultAttributes =\n%v\nwant\n%v", got, tt.want)
			}
			var keys []string
			for _, w := range warns {
				keys = append(keys, w.Key)
			}
			if !reflect.DeepEqual(keys, tt.warns) {
				t.Errorf("warnings %v, want keys %q", warns, tt.warns)
			}
			for i := 1; i < len(kvs); i++ {
				if kvs[i-1].Key >= kvs[i].Key {
					t.Errorf("not sorted: %v", kvs)
				}
			}
		})
	}
}

func TestDefaultAttributesRankWarningText(t *testing.T) {
	_, warns := DefaultAttributes(Options{NewRunID: fixedRunID})
	if len(warns) != 1 || !strings.Contains(warns[0].String(), "never taken from RANK") {
		t.Errorf("warnings %v", warns)
	}
}

func TestDefaultAttributesRunIDGenerator(t *testing.T) {
	called := 0
	gen := func() string { called++; return "g" }
	DefaultAttributes(Options{RunID: "given", NewRunID: gen})
	DefaultAttributes(Options{Env: environ.Map{libcarrier.EnvVar: "nemo.run.id=inh"}, NewRunID: gen})
	if called != 0 {
		t.Errorf("NewRunID called %d times although a run id was given", called)
	}
	// By default a random UUID (version 4), different each time.
	a, _ := DefaultAttributes(Options{})
	b, _ := DefaultAttributes(Options{})
	ida, idb := values(a)["nemo.run.id"].(string), values(b)["nemo.run.id"].(string)
	u, err := uuid.Parse(ida)
	if err != nil || u.Version() != 4 || ida == idb {
		t.Errorf("generated run ids %q, %q (%v)", ida, idb, err)
	}
}

// The attributes and the detector together, through the SDK.
func TestDefaultAttributesWithSDK(t *testing.T) {
	env := environ.Map{
		"SLURM_JOB_ID": "12345", "SLURM_CLUSTER_NAME": "cluster-a", "SLURM_NNODES": "2", "SLURM_STEP_ID": "0",
		"OTEL_SERVICE_NAME":    "megatron-lm",
		libcarrier.EnvVar:      "nv.dl.rank=3,nv.dl.world_size=8,slurm.nnodes=x,slurm.job.name=",
		"CUDA_VISIBLE_DEVICES": "0",
	}
	defaults, warns := DefaultAttributes(Options{Env: env, RunID: "run", ServiceVersion: "0.1.0"})
	res, err := resource.New(context.Background(),
		resource.WithAttributes(defaults...),
		resource.WithDetectors(NewDetector(env, WithDetectOptions(options))))
	if !errors.Is(err, resource.ErrPartialResource) || !strings.Contains(err.Error(), `"slurm.nnodes"`) {
		t.Errorf("resource.New: %v, want a partial-resource error for slurm.nnodes=x", err)
	}
	want := map[string]any{
		"service.name": "megatron-lm", "service.version": "0.1.0", "nemo.run.id": "run",
		"service.instance.id": "run-rank3", "nv.dl.rank": int64(3), "nv.dl.world_size": int64(8), "host.gpu.count": int64(1),
		"slurm.job.id": "12345", "slurm.job.id.raw": "12345", "slurm.array.job_id": "12345", "slurm.array.task_id": "0",
		"slurm.array.count": int64(1), "slurm.restart_count": int64(0), "slurm.cluster.name": "cluster-a",
		"slurm.nnodes": int64(2), "slurm.step.id": int64(0), "nv.dl.job.uuid": "be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7",
	}
	if got, want := values(res.Attributes()), local(t, want); !reflect.DeepEqual(got, want) {
		t.Errorf("resource =\n%v\nwant\n%v", got, want)
	}
	// The detector reports the invalid slurm.nnodes, not DefaultAttributes.
	if len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
}
