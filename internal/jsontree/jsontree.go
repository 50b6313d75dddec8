// Package jsontree builds the JSON object a job's expressions read (a
// fastjson value) straight from a record of a binary format, without
// writing its JSON text and parsing that again: a format that can (Avro,
// Protobuf) builds the object a record's text would parse into, value for
// value, and counts the text's length, so that the rules read it exactly
// as they read the text. (A job without expressions reads a record's
// fields without its object: linedec.Projector.) A record's fields and
// items are made one by one, strings, numbers and booleans from their
// values; every other value is written as its text, by the format's own
// code, and made from it (Scalar): a number keeps its text, a string
// without escapes its bytes, and any other part (a string with escapes, a
// map, whose keys may repeat) is parsed alone.
package jsontree

import (
	"bytes"
	"unsafe"

	"github.com/valyala/fastjson"
)

// Builder is a format's decoder (a plan.Decoder) that can build a record's
// object in a Tree. Build returns nil when the record is to be read from
// its JSON text (AppendJSON) instead: one that does not decode (AppendJSON
// then says why), or one the format does not build.
type Builder interface {
	Build(t *Tree, value []byte) *fastjson.Value
}

// StringFinder is a format's decoder that can find a top-level string
// field of a record without building it: what a decoder looks up a few records ahead
// (a key's slot, fetched into the cache before the record is read).
type StringFinder interface {
	// String is the bytes of the record's top-level string field name;
	// not ok when the record has none there (or it is not a string).
	String(value []byte, name string) (s []byte, ok bool)
}

// Tree is the memory of one record's values: they are valid until the
// next Reset. Its zero value is ready to use; it is not safe for
// concurrent use.
type Tree struct {
	a    fastjson.Arena
	slab []byte // the text of numbers, which their values point into
	n    int
	// ps parse the parts written as text, one each; used of them since
	// Reset.
	ps   []*fastjson.Parser
	used int
}

// maxParts bounds the parts of a record parsed alone (and the parsers a
// Tree keeps); a record with more is read from its text.
const maxParts = 64

// Reset forgets the values built so far, for the next record.
func (t *Tree) Reset() {
	t.a.Reset()
	t.slab, t.n, t.used = t.slab[:0], 0, 0
}

// Len is the length of the JSON text of the values built since Reset (as
// their formats' AppendJSON writes it).
func (t *Tree) Len() int { return t.n }

// Add counts n bytes of text that are not a value's (braces, brackets,
// commas, keys).
func (t *Tree) Add(n int) { t.n += n }

// Object is a new empty object; its braces are counted.
func (t *Tree) Object() *fastjson.Value {
	t.n += 2
	return t.a.NewObject()
}

// Array is a new empty array; its brackets are counted.
func (t *Tree) Array() *fastjson.Value {
	t.n += 2
	return t.a.NewArray()
}

// Null is null.
func (t *Tree) Null() *fastjson.Value {
	t.n += 4
	return t.a.NewNull()
}

// String is the string s, whose JSON text is s between quotes (the caller
// checked that no byte of it is escaped).
func (t *Tree) String(s []byte) *fastjson.Value {
	t.n += len(s) + 2
	return t.a.NewStringBytes(s)
}

// Number is the number whose JSON text b holds after Slab's (b is Slab()
// with the text appended), which the caller wrote as JSON writes it.
func (t *Tree) Number(b []byte) *fastjson.Value {
	s := b[len(t.slab):]
	t.slab = b
	t.n += len(s)
	return t.a.NewNumberString(unsafe.String(&s[0], len(s)))
}

// Quoted is the string whose JSON text b holds after Slab's (b is Slab()
// with the text appended), which the caller wrote between quotes without
// an escape.
func (t *Tree) Quoted(b []byte) *fastjson.Value {
	s := b[len(t.slab):]
	t.slab = b
	t.n += len(s)
	return t.a.NewStringBytes(s[1 : len(s)-1])
}

// Bool is true or false.
func (t *Tree) Bool(b bool) *fastjson.Value {
	if b {
		t.n += 4
		return t.a.NewTrue()
	}
	t.n += 5
	return t.a.NewFalse()
}

// Slab is where a format appends a scalar's JSON text for Scalar.
func (t *Tree) Slab() []byte { return t.slab }

// Scalar is the value whose JSON text b holds after Slab's (b is Slab()
// with the text appended): a scalar's, or any other the format writes as
// text, which is then parsed alone. It is nil if the text is not JSON, or
// the record has more than maxParts such parts.
func (t *Tree) Scalar(b []byte) *fastjson.Value {
	s := b[len(t.slab):]
	t.slab = b
	if len(s) == 0 {
		return nil
	}
	t.n += len(s)
	switch s[0] {
	case '"':
		if bytes.IndexByte(s[1:len(s)-1], '\\') < 0 {
			// No escape: the string is its text without the quotes.
			return t.a.NewStringBytes(s[1 : len(s)-1])
		}
	case '{', '[':
	case 'n':
		return t.a.NewNull()
	case 't':
		return t.a.NewTrue()
	case 'f':
		return t.a.NewFalse()
	default:
		return t.a.NewNumberString(unsafe.String(&s[0], len(s)))
	}
	if t.used == maxParts {
		return nil
	}
	if t.used == len(t.ps) {
		t.ps = append(t.ps, new(fastjson.Parser))
	}
	t.used++
	v, err := t.ps[t.used-1].ParseBytes(s)
	if err != nil {
		return nil
	}
	return v
}
