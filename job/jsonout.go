package job

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/weirstream/weir/mtime"
)

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping as encoding/json does
// (without HTML escaping); invalid UTF-8 becomes U+FFFD.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendFloat appends f as encoding/json would; NaN and infinities, which JSON
// cannot hold, become null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func appendTime(b []byte, t mtime.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b)
	return append(b, '"')
}

// timeCache remembers recently formatted instants: the panes of one
// watermark advance share their window bounds, watermark and emission time.
type timeCache struct {
	at  [64]mtime.Time
	txt [64][26]byte // "2026-09-07T12:00:01.000Z" with quotes
	ok  [64]bool
}

func (c *timeCache) append(b []byte, t mtime.Time) []byte {
	i := uint64(t) % 64
	if !c.ok[i] || c.at[i] != t {
		if t < 0 || t > mtime.MaxTime {
			return appendTime(b, t)
		}
		c.txt[i][0] = '"'
		t.AppendFormat(c.txt[i][1:1])
		c.txt[i][25] = '"'
		c.at[i], c.ok[i] = t, true
	}
	return append(b, c.txt[i][:]...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

func appendOutVal(b []byte, v outVal) []byte {
	switch v.kind {
	case vInt:
		return strconv.AppendInt(b, v.i, 10)
	case vFloat:
		return appendFloat(b, v.f)
	case vDec:
		return appendDecimal(b, v.i, v.scale)
	}
	return append(b, "null"...)
}

// appendDecimal writes d / 10^scale exactly, without trailing zeros:
// 47350, 2 -> 473.5.
func appendDecimal(b []byte, d int64, scale int8) []byte {
	if d < 0 {
		b = append(b, '-')
	}
	u := uint64(d)
	if d < 0 {
		u = uint64(-d)
	}
	var digits [24]byte
	s := strconv.AppendUint(digits[:0], u, 10)
	for len(s) <= int(scale) {
		s = append([]byte{'0'}, s...)
	}
	whole, frac := s[:len(s)-int(scale)], s[len(s)-int(scale):]
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	b = append(b, whole...)
	if len(frac) > 0 {
		b = append(b, '.')
		b = append(b, frac...)
	}
	return b
}
