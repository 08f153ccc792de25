package libcarrier_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/spank-otel/spank-otel/libcarrier"
)

// benchAttributes is a realistic task carrier: 25 keys, Slurm identity,
// NeMo Lens run keys and user keys, some needing percent-encoding.
var benchAttributes = map[string]string{
	"slurm.job.id":           "4242017_3",
	"slurm.job.id.raw":       "4242021",
	"slurm.array.job_id":     "4242017",
	"slurm.array.task_id":    "3",
	"slurm.array.count":      "16",
	"slurm.job.name":         "llama3 70b pretrain (bf16)",
	"slurm.cluster.name":     "eos",
	"slurm.partition":        "batch_block1,batch_block2",
	"slurm.nnodes":           "64",
	"slurm.ntasks":           "512",
	"slurm.restart_count":    "0",
	"slurm.job.user":         "jdoe",
	"slurm.job.account":      "coreai_dlalgo_llm",
	"slurm.job.qos":          "normal",
	"slurm.head_node.name":   "eos0123",
	"nv.dl.job.uuid":         "be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7",
	"nv.dl.run.uuid":         "be42db52-ed95-5653-b035-190f2392e702",
	"nv.dl.rank":             "17",
	"nv.dl.world_size":       "512",
	"nv.dl.topology.size.tp": "8",
	"service.name":           "nemo",
	"deployment.environment": "prod",
	"team":                   "llm-pretraining",
	"experiment.note":        "lr=3e-4, warmup 2k; données ✓",
	"git.commit":             "9f1c2d3e4b5a69788796a5b4c3d2e1f0a9b8c7d6",
}

func benchCarrier(b *testing.B) string {
	s, warns := libcarrier.FormatStrings(benchAttributes)
	if warns != nil {
		b.Fatal(warns)
	}
	return s
}

func BenchmarkParse(b *testing.B) {
	s := benchCarrier(b)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		libcarrier.Parse(s)
	}
}

func BenchmarkFormatStrings(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		libcarrier.FormatStrings(benchAttributes)
	}
}

func BenchmarkFormat(b *testing.B) {
	m := make(map[string]any, len(benchAttributes))
	for k, v := range benchAttributes {
		m[k] = v
	}
	m["slurm.nnodes"], m["nv.dl.rank"] = 64, 17
	b.ReportAllocs()
	for b.Loop() {
		libcarrier.Format(m)
	}
}

// BenchmarkExtend is the plugin's shape of work: an inherited carrier
// extended with a few detector values.
func BenchmarkExtend(b *testing.B) {
	s := benchCarrier(b)
	overrides := map[string]any{"slurm.job.id": "4242017_4", "slurm.array.task_id": "4", "nv.dl.rank": 18}
	defaults := map[string]any{"service.name": "nemo", "host.name": "eos0124"}
	b.ReportAllocs()
	for b.Loop() {
		libcarrier.Extend(s, defaults, overrides)
	}
}

// BenchmarkSDKFromEnv measures the OpenTelemetry Go SDK's environment
// detector decoding the same carrier, for comparison with BenchmarkParse.
func BenchmarkSDKFromEnv(b *testing.B) {
	s := benchCarrier(b)
	b.Setenv(libcarrier.EnvVar, s)
	b.Setenv("OTEL_SERVICE_NAME", "")
	if got := resource.Environment().Len(); got != len(benchAttributes) {
		b.Fatalf("SDK read %d attributes, want %d", got, len(benchAttributes))
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		resource.Environment()
	}
}

// BenchmarkSDKNew is the same through resource.New with WithFromEnv, the
// call an application makes.
func BenchmarkSDKNew(b *testing.B) {
	s := benchCarrier(b)
	b.Setenv(libcarrier.EnvVar, s)
	b.Setenv("OTEL_SERVICE_NAME", "")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := resource.New(ctx, resource.WithFromEnv()); err != nil {
			b.Fatal(err)
		}
	}
}
