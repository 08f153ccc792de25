// Command sdkprobe prints the Resource that the OpenTelemetry Go SDK builds
// from its environment detector, as one JSON object of strings. The cluster
// tests run it as a Slurm task to show that a real SDK reads what the plugin
// wrote.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/sdk/resource"
)

func main() {
	res, err := resource.New(context.Background(), resource.WithFromEnv())
	if err != nil {
		// A partial resource is still printed: the test compares it.
		fmt.Fprintln(os.Stderr, "sdkprobe:", err)
	}
	attrs := map[string]string{}
	for _, kv := range res.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if err := json.NewEncoder(os.Stdout).Encode(attrs); err != nil {
		fmt.Fprintln(os.Stderr, "sdkprobe:", err)
		os.Exit(1)
	}
}
