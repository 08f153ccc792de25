package libcarrier_test

import (
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/carriertest"
)

func benchCarrier(b *testing.B) string {
	s, warns := libcarrier.FormatStrings(carriertest.BenchAttributes)
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
		libcarrier.FormatStrings(carriertest.BenchAttributes)
	}
}

func BenchmarkFormat(b *testing.B) {
	m := make(map[string]any, len(carriertest.BenchAttributes))
	for k, v := range carriertest.BenchAttributes {
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
