package linedec

import (
	"math/big"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/source"
)

// The values of a line that are compared rather than computed with (keys,
// ids, partitions, distinct values) are scalars, each with one identity and
// one canonical text, so that every reader of a line tells two values apart
// in the same way.
//
// A number is its exact decimal value, read from its JSON text and never
// through a float64: 1e3, 1000, 1000.0 and 1.0e3 are one number (JSON does
// not tell them apart), 18446744073709551615 and 18446744073709551614 are
// two, -0 is 0, and the string "1" is not the number 1. Every number JSON
// can write is a scalar, whatever its size: 1e400 has an exact value too.
// Sums and the other aggregates read numbers as numbers, with their own
// limits.

// plainDigits is the most digits an integer's canonical text has: a longer
// integer is written with an exponent (1e+1000), so that a line of a few
// bytes (1e999999999) cannot make a key of a billion.
const plainDigits = 1000

// IsScalar reports a string, a boolean or a JSON number, whatever its
// size (fastjson also takes NaN, inf and texts such as 01, which JSON has
// not).
func IsScalar(v *source.Value) bool {
	switch v.Type {
	case source.String, source.True, source.False:
		return true
	case source.Number:
		return v.IsInt || ValidNumber(v.Text)
	}
	return false
}

// Scalar is IsScalar of a JSON value. A number's text is read into *buf,
// kept grown for the next call, so that a reader that checks one a line
// allocates nothing (fastjson's MarshalTo takes any buffer to the heap);
// buf may be nil.
func Scalar(v *fastjson.Value, buf *[]byte) bool {
	var none []byte
	if buf == nil {
		buf = &none
	}
	*buf = (*buf)[:0]
	x := source.ValueOf(v, buf)
	return IsScalar(&x)
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
// string's bytes as they are (invalid UTF-8 included) or the number's
// canonical text. Two values have the same identity exactly when they are
// the same value: for ids, partitions and distinct values, which are
// compared, never written.
func AppendIdentity(b []byte, v *source.Value) []byte {
	switch v.Type {
	case source.String:
		return append(append(b, 's'), v.Text...)
	case source.Number:
		return AppendCanonical(append(b, 'n'), v)
	case source.True:
		return append(b, 't')
	case source.False:
		return append(b, 'f')
	}
	return append(b, '?')
}

// AppendCanonical appends the JSON text of a scalar in one canonical form, so
// that "c1" and "\u0063\u0031" are one key, 1e3 and 1000 another, and the
// string "1" is not the number 1.
//
// A number is written by its exact value: an integer in plain digits (up
// to plainDigits of them, then as d.ddde+x); any other number as
// encoding/json writes a float64, in plain decimal when its magnitude is
// from 1e-6 to below 1e21 and as d.ddde±x otherwise, but with all its
// digits; zero as 0, without a sign. So a number below 1e21 that a float64
// holds keeps the text it had when it went through one. A number JSON has
// not (NaN, inf, 01) is appended as it is.
func AppendCanonical(b []byte, v *source.Value) []byte {
	switch v.Type {
	case source.String:
		return text.AppendJSONString(b, v.Text)
	case source.Number:
		if v.IsInt {
			return strconv.AppendInt(b, v.Int, 10) // its own canonical text
		}
		start := len(b)
		return canonicalNumber(append(b, v.Text...), start)
	case source.True:
		return append(b, "true"...)
	case source.False:
		return append(b, "false"...)
	}
	return append(b, "null"...)
}

// AppendCanonicalJSON is AppendCanonical of a JSON value, which need not
// be a scalar: an object or an array is appended as it is.
func AppendCanonicalJSON(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject, fastjson.TypeArray:
		return v.MarshalTo(b)
	}
	var buf [32]byte
	slab := buf[:0]
	x := source.ValueOf(v, &slab)
	return AppendCanonical(b, &x)
}

