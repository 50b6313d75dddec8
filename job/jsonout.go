package job

import (
	"strconv"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
)

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
		return text.AppendJSONFloat(b, v.f)
	case vDec:
		return appendDecimal(b, v.i, v.scale)
	case vJSON:
		return append(b, v.js...)
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
