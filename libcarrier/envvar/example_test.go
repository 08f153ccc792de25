package envvar_test

import (
	"fmt"
	"os"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/envvar"
)

func ExamplePublish() {
	os.Unsetenv(libcarrier.EnvVar)
	restore, _, err := envvar.Publish("", map[string]any{"service.name": "nemo"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(os.Getenv(libcarrier.EnvVar))
	restore()
	_, ok := os.LookupEnv(libcarrier.EnvVar)
	fmt.Println("set after restore:", ok)
	// Output:
	// service.name=nemo
	// set after restore: false
}

func ExampleSet() {
	const name = "EXAMPLE_RESOURCE_ATTRIBUTES"
	os.Setenv(name, "old=1")
	if _, err := envvar.Set(name, map[string]any{"new": 2}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(os.Getenv(name)) // replaced, not merged
	envvar.Set(name, nil)
	_, ok := os.LookupEnv(name)
	fmt.Println("set after an empty Set:", ok)
	// Output:
	// new=2
	// set after an empty Set: false
}
