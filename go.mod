module github.com/spank-otel/spank-otel

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	golang.org/x/sys v0.50.0
	gotest.tools/v3 v3.5.2
)

require github.com/google/go-cmp v0.7.0 // indirect
