package libcarrier

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

type (
	named              string
	generic[T any]     struct{ v T }
	typeProbeLookalike struct{}
)

// TestTypeName checks typeName against fmt's %T, which it stands in for.
func TestTypeName(t *testing.T) {
	var nilPtr *int
	for _, v := range []any{
		[]byte("x"), struct{}{}, time.Second, named("x"), new(int), nilPtr, complex(1, 2),
		map[string]any{}, []string{}, [2]int{}, func() {}, make(chan int), make(<-chan error),
		errors.New("e"), generic[int]{}, &generic[named]{}, typeProbeLookalike{},
		struct {
			A int `tag:"x, not libcarrier.typeProbe"`
		}{},
		any(nil) == nil, // a bool: typeName works for supported types too
	} {
		if got, want := typeName(v), fmt.Sprintf("%T", v); got != want {
			t.Errorf("typeName(%#v) = %q, %%T gives %q", v, got, want)
		}
	}
}
