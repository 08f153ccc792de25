package libcarrier

import "strconv"

// Warning describes one entry that was dropped or changed, or a value that
// some consumers will reject. It is never fatal: the rest of the carrier is
// still read or written. Its String method returns `key "k": message`, or
// just the message when Key is empty; a key longer than 64 bytes is cut,
// and "..." follows its closing quote.
type Warning struct {
	Key     string // the key as given; "" when the entry has no usable key
	Message string // what happened, in lower case
}

// MaxWarnings bounds the warnings one call keeps. A malformed carrier of
// 128 KiB holds up to 65,000 bad entries, and one warning each cost the
// plugin's helper, which runs without a garbage collector, 14 MiB; past
// the bound one last warning counts the rest, whose messages are never
// built.
const MaxWarnings = 64

// warnings collects a call's warnings up to MaxWarnings.
type warnings struct {
	list []Warning
	more int
}

func (w *warnings) add(x Warning) {
	if len(w.list) < MaxWarnings {
		w.list = append(w.list, x)
	} else {
		w.more++
	}
}

// done returns the warnings kept, and one that counts the rest.
func (w *warnings) done() []Warning {
	if w.more > 0 {
		w.list = append(w.list, Warning{Message: strconv.Itoa(w.more) + " more warnings like these, not kept"})
	}
	return w.list
}

// maxShown bounds how much of a hostile key or entry a warning repeats, so
// that one bad entry cannot flood a log.
const maxShown = 64

// String returns `key "k": message`, or just the message when Key is empty.
// A key longer than 64 bytes is cut, and "..." follows its closing quote.
func (w Warning) String() string {
	if w.Key == "" {
		return w.Message
	}
	return "key " + Quote(w.Key) + ": " + w.Message
}

// Quote returns s Go-quoted and cut to 64 bytes, followed by "..." when
// cut: how a warning repeats a key or value, so that one hostile entry
// cannot flood a log.
func Quote(s string) string {
	if len(s) > maxShown {
		return strconv.Quote(s[:maxShown]) + "..."
	}
	return strconv.Quote(s)
}
