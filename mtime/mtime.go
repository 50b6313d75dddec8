// Package mtime is weir's representation of time: event time and processing
// time as integer milliseconds since the Unix epoch, UTC.
//
// weir keeps time as an integer in every hot path (assigning windows, comparing
// against the watermark, indexing timers); time.Time appears only at the edges,
// when a user's value is read or a result is written.
//
// Two instants are special. MinTime is "before anything": the watermark of a job
// that has seen no event. MaxTime is "the end of time": the watermark after a
// bounded input has ended, at which every window fires and closes. MaxTime is
// 9999-12-31T23:59:59.999Z, so that it prints as a valid RFC 3339 instant and
// still sorts after every real event.
package mtime

import (
	"errors"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/text"
)

// Time is an instant in milliseconds since 1970-01-01T00:00:00Z.
type Time int64

const (
	// MinTime is before every event: the watermark before any input.
	MinTime Time = -62135596800000 // 0001-01-01T00:00:00Z
	// MaxTime is the end of time: the watermark once a bounded input has ended.
	MaxTime Time = 253402300799999 // 9999-12-31T23:59:59.999Z
)

// FromTime converts t, truncated to the millisecond.
func FromTime(t time.Time) Time { return Time(t.UnixMilli()) }

// Now is the wall clock, in milliseconds.
func Now() Time { return Time(time.Now().UnixMilli()) }

// Millis converts a duration to whole milliseconds (truncated).
func Millis(d time.Duration) Time { return Time(d / time.Millisecond) }

// Time converts to a time.Time in UTC.
func (t Time) Time() time.Time { return time.UnixMilli(int64(t)).UTC() }

// Add returns t+d, saturating at MinTime and MaxTime.
func (t Time) Add(d Time) Time {
	s := t + d
	switch {
	case d > 0 && (s < t || s > MaxTime):
		return MaxTime
	case d < 0 && (s > t || s < MinTime):
		return MinTime
	}
	return s
}

// AlignUp is the smallest multiple of d at or after t: the next aligned
// firing of a period d (Beam's AlignedDelay), t itself when it is one. d
// must be positive.
func AlignUp(t, d Time) Time {
	m := t % d
	if m < 0 {
		m += d
	}
	if m == 0 {
		return t
	}
	return t + d - m
}

// String formats t as RFC 3339 in UTC with milliseconds, e.g.
// 2026-09-07T12:00:01.000Z.
func (t Time) String() string { return string(t.AppendFormat(nil)) }

// AppendFormat appends t formatted as by String, without allocating when buf
// has room.
func (t Time) AppendFormat(buf []byte) []byte {
	ms := int64(t)
	secs := ms / 1000
	frac := ms % 1000
	if frac < 0 {
		frac += 1000
		secs--
	}
	days := secs / 86400
	rem := secs % 86400
	if rem < 0 {
		rem += 86400
		days--
	}
	y, m, d := civil(days)
	if 0 <= y && y <= 9999 {
		// Every field of its width: two digits at a time.
		var a [24]byte
		put2(a[0:], y/100)
		put2(a[2:], y%100)
		a[4] = '-'
		put2(a[5:], m)
		a[7] = '-'
		put2(a[8:], d)
		a[10] = 'T'
		put2(a[11:], rem/3600)
		a[13] = ':'
		put2(a[14:], rem%3600/60)
		a[16] = ':'
		put2(a[17:], rem%60)
		a[19] = '.'
		a[20] = byte('0' + frac/100)
		put2(a[21:], frac%100)
		a[23] = 'Z'
		return append(buf, a[:]...)
	}
	buf = text.AppendPadded(buf, y, 4)
	buf = append(buf, '-')
	buf = text.AppendPadded(buf, m, 2)
	buf = append(buf, '-')
	buf = text.AppendPadded(buf, d, 2)
	buf = append(buf, 'T')
	buf = text.AppendPadded(buf, rem/3600, 2)
	buf = append(buf, ':')
	buf = text.AppendPadded(buf, rem%3600/60, 2)
	buf = append(buf, ':')
	buf = text.AppendPadded(buf, rem%60, 2)
	buf = append(buf, '.')
	buf = text.AppendPadded(buf, frac, 3)
	return append(buf, 'Z')
}

