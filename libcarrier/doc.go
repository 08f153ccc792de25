// Package libcarrier reads and writes the OTEL_RESOURCE_ATTRIBUTES carrier:
// a comma-separated list of key=value pairs with percent-encoded values,
// which OpenTelemetry SDKs in every language read into their Resource.
//
// # Reading
//
// [Parse] is lenient, like the SDKs: it never fails as a whole. Blank
// entries are skipped; an entry without '=' or with an empty key is dropped
// with a [Warning]. Keys and values are trimmed of spaces and tabs; keys are
// not decoded; in values a valid %XX becomes its byte, '+' stays '+', and a
// '%' that does not start a valid %XX is kept as it is. When a key repeats,
// the last entry wins.
//
// # Writing
//
// [Format] and [FormatStrings] write the canonical form, which every SDK
// parser decodes to the same strings:
//
//   - keys are trimmed of spaces and tabs; a key that is then empty, longer
//     than 255 bytes, holds a byte outside 0x21–0x7E or one of , = % ; \ "
//     is dropped with a warning;
//   - every value byte outside A-Z a-z 0-9 - . _ ~ is written as %XX with
//     uppercase hex digits. Parsers disagree about '+', spaces, ';' and
//     non-ASCII bytes, so nothing else is left unencoded;
//   - entries are sorted by key, bytewise ascending, with no empty entry and
//     no trailing comma;
//   - when several keys are equal after trimming, the one whose untrimmed
//     spelling sorts last (bytewise) wins and the others are dropped with a
//     warning. The winner is chosen by its key alone: if its value is nil or
//     cannot be written, the key is absent from the output;
//   - a value that encodes to more than 255 bytes is written, with a warning:
//     the OpenTelemetry Collector and the JavaScript SDK reject it.
//
// For every map m whose keys are valid and distinct after trimming and whose
// values are valid UTF-8,
// Parse(Format(m)) equals m with its keys trimmed, and Format(Parse(s)) is
// canonical: formatting its parse again gives the same text.
//
// # Entries
//
// [AppendParse], [FormatList] and [Repair] apply the same rules to a slice
// of [KeyValue] entries instead of a map: they build no map, and with a
// [Buffer] the strings they make go into memory the caller provides. The
// SPANK plugin calls them in every task; so that its library stays small
// and starts fast, this package links neither fmt nor os (the plugin's
// cgo/deps_test.go checks it).
//
// # Composing
//
// [Compose] and [Extend] layer attribute maps (defaults, then the current
// carrier, then overrides) without touching the environment; package
// [github.com/spank-otel/spank-otel/libcarrier/envvar] writes a carrier
// into the process environment.
//
// # Typed values
//
// Carriers hold strings. [Typed] turns the values of a fixed list of integer
// keys (see [IsIntegerKey]) into int64 when a Resource is built.
//
// Problems with single entries are reported as [Warning] values and never
// stop the rest of the carrier from being read or written.
package libcarrier
