package text

import "unicode/utf8"

// maxDepth is the deepest nesting of arrays and objects encoding/json
// accepts.
const maxDepth = 10000

// ValidJSON reports whether b is valid UTF-8 holding one JSON value, as
// utf8.Valid(b) && json.Valid(b) do, in one pass and without allocating:
// what a writer checks before it writes a record's text as JSON.
func ValidJSON(b []byte) bool {
	i, ok := value(b, ws(b, 0), 1)
	return ok && ws(b, i) == len(b)
}

// ws is where the whitespace from i on ends.
func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// value reads the value at i, at nesting depth, and returns where it ends.
func value(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return str(b, i+1)
	case c == '{':
		if depth > maxDepth {
			return i, false
		}
		i = ws(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = str(b, i+1); !ok {
				return i, false
			}
			if i = ws(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = value(b, ws(b, i+1), depth+1); !ok {
				return i, false
			}
			if i = ws(b, i); i < len(b) && b[i] == ',' {
				i = ws(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				return i + 1, true
			}
			return i, false
		}
	case c == '[':
		if depth > maxDepth {
			return i, false
		}
		i = ws(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = value(b, i, depth+1); !ok {
				return i, false
			}
			if i = ws(b, i); i < len(b) && b[i] == ',' {
				i = ws(b, i+1)
				continue
			}
			if i < len(b) && b[i] == ']' {
				return i + 1, true
			}
			return i, false
		}
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// str reads a string's content from i (after its opening quote) and
// returns where it ends, after its closing quote.
func str(b []byte, i int) (int, bool) {
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !hex(b[i+2]) || !hex(b[i+3]) || !hex(b[i+4]) || !hex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, false
			}
			i += n
		}
	}
	return i, false
}

func hex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads a number from i: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
