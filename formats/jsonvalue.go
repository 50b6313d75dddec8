package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// decodeJSON is the payload as the validator reads it: objects as
// map[string]any, arrays as []any, numbers as json.Number with all their
// digits (an integer's bounds are checked exactly), as encoding/json's
// Decoder with UseNumber would make it. It reads the payload in place,
// rather than through the Decoder's copy and reflection: only what the
// value itself needs is allocated. A payload that is not one JSON value is
// an error, worded as encoding/json words it.
func decodeJSON(payload []byte) (any, error) {
	r := jsonReader{b: payload}
	r.space()
	if r.i == len(r.b) {
		return nil, errors.New("an empty payload, not JSON")
	}
	v, ok := r.value(0)
	if ok {
		r.space()
		if r.i == len(r.b) {
			return v, nil
		}
	}
	return nil, stdJSONError(payload)
}

// stdJSONError is why encoding/json refuses the payload: the words of a
// record's quarantine.
func stdJSONError(payload []byte) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return errors.New("an empty payload, not JSON")
		}
		return fmt.Errorf("not JSON: %v", err)
	}
	if rest := bytes.TrimSpace(payload[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("not JSON: %d bytes after the value", len(rest))
	}
	// Not reached: the two readers agree (FuzzDecodeJSON).
	return errors.New("not JSON")
}

// maxJSONDepth is encoding/json's bound on nesting.
const maxJSONDepth = 10000

// jsonReader reads a JSON value from b at i.
type jsonReader struct {
	b []byte
	i int
}

func (r *jsonReader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// value reads a value; ok false, it is not one.
func (r *jsonReader) value(depth int) (any, bool) {
	if r.i == len(r.b) {
		return nil, false
	}
	switch c := r.b[r.i]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return nil, false
		}
		r.i++
		m := map[string]any{}
		r.space()
		if r.i < len(r.b) && r.b[r.i] == '}' {
			r.i++
			return m, true
		}
		for {
			r.space()
			if r.i == len(r.b) || r.b[r.i] != '"' {
				return nil, false
			}
			k, ok := r.str()
			if !ok {
				return nil, false
			}
			r.space()
			if r.i == len(r.b) || r.b[r.i] != ':' {
				return nil, false
			}
			r.i++
			r.space()
			v, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if end, ok := r.next('}'); !ok {
				return nil, false
			} else if end {
				return m, true
			}
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return nil, false
		}
		r.i++
		a := []any{}
		r.space()
		if r.i < len(r.b) && r.b[r.i] == ']' {
			r.i++
			return a, true
		}
		for {
			r.space()
			v, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			if end, ok := r.next(']'); !ok {
				return nil, false
			} else if end {
				return a, true
			}
		}
	case c == '"':
		return r.str()
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	case c == 't':
		return true, r.literal("true")
	case c == 'f':
		return false, r.literal("false")
	case c == 'n':
		return nil, r.literal("null")
	}
	return nil, false
}

// next reads what follows an object's member or an array's element: a
// comma (another comes) or close (the end), after any space; anything else
// is not JSON.
func (r *jsonReader) next(close byte) (end, ok bool) {
	r.space()
	if r.i == len(r.b) {
		return false, false
	}
	switch r.b[r.i] {
	case ',':
		r.i++
		return false, true
	case close:
		r.i++
		return true, true
	}
	return false, false
}

func (r *jsonReader) literal(s string) bool {
	if !bytes.HasPrefix(r.b[r.i:], []byte(s)) {
		return false
	}
	r.i += len(s)
	return true
}

// str reads a string, at its opening quote. One without escapes, of valid
// UTF-8, is copied; any other is read by encoding/json (its escapes, and
// invalid UTF-8 replaced as it replaces it).
func (r *jsonReader) str() (string, bool) {
	start := r.i
	r.i++
	plain := true
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			s := r.b[start+1 : r.i-1]
			if plain && utf8.Valid(s) {
				return string(s), true
			}
			var out string
			if json.Unmarshal(r.b[start:r.i], &out) != nil {
				return "", false
			}
			return out, true
		case c == '\\':
			plain = false
			r.i += 2 // the escaped byte is never the closing quote
		case c < 0x20:
			return "", false
		default:
			r.i++
		}
	}
	return "", false
}

// number reads a number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *jsonReader) number() (json.Number, bool) {
	start := r.i
	if r.b[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.b) && r.b[r.i] == '0':
		r.i++
	case r.i < len(r.b) && r.b[r.i] >= '1' && r.b[r.i] <= '9':
		r.digits()
	default:
		return "", false
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if r.digits() == 0 {
			return "", false
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if r.digits() == 0 {
			return "", false
		}
	}
	return json.Number(r.b[start:r.i]), true
}

func (r *jsonReader) digits() int {
	n := 0
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		r.i++
		n++
	}
	return n
}
