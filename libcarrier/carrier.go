package libcarrier

import (
	"fmt"

	"github.com/spank-otel/spank-otel/internal/carrier"
)

// The rules live in package internal/carrier, which the per-task library
// links without this package's fmt and os; these are its public names.

// EnvVar is the environment variable that OpenTelemetry SDKs read resource
// attributes from.
const EnvVar = carrier.EnvVar

// Warning describes one entry that was dropped or changed, or a value that
// some consumers will reject. It is never fatal: the rest of the carrier is
// still read or written. Its String method returns `key "k": message`, or
// just the message when Key is empty; a key longer than 64 bytes is cut,
// and "..." follows its closing quote.
type Warning = carrier.Warning

// Parse reads a carrier such as the value of OTEL_RESOURCE_ATTRIBUTES.
//
// It never fails as a whole: entries it cannot read are dropped and
// reported as warnings, and everything else is returned. Entries are
// separated by ','; blank entries are skipped; the key is the text before
// the first '=', trimmed of spaces and tabs and not decoded; the value is
// trimmed the same way and then percent-decoded: a valid %XX becomes that
// byte, '+' stays '+', and an invalid or truncated '%' sequence is kept
// literally. When a key repeats, the last entry wins.
//
// Keys, and values without a valid %XX, share memory with s.
// The result is never nil.
func Parse(s string) (map[string]string, []Warning) {
	return carrier.Parse(s)
}

// Format writes m in the canonical carrier form described in the package
// documentation, with keys sorted bytewise ascending.
//
// Values may be:
//   - string, written as it is (dropped with a warning unless valid UTF-8);
//     the empty string gives "key=";
//   - bool, written true or false;
//   - int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64
//     and uintptr, written in base 10 (so a byte or rune is a number);
//   - float32 and float64, written with the fewest digits that read back as
//     the same number: plain decimals when 1e-6 <= |x| < 1e21 or x is zero,
//     otherwise exponent notation without '+' or leading zeros (1e21,
//     -2.5e-7); NaN and infinities are dropped with a warning, as no
//     consumer reads them as numbers;
//   - nil, which omits the key.
//
// Any other type, including named types such as time.Duration, is dropped
// with a warning naming the key and the type: convert such values first.
func Format(m map[string]any) (string, []Warning) {
	return carrier.Format(m, typeName)
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// FormatStrings is [Format] for string values. It is a fast path: for up
// to 64 keys and a result of up to 2 KiB it allocates nothing but the
// result and the warnings.
func FormatStrings(m map[string]string) (string, []Warning) {
	return carrier.FormatStrings(m)
}
