package job

import (
	"bytes"
	"hash/maphash"
	"unicode/utf8"
	"unsafe"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/internal/prefetch"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/source"
	"github.com/weirstream/weir/state"
)

// keyTable interns the keys of a job's events: it turns a key as read from a
// line into its canonical JSON text, as a string allocated once per key.
//
// It is an open-addressing table (linear probing, at most half full) of
// 32-byte slots that hold the text a key is compared with when it is short,
// so that finding a key seen before reads one slot: a Go map of strings read
// the group's control word, the slot and the key's bytes, three cache misses
// with many keys, for every event. A string key is looked up by its bytes as
// the line has them (unescaped), so a key seen before is neither validated
// nor escaped again.
//
// The table is cleared when it holds max keys, so that keys that come and go
// do not pile up; the decoders' tables share an eighth of the job's memory
// budget (keyTableKeys).
type keyTable struct {
	seed  maphash.Seed
	slots []keySlot // a power of two
	n     int       // keys held
	max   int
	// off: keys are not interned, each is a string of its own (a join's
	// keys are mostly each record's own: a table would miss).
	off   bool
	buf   []byte
	ahead []byte // prefetch's text
}

// keyInline is the longest canonical text a slot holds.
const keyInline = 10

// The kinds of lookup text.
const (
	lookupNone      = iota // an empty slot
	lookupString           // a string's bytes, its canonical text their quoting
	lookupCanonical        // the canonical text
)

// keySlot is one slot of a keyTable. A key whose canonical text has at
// most keyInline bytes has it in the slot too, where it is compared.
type keySlot struct {
	hash uint32
	kind uint8 // lookupNone in an empty slot
	n    uint8 // length of text, 0 if the key is longer than keyInline
	text [keyInline]byte
	key  string // the canonical JSON text
}

// keyTableKeys is the most keys a key table holds when decoders of them
// share the budget: the tables take an eighth of the memory budget
// (state.DefaultBudget if 0) in all, at 64 bytes a key (a table grows to
// twice its keys' 32-byte slots), with at least 2^14 and at most 2^20 keys
// a table. The keys' strings are not counted: the operator's state holds
// them too.
func keyTableKeys(budget int64, decoders int) int {
	n := state.Budget(budget) / 8 / int64(max(decoders, 1)) / (2 * int64(unsafe.Sizeof(keySlot{})))
	return int(min(max(n, minKeyTableKeys), 1<<20))
}

// minKeyTableKeys is the fewest keys a key table holds before it starts
// again.
const minKeyTableKeys = 1 << 14

func newKeyTable(max int) *keyTable {
	return &keyTable{seed: maphash.MakeSeed(), slots: make([]keySlot, 1024), max: max}
}

// intern returns the canonical JSON text of the scalar v (see
// linedec.AppendCanonical); ok is false for a string that is not valid
// UTF-8, which is not interned.
func (t *keyTable) intern(v *source.Value) (key string, ok bool) {
	if t.off {
		if v.Type == source.String && !utf8.Valid(v.Text) {
			return "", false
		}
		t.buf = linedec.AppendCanonical(t.buf[:0], v)
		return string(t.buf), true
	}
	if v.Type == source.String {
		raw := v.Text
		if len(raw) <= keyInline-2 {
			h := t.hash(lookupString, raw)
			if s := t.find(h, lookupString, raw); s != nil {
				return s.key, true
			}
			if !utf8.Valid(raw) {
				return "", false
			}
			t.buf = text.AppendJSONString(t.buf[:0], raw)
			if len(t.buf) == len(raw)+2 {
				// Nothing to escape: the string's bytes find it.
				return t.insert(h, lookupString, t.buf), true
			}
			return t.canonical(t.buf), true
		}
		if !utf8.Valid(raw) {
			return "", false
		}
	}
	t.buf = linedec.AppendCanonical(t.buf[:0], v)
	return t.canonical(t.buf), true
}

// prefetch asks for the slot where intern will look for a string key of
// bytes raw (with no escape in them): a hint, which changes nothing.
func (t *keyTable) prefetch(raw []byte) {
	if t.off {
		return
	}
	prefetch.Line(unsafe.Pointer(&t.slots[t.home(raw)]))
}

