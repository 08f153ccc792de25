// Package sdkinterop holds no code, only tests: that the OpenTelemetry Go
// SDK reads what this repository writes exactly as our parser reads it,
// for the carriers of package libcarrier and for the values the SPANK
// plugin writes into tasks. It is a module of its own so that the
// plugin's module does not depend on the SDK; `make unit` runs it.
package sdkinterop
