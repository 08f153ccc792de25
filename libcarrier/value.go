package libcarrier

import (
	"math"
	"runtime"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/spank-otel/spank-otel/internal/strs"
)

// text returns v as carrier text, or a reason to drop it.
func text(v any) (string, string) {
	switch v := v.(type) {
	case nil:
		return "", ""
	case string:
		if !utf8.ValidString(v) {
			return "", msgInvalidUTF8
		}
		return v, ""
	case bool:
		return strconv.FormatBool(v), ""
	case float32:
		return formatFloat(float64(v), 32)
	case float64:
		return formatFloat(v, 64)
	}
	if s, ok := integerText(v); ok {
		return s, ""
	}
	return "", "value of type " + typeName(v) + " is not supported: dropped"
}

// integerText returns v in base 10 when it holds a value of one of Go's
// integer types; a type defined on one, such as time.Duration, is not one.
func integerText(v any) (string, bool) {
	for _, try := range [...]func(any) (string, bool){
		base10[int], base10[int8], base10[int16], base10[int32], base10[int64],
		base10[uint], base10[uint8], base10[uint16], base10[uint32], base10[uint64], base10[uintptr],
	} {
		if s, ok := try(v); ok {
			return s, true
		}
	}
	return "", false
}

// base10 returns v in base 10 if it holds a T.
func base10[T int | int8 | int16 | int32 | int64 | uint | uint8 | uint16 | uint32 | uint64 | uintptr](v any) (string, bool) {
	n, ok := v.(T)
	switch {
	case !ok:
		return "", false
	case n < 0:
		return strconv.FormatInt(int64(n), 10), true
	}
	return strconv.FormatUint(uint64(n), 10), true
}

// formatFloat writes the shortest text that parses back to f at the given
// bit size, in the notation JavaScript uses for numbers.
func formatFloat(f float64, bits int) (string, string) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", "value " + strconv.FormatFloat(f, 'g', -1, 64) + " is not a finite number: dropped"
	}
	abs := math.Abs(f)
	if abs == 0 || 1e-6 <= abs && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, bits), ""
	}
	b := strconv.AppendFloat(make([]byte, 0, 32), f, 'e', -1, bits)
	// Turn e+21 into e21 and e-07 into e-7: fewer bytes to encode, and
	// every number parser accepts both.
	i := slices.Index(b, 'e') + 1
	if b[i] == '+' {
		b = append(b[:i], b[i+1:]...)
	} else {
		i++
	}
	for i < len(b)-1 && b[i] == '0' {
		b = append(b[:i], b[i+1:]...)
	}
	return string(b), ""
}

// typeProbe is a type no caller can hold: typeName asserts it.
type typeProbe struct{}

// typeName returns the name of v's dynamic type as fmt's %T writes it, for
// the warning about a value Format cannot write. fmt and reflect name
// types, and the SPANK plugin's library, which links this package, must
// link neither (cgo/deps_test.go): they would be initialised in every task.
// The runtime names the type too, in the error of a failed type assertion,
// from the same type data; typeName fails one on purpose and reads the
// name from its error. It runs only for values Format rejects.
func typeName(v any) (name string) {
	const prefix = "interface conversion: interface {} is "
	const suffix = ", not libcarrier.typeProbe"
	defer func() {
		name = "?"
		if err, ok := recover().(runtime.Error); ok {
			msg := err.Error()
			// The message may go on after the suffix when v's type has
			// the same name as typeProbe: cut at the last one.
			for i := len(msg) - len(suffix); i >= len(prefix); i-- {
				if msg[i:i+len(suffix)] == suffix && strs.HasPrefix(msg, prefix) {
					name = msg[len(prefix):i]
					return
				}
			}
		}
	}()
	_ = v.(typeProbe)
	return
}
