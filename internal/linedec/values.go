package linedec

import (
	"math"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/text"
)

// The values of a line that are compared rather than computed with (keys,
// ids, partitions, distinct values) are scalars, each with one identity and
// one canonical text, so that every reader of a line tells two values apart
// in the same way.

// Scalar reports a string, a boolean or a JSON number (fastjson also takes
// NaN and inf, which JSON has not).
func Scalar(v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeString, fastjson.TypeTrue, fastjson.TypeFalse:
		return true
	case fastjson.TypeNumber:
		var buf [32]byte
		raw := v.MarshalTo(buf[:0])
		return ValidNumber(raw) && !math.IsInf(v.GetFloat64(), 0)
	}
	return false
}

// ValidNumber reports whether b is a number as JSON writes them:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func ValidNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// AppendIdentity appends a scalar's identity: a type byte, then the
// string's bytes as they are (invalid UTF-8 included) or the canonical
// number. Two values have the same identity exactly when they are the same
// value: for ids, partitions and distinct values, which are compared, never
// written.
func AppendIdentity(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeString:
		return append(append(b, 's'), v.GetStringBytes()...)
	case fastjson.TypeNumber:
		return AppendCanonical(append(b, 'n'), v)
	case fastjson.TypeTrue:
		return append(b, 't')
	case fastjson.TypeFalse:
		return append(b, 'f')
	}
	return append(b, '?')
}

// IsIntText reports whether a JSON number is written without a fraction or
// an exponent.
func IsIntText(b []byte) bool {
	for _, c := range b {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// AppendCanonical appends the JSON text of a scalar in one canonical form, so
// that "c1" and "\u0063\u0031" are one key and the string "1" is not the
// number 1.
func AppendCanonical(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeString:
		return text.AppendJSONString(b, v.GetStringBytes())
	case fastjson.TypeNumber:
		start := len(b)
		b = v.MarshalTo(b)
		if IsIntText(b[start:]) {
			if n, err := v.Int64(); err == nil {
				return strconv.AppendInt(b[:start], n, 10)
			}
		}
		return text.AppendJSONFloat(b[:start], v.GetFloat64())
	case fastjson.TypeTrue:
		return append(b, "true"...)
	case fastjson.TypeFalse:
		return append(b, "false"...)
	}
	return v.MarshalTo(b)
}
