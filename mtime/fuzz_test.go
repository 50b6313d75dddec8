package mtime

import "testing"

// FuzzParse: any text is an instant or an error, never a panic, and an
// instant prints as text that parses back to it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2026-09-07T12:00:01Z", "2026-09-07T12:00:01.5+02:00", "9999-12-31T23:59:59.999Z",
		"0001-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-09-07 12:00:01Z", "2026-09-07T12:00:01.123456789-07:30", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		ts, err := Parse(s)
		if err != nil {
			return
		}
		if ts < MinTime || ts > MaxTime {
			t.Fatalf("%q parsed to %d, out of range", s, ts)
		}
		back, err := Parse([]byte(ts.String()))
		if err != nil || back != ts {
			t.Errorf("%q -> %s -> %v, %v", s, ts, back, err)
		}
	})
}
