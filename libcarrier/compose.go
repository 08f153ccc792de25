package libcarrier

import "slices"

// Compose layers three attribute maps: it starts from defaults, replaces
// with current, then replaces with overrides, and returns a new map.
//
// A later layer wins even when its value is empty or nil, and a nil that
// wins removes the key. Keys are compared as the carrier writes them,
// trimmed of spaces and tabs, so " k" in overrides replaces "k" in current;
// the result holds the trimmed keys. When one layer spells a key in several
// ways, the spelling that sorts last wins, as in [Format]. Values are not
// converted or checked: that is [Format]'s job. The inputs are never
// modified; any of them may be nil.
func Compose(current, defaults, overrides map[string]any) map[string]any {
	out := make(map[string]any, max(len(defaults), len(current), len(overrides)))
	for _, layer := range [...]map[string]any{defaults, current, overrides} {
		apply(out, layer)
	}
	for k, v := range out {
		if v == nil {
			delete(out, k)
		}
	}
	return out
}

// apply copies layer into out under trimmed keys.
func apply(out, layer map[string]any) {
	var blanks []string // keys that need trimming; rare
	for k, v := range layer {
		if trimBlank(k) != k {
			blanks = append(blanks, k)
			continue
		}
		out[k] = v
	}
	if len(blanks) == 0 {
		return
	}
	// Ascending order makes a later spelling overwrite an earlier one.
	slices.Sort(blanks)
	for _, k := range blanks {
		tk := trimBlank(k)
		if _, ok := layer[tk]; ok && tk > k {
			continue // the exact spelling sorts last and was already copied
		}
		out[tk] = layer[k]
	}
}

// Extend parses text, composes the result with defaults and overrides (see
// [Compose]), and formats it (see [Format]). It is pure: it neither reads nor
// writes the environment. The warnings of parsing come first, then those of
// formatting.
func Extend(text string, defaults, overrides map[string]any) (string, []Warning) {
	parsed, warns := Parse(text)
	current := make(map[string]any, len(parsed))
	for k, v := range parsed {
		current[k] = v
	}
	s, fw := Format(Compose(current, defaults, overrides))
	return s, append(warns, fw...)
}
