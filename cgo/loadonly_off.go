//go:build !spankotel_loadonly

package main

// loadOnly is false in the library that is installed; see loadonly.go.
const loadOnly = false
