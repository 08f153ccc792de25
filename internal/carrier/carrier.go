// Package carrier reads and writes the OTEL_RESOURCE_ATTRIBUTES carrier by
// the rules that package libcarrier documents. It is libcarrier without the
// process environment and without fmt: the per-task library links this
// package, and each package it links is initialised in every task.
//
// Besides the functions libcarrier exports, it has the slice forms of the
// per-task path: [AppendParse] and [FormatList] work on [KeyValue] entries
// and build no maps, and [Repair] removes from such entries the ones that
// FormatList would drop, so that a malformed carrier is repaired rather
// than kept or given up.
package carrier

// EnvVar is the environment variable that OpenTelemetry SDKs read resource
// attributes from.
const EnvVar = "OTEL_RESOURCE_ATTRIBUTES"

// Quote returns s Go-quoted and cut to 64 bytes, followed by "..." when cut:
// how every warning repeats a key or value, so that one hostile entry cannot
// flood a log.
func Quote(s string) string { return quote(s) }

// TrimBlank removes spaces and tabs at both ends of s: how keys and values
// are trimmed.
func TrimBlank(s string) string { return trimBlank(s) }
