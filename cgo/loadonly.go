//go:build spankotel_loadonly

package main

// loadOnly is true in the variant of the library that `make bench` builds
// with -tags spankotel_loadonly: its export returns before it reads the
// task's environment. Timed beside the real library, it splits what the
// plugin costs a task into loading this library and making the call. The
// variant is never installed.
const loadOnly = true