// pairs are the two digits of 00 to 99.
const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// put2 writes v, from 0 to 99, as two digits at b.
func put2(b []byte, v int64) { b[0], b[1] = pairs[2*v], pairs[2*v+1] }

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func civil(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is the inverse of civil.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := m + 9
	if m > 2 {
		mp = m - 3
	}
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// ErrSyntax is returned by Parse for text that is not an RFC 3339 instant.
var ErrSyntax = errors.New("mtime: not an RFC 3339 timestamp")

// Parse reads an RFC 3339 timestamp ("2026-09-07T12:00:01Z",
// "2026-09-07T12:00:01.250+02:00", a space instead of T is accepted), truncated
// to the millisecond. The common UTC form is parsed without allocating; other
// forms fall back to the time package.
func Parse(s []byte) (Time, error) {
	// Fast path: YYYY-MM-DDTHH:MM:SS[.fff…]Z
	if len(s) >= 20 && s[4] == '-' && s[7] == '-' && (s[10] == 'T' || s[10] == 't' || s[10] == ' ') &&
		s[13] == ':' && s[16] == ':' && (s[len(s)-1] == 'Z' || s[len(s)-1] == 'z') {
		y, ok1 := digits(s[0:4])
		mo, ok2 := digits(s[5:7])
		d, ok3 := digits(s[8:10])
		h, ok4 := digits(s[11:13])
		mi, ok5 := digits(s[14:16])
		se, ok6 := digits(s[17:19])
		rest := s[19 : len(s)-1]
		var ms int64
		ok7 := true
		if len(rest) > 0 {
			if rest[0] != '.' || len(rest) < 2 {
				ok7 = false
			} else {
				f := rest[1:]
				for i, c := range f {
					if c < '0' || c > '9' {
						ok7 = false
						break
					}
					if i < 3 {
						ms = ms*10 + int64(c-'0')
					}
				}
				for i := len(f); i < 3; i++ {
					ms *= 10
				}
			}
		}
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && mo >= 1 && mo <= 12 && d >= 1 &&
			d <= daysIn(y, mo) && h < 24 && mi < 60 && se < 60 {
			days := daysFromCivil(y, mo, d)
			return inRange(Time((days*86400+h*3600+mi*60+se)*1000 + ms))
		}
		return 0, ErrSyntax
	}
	str := string(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, str); err == nil {
			return inRange(FromTime(t))
		}
	}
	return 0, ErrSyntax
}

// inRange refuses an instant before MinTime (the year 0000, or 0001 with an
// offset east of UTC): weir's time has no room for it.
func inRange(t Time) (Time, error) {
	if t < MinTime || t > MaxTime {
		return 0, ErrSyntax
	}
	return t, nil
}

func digits(b []byte) (int64, bool) {
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// FormatDuration prints d in milliseconds as a short human duration
// ("250ms", "2s", "5m", "1h30m").
func FormatDuration(d Time) string {
	return time.Duration(int64(d) * int64(time.Millisecond)).String()
}

// ParseDuration reads a duration: Go's syntax ("1m30s", "250ms", "2h") plus a
// day unit ("1d"). A bare number is refused, so that "60" is never read as 60
// nanoseconds or 60 seconds by accident.
func ParseDuration(s string) (Time, error) {
	if s == "0" {
		return 0, nil
	}
	if n := len(s); n > 1 && s[n-1] == 'd' {
		days, err := strconv.ParseFloat(s[:n-1], 64)
		if err != nil || days < 0 {
			return 0, errors.New("not a duration")
		}
		return Time(days * 86400000), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration")
	}
	return Millis(d), nil
}