// home is the slot where intern starts looking for a string key of bytes
// raw with no escape in them.
func (t *keyTable) home(raw []byte) int {
	var h uint32
	if len(raw) <= keyInline-2 {
		h = t.hash(lookupString, raw)
	} else {
		t.ahead = append(append(append(t.ahead[:0], '"'), raw...), '"')
		h = t.hash(lookupCanonical, t.ahead)
	}
	return int(h) & (len(t.slots) - 1)
}

// keyAhead finds a top-level string field's bytes in a JSON line without
// parsing it, for keyTable.prefetch: the value after the first occurrence
// of the field's quoted name (needle) followed by a colon, when it is a
// string with no escape in it. It may be wrong (the name inside another
// value, a nested object's field): it is only a hint.
func keyAhead(line, needle []byte) ([]byte, bool) {
	for range 4 {
		i := bytes.Index(line, needle)
		if i < 0 {
			return nil, false
		}
		line = skipSpace(line[i+len(needle):])
		if len(line) == 0 || line[0] != ':' {
			continue
		}
		line = skipSpace(line[1:])
		if len(line) == 0 || line[0] != '"' {
			return nil, false
		}
		line = line[1:]
		end := bytes.IndexByte(line, '"')
		if end < 0 || bytes.IndexByte(line[:end], '\\') >= 0 {
			return nil, false
		}
		return line[:end], true
	}
	return nil, false
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// canonical interns a key by its canonical text.
func (t *keyTable) canonical(text []byte) string {
	h := t.hash(lookupCanonical, text)
	if s := t.find(h, lookupCanonical, text); s != nil {
		return s.key
	}
	return t.insert(h, lookupCanonical, text)
}

func (t *keyTable) hash(kind uint8, look []byte) uint32 {
	return uint32(maphash.Bytes(t.seed, look)) ^ uint32(kind)
}

// find returns the slot of a key, or nil.
func (t *keyTable) find(h uint32, kind uint8, look []byte) *keySlot {
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch {
		case s.kind == lookupNone:
			return nil
		case s.hash != h || s.kind != kind:
		case kind == lookupString:
			if int(s.n) == len(look)+2 && string(s.text[1:s.n-1]) == string(look) {
				return s
			}
		case s.n > 0:
			if string(s.text[:s.n]) == string(look) {
				return s
			}
		case s.key == string(look):
			return s
		}
	}
}

// insert adds a key of canonical text text, and returns its string.
func (t *keyTable) insert(h uint32, kind uint8, text []byte) string {
	if t.n >= t.max {
		clear(t.slots)
		t.n = 0
	} else if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := int(h) & mask
	for t.slots[i].kind != lookupNone {
		i = (i + 1) & mask
	}
	s := &t.slots[i]
	s.hash, s.kind = h, kind
	if len(text) <= keyInline {
		s.n = uint8(copy(s.text[:], text))
	}
	s.key = string(text)
	t.n++
	return s.key
}

// grow doubles the table.
func (t *keyTable) grow() {
	old := t.slots
	t.slots = make([]keySlot, 2*len(old))
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.kind == lookupNone {
			continue
		}
		i := int(s.hash) & mask
		for t.slots[i].kind != lookupNone {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// TableKeyText is how a key, given as its JSON text (a pane's key), is
// written to a table's key column: a string as itself, unless it would read
// as another JSON value (a number, true, false, null) or starts with a
// quote, in which case it is written as its JSON text; any other key as its
// JSON text. So keys 1 and "1" are two rows, while a key like "card_7" is
// written as card_7, as people read it.
func TableKeyText(jsonKey string) string {
	if len(jsonKey) < 2 || jsonKey[0] != '"' {
		return jsonKey
	}
	s := keyValue(jsonKey)
	if readsAsOther(s) {
		return jsonKey
	}
	return s
}

// readsAsOther reports whether a string's text would be read as a JSON
// value that is not that string.
func readsAsOther(s string) bool {
	switch {
	case s == "true", s == "false", s == "null":
		return true
	case len(s) > 0 && s[0] == '"':
		return true
	}
	return linedec.ValidNumber([]byte(s))
}

// TableKeyTexts is a key (as an output's "key" holds it) as a table holds
// it: the text of its column, or of each of a composite key's columns;
// none for a job without a key.
func TableKeyTexts(j *jobfile.Job, jsonKey string) []string {
	switch {
	case j.KeyParts != nil:
		parts := splitKey(jsonKey)
		for i, v := range parts {
			parts[i] = TableKeyText(v)
		}
		return parts
	case j.Key != nil:
		return []string{TableKeyText(jsonKey)}
	}
	return nil
}
