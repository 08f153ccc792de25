package carrier_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/internal/carrier"
)

func ExampleAppendParse() {
	// The per-task hot path keeps the entries on the stack.
	var buf [16]carrier.KeyValue
	kvs, _ := carrier.AppendParse(buf[:0], "team=ml,note=a%2Cb,team=infra")
	fmt.Println(kvs)
	// Output: [{note a,b} {team infra}]
}

func ExampleFormatList() {
	s, _ := carrier.FormatList([]carrier.KeyValue{
		{Key: "team", Value: "ml"},
		{Key: "note", Value: "a,b"},
		{Key: "team", Value: "infra"}, // replaces the first team
	})
	fmt.Println(s)
	// Output: note=a%2Cb,team=infra
}

func ExampleRepair() {
	// A carrier with entries no SDK reads the same way.
	kvs, warns := carrier.AppendParse(nil, "team=ml,noequals,semi;key=x,run=%FF")
	kvs, dropped := carrier.Repair(kvs)
	for _, w := range append(warns, dropped...) {
		fmt.Println(w)
	}
	s, _ := carrier.FormatList(kvs)
	fmt.Println(s)
	// Output:
	// entry "noequals" has no '=': dropped
	// key "run": value is not valid UTF-8: dropped
	// key "semi;key": key contains ';': dropped
	// team=ml
}
