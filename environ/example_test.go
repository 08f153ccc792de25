package environ_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/environ"
)

func ExampleList() {
	// As for getenv, the first occurrence of a name wins.
	env := environ.List([]string{"A=1", "not-a-variable", "A=2", "B="})
	fmt.Println(env)
	fmt.Println(env.Lookup("B"))
	fmt.Println(env.Lookup("C"))
	// Output:
	// map[A:1 B:]
	//  true
	//  false
}
