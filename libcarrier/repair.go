package libcarrier

import "unicode/utf8"

// Repair removes from kvs, in place, every entry that [FormatList] would
// drop: a key that is empty, longer than 255 bytes, holds a byte outside
// 0x21–0x7E or one of , = % ; \ ", or a value that is not valid UTF-8. It
// returns the shortened slice and one warning per entry removed, in the
// order of kvs, with the messages FormatList gives. The order of the kept
// entries is unchanged.
//
// It is how a malformed carrier is repaired rather than given up: after
// [AppendParse] (which has dropped entries without '=' or with an empty key)
// and Repair, what remains can be written back without loss. The Java and
// JavaScript SDKs discard the whole variable on any such entry, while Go
// and Python skip just that entry; after Repair all of them read the same
// attributes.
func Repair(kvs []KeyValue) ([]KeyValue, []Warning) {
	var warns warnings
	out := kvs[:0]
	for _, kv := range kvs {
		if msg := checkKey(kv.Key); msg != "" {
			warns.add(Warning{Key: kv.Key, Message: msg})
			continue
		}
		if !utf8.ValidString(kv.Value) {
			warns.add(Warning{Key: kv.Key, Message: msgInvalidUTF8})
			continue
		}
		out = append(out, kv)
	}
	// Clear the tail so that the dropped strings are not kept alive.
	clear(kvs[len(out):])
	return out, warns.done()
}
