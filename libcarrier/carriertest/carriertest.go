// Package carriertest holds the carriers that the tests of package
// libcarrier and the agreement tests with the OpenTelemetry Go SDK
// (test/sdkinterop, a module of its own) share. Only tests import it.
package carriertest

import (
	"fmt"
	"strings"
)

// Hostile are carrier fragments that have broken parsers before.
var Hostile = []string{
	"",
	",",
	"=",
	"==",
	"a",
	"a=",
	"=a",
	" a = b ",
	"a=b=c",
	"a=%",
	"a=%4",
	"a=%41%",
	"a=%zz",
	"a=%%41",
	"a=%2C,b=%3D",
	"a=x+y",
	"a=%FF%FE",
	"a=%C3",
	"a=%00",
	"a=\x00",
	"a=\xff",
	"\xff=1",
	"a=é日😀",
	"é=1",
	"a;b=1",
	`a\=1`,
	`"a"=1`,
	"a=1,a=2, a =3",
	"k\t=\tv\t",
	"\n=\n",
	"a=1,,,,b=2,",
	"a=" + strings.Repeat("%41", 100),
	strings.Repeat("k", 256) + "=v",
	strings.Repeat("a=1,", 50),
}

// HostileAttributes is a corpus of keys and values that parsers disagree
// on; every one of them is representable.
func HostileAttributes() map[string]string {
	m := map[string]string{
		"lead.space":                 "  x",
		"trail.space":                "x  ",
		"both.space":                 "  x  ",
		"only.space":                 "   ",
		"empty":                      "",
		"nonascii.e":                 "é",
		"nonascii.ja":                "日本",
		"nonascii.emoji":             "😀",
		"nonascii.mix":               " é日本😀 ",
		"percent":                    "%",
		"percent.escape":             "%2C",
		"percent.double":             "%%41",
		"percent.trunc":              "x%4",
		"plus":                       "+",
		"plus.space":                 "a+b c",
		"comma":                      ",",
		"equals":                     "=",
		"pair":                       "a=b,c=d",
		"semicolon":                  ";",
		"backslash":                  `\`,
		"quote":                      `"`,
		"tab":                        "\t",
		"tab.inner":                  "a\tb",
		"tab.ends":                   "\tx\t",
		"newline":                    "\n",
		"crlf":                       "x\r\n",
		"long.300":                   strings.Repeat("v", 300),
		"long.mixed":                 strings.Repeat("é,=%+ ", 30),
		"key:with/punct@":            "1",
		"~!#$&'()*+-./:<>?@[]^_`{|}": "punctuation key",
		strings.Repeat("k", 255):     "longest key",
	}
	for c := 0x20; c <= 0x7e; c++ {
		m[fmt.Sprintf("ascii.alone.%02x", c)] = string(rune(c))
		m[fmt.Sprintf("ascii.embedded.%02x", c)] = "a" + string(rune(c)) + "b"
	}
	return m
}

// BenchAttributes is a realistic task carrier: 25 keys, Slurm identity,
// NeMo Lens run keys and user keys, some needing percent-encoding.
var BenchAttributes = map[string]string{
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
