package libcarrier_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/libcarrier"
)

func ExampleParse() {
	m, warns := libcarrier.Parse(" team = ml ,note=a%2Cb+c,broken,rank=%zz")
	fmt.Println(m["team"], m["note"], m["rank"])
	for _, w := range warns {
		fmt.Println("warning:", w)
	}
	// Output:
	// ml a,b+c %zz
	// warning: entry "broken" has no '=': dropped
}

func ExampleFormat() {
	s, warns := libcarrier.Format(map[string]any{
		"slurm.job.name": "train run #1",
		"slurm.nnodes":   64,
		"nv.dl.rank":     int64(3),
		"debug":          true,
		"ratio":          0.25,
		"unset":          nil,
		"bad key":        "x",
	})
	fmt.Println(s)
	for _, w := range warns {
		fmt.Println("warning:", w)
	}
	// Output:
	// debug=true,nv.dl.rank=3,ratio=0.25,slurm.job.name=train%20run%20%231,slurm.nnodes=64
	// warning: key "bad key": key contains byte 0x20: dropped
}

func ExampleFormatStrings() {
	s, _ := libcarrier.FormatStrings(map[string]string{"b": "é", "a": "x+y"})
	fmt.Println(s)
	// Output: a=x%2By,b=%C3%A9
}

func ExampleExtend() {
	inherited := "slurm.job.id=41,team=ml,stale=1"
	s, _ := libcarrier.Extend(inherited,
		map[string]any{"service.name": "nemo", "team": "default"}, // defaults
		map[string]any{"slurm.job.id": "42", "stale": nil},        // overrides
	)
	fmt.Println(s)
	// Output: service.name=nemo,slurm.job.id=42,team=ml
}

func ExampleCompose() {
	current := map[string]any{"a": "current", "b": "current", "c": "current"}
	defaults := map[string]any{"a": "default", "d": "default"}
	overrides := map[string]any{"b": "", "c": nil}
	m := libcarrier.Compose(current, defaults, overrides)
	fmt.Printf("%q\n", m)
	// Output: map["a":"current" "b":"" "d":"default"]
}

func ExampleTyped() {
	attrs, warns := libcarrier.Typed(map[string]string{
		"nv.dl.rank":   " +007 ",
		"slurm.job.id": "007",
		"slurm.nnodes": "seven",
		"nv.gpu.index": "1.5",
	})
	fmt.Printf("%T %v\n", attrs["nv.dl.rank"], attrs["nv.dl.rank"])
	fmt.Printf("%T %v\n", attrs["slurm.job.id"], attrs["slurm.job.id"])
	_, ok := attrs["slurm.nnodes"]
	fmt.Println("slurm.nnodes kept:", ok)
	for _, w := range warns {
		fmt.Println("warning:", w)
	}
	// Output:
	// int64 7
	// string 007
	// slurm.nnodes kept: false
	// warning: key "nv.gpu.index": value "1.5" is not an integer: kept as a string
	// warning: key "slurm.nnodes": value "seven" is not an integer: dropped
}

func ExampleAppendParse() {
	// The per-task hot path keeps the entries on the stack.
	var buf [16]libcarrier.KeyValue
	kvs, _ := libcarrier.AppendParse(buf[:0], "team=ml,note=a%2Cb,team=infra")
	fmt.Println(kvs)
	// Output: [{note a,b} {team infra}]
}

func ExampleFormatList() {
	s, _ := libcarrier.FormatList([]libcarrier.KeyValue{
		{Key: "team", Value: "ml"},
		{Key: "note", Value: "a,b"},
		{Key: "team", Value: "infra"}, // replaces the first team
	})
	fmt.Println(s)
	// Output: note=a%2Cb,team=infra
}

func ExampleRepair() {
	// A carrier with entries no SDK reads the same way.
	kvs, warns := libcarrier.AppendParse(nil, "team=ml,noequals,semi;key=x,run=%FF")
	kvs, dropped := libcarrier.Repair(kvs)
	for _, w := range append(warns, dropped...) {
		fmt.Println(w)
	}
	s, _ := libcarrier.FormatList(kvs)
	fmt.Println(s)
	// Output:
	// entry "noequals" has no '=': dropped
	// key "run": value is not valid UTF-8: dropped
	// key "semi;key": key contains ';': dropped
	// team=ml
}
