package libcarrier

import "github.com/spank-otel/spank-otel/internal/strs"

// EnvVar is the environment variable that OpenTelemetry SDKs read resource
// attributes from.
const EnvVar = "OTEL_RESOURCE_ATTRIBUTES"

// KeyValue is one carrier entry: a key and its value, as text.
type KeyValue struct {
	Key   string
	Value string
}

// A Buffer holds the strings that [Buffer.AppendParse] decodes and
// [Buffer.FormatList] writes, so that a caller in a hot path can build them
// all in memory of its own (see [Buffer.Use]). The strings a Buffer returns
// are views of its bytes, which it never writes again: they stay valid and
// unchanged after later calls. The zero Buffer is ready to use and
// allocates as it needs; a Buffer must not be copied after its first use.
type Buffer struct {
	b strs.Builder
}

// Use makes b write into the spare capacity of room,
// room[len(room):cap(room)], until that is full; then it allocates as
// usual. Nothing else may write to that capacity afterwards: the strings b
// returns are views of it.
func (b *Buffer) Use(room []byte) { b.b.Use(room) }