// canonicalNumber rewrites the JSON number b[start:] as its canonical text
// (see AppendCanonical), without a float64, and without allocating but for
// an exponent of more than 18 digits.
func canonicalNumber(b []byte, start int) []byte {
	num := b[start:]
	if !ValidNumber(num) {
		return b
	}
	if source.IsIntText(num) && len(num) <= plainDigits {
		// Plain digits are canonical already (JSON has no leading zeros),
		// but for -0.
		if len(num) == 2 && num[0] == '-' && num[1] == '0' {
			return append(b[:start], '0')
		}
		return b
	}
	end := len(b)
	i := start
	neg := b[i] == '-'
	if neg {
		i++
	}
	var m mantissa
	m.is = i
	for i < end && isDigit(b[i]) {
		i++
	}
	m.ni = i - m.is
	m.fs = i
	if i < end && b[i] == '.' {
		i++
		m.fs = i
		for i < end && isDigit(b[i]) {
			i++
		}
	}
	n := m.ni + i - m.fs // the digits, both parts
	shift := -int64(i - m.fs)
	var exp int64      // the exponent, when it has at most 18 digits
	es, ee := end, end // its digits, when it has more
	expNeg := false
	if i < end {
		i++ // e or E
		if b[i] == '+' || b[i] == '-' {
			expNeg = b[i] == '-'
			i++
		}
		for i < end-1 && b[i] == '0' {
			i++
		}
		if end-i > 18 {
			es = i
		} else {
			for ; i < end; i++ {
				exp = exp*10 + int64(b[i]-'0')
			}
			if expNeg {
				exp = -exp
			}
		}
	}
	first, last := 0, n-1
	for first < n && m.digit(b, first) == '0' {
		first++
	}
	if first == n {
		return append(b[:start], '0')
	}
	for m.digit(b, last) == '0' {
		last--
	}
	// The value is the digits first to last times 10^(exponent+shift), and
	// its leading digit is at 10^x.
	digits := last - first + 1
	shift += int64(n - 1 - last)
	// The canonical text goes after the number's, then takes its place.
	out := b
	if neg {
		out = append(out, '-')
	}
	if es < ee {
		// An exponent beyond 10^18: no plain form, and x is the exponent
		// moved by at most the text's length.
		x := new(big.Int)
		x.SetString(string(b[es:ee]), 10)
		if expNeg {
			x.Neg(x)
		}
		x.Add(x, big.NewInt(shift+int64(digits)-1))
		out = m.appendExponent(out, first, last, x.Sign() < 0, x.Abs(x).Append(nil, 10))
		return append(out[:start], out[end:]...)
	}
	e := exp + shift
	x := e + int64(digits) - 1
	switch {
	case e >= 0 && x < plainDigits:
		out = m.appendDigits(out, first, last+1)
		for range e {
			out = append(out, '0')
		}
	case e < 0 && x >= -6 && x < 21:
		if x < 0 {
			out = append(out, '0', '.')
			for range -x - 1 {
				out = append(out, '0')
			}
			out = m.appendDigits(out, first, last+1)
		} else {
			point := first + int(x) + 1
			out = m.appendDigits(out, first, point)
			out = append(out, '.')
			out = m.appendDigits(out, point, last+1)
		}
	default:
		var buf [20]byte
		out = m.appendExponent(out, first, last, x < 0, strconv.AppendUint(buf[:0], absInt(x), 10))
	}
	return append(out[:start], out[end:]...)
}

// mantissa is where the digits of a number's text are in a buffer: its
// integer digits at is (ni of them), its fraction's at fs. They are read as
// one sequence, the fraction's after the integer's.
type mantissa struct{ is, ni, fs int }

// digit is digit k of the sequence.
func (m mantissa) digit(b []byte, k int) byte {
	if k < m.ni {
		return b[m.is+k]
	}
	return b[m.fs+k-m.ni]
}

// appendDigits appends digits from to to-1 of the sequence in b to b: they
// lie before len(b), so an append that grows b reads them from the array it
// leaves, one that does not writes after them.
func (m mantissa) appendDigits(b []byte, from, to int) []byte {
	if from < m.ni {
		b = append(b, b[m.is+from:m.is+min(to, m.ni)]...)
	}
	if to > m.ni {
		b = append(b, b[m.fs+max(from-m.ni, 0):m.fs+to-m.ni]...)
	}
	return b
}

// appendExponent appends digits first to last as d.ddd, then e, the sign
// of the exponent and its digits x, as encoding/json writes 1e+21 and 1e-7.
func (m mantissa) appendExponent(b []byte, first, last int, neg bool, x []byte) []byte {
	b = m.appendDigits(b, first, first+1)
	if last > first {
		b = append(b, '.')
		b = m.appendDigits(b, first+1, last+1)
	}
	if neg {
		b = append(b, 'e', '-')
	} else {
		b = append(b, 'e', '+')
	}
	return append(b, x...)
}

func absInt(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
