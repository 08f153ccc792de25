package strs_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/internal/strs"
)

func ExampleBuilder() {
	var b strs.Builder
	b.Grow(16)
	b.WriteString("slurm.job.id")
	b.WriteByte('=')
	b.WriteString("77")
	fmt.Println(b.String(), b.Len())
	// Output: slurm.job.id=77 15
}

func ExampleCount() {
	carrier := "a=1,b=2,c=3"
	fmt.Println(strs.Count(carrier, ',')+1, "entries at most")
	// Output: 3 entries at most
}
