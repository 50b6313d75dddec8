package mtime

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		t    Time
		want string
	}{
		{0, "1970-01-01T00:00:00.000Z"},
		{-1, "1969-12-31T23:59:59.999Z"},
		{1788782401000, "2026-09-07T12:00:01.000Z"},
		{MaxTime, "9999-12-31T23:59:59.999Z"},
		{MinTime, "0001-01-01T00:00:00.000Z"},
		{951782400000, "2000-02-29T00:00:00.000Z"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("%d: got %s, want %s", tt.t, got, tt.want)
		}
	}
}

func TestFormatMatchesTimePackage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		ms := Time(r.Int64N(int64(MaxTime-MinTime))) + MinTime
		want := ms.Time().Format("2006-01-02T15:04:05.000Z")
		if got := ms.String(); got != want {
			t.Fatalf("%d: got %s, want %s", ms, got, want)
		}
		back, err := Parse([]byte(want))
		if err != nil || back != ms {
			t.Fatalf("Parse(%s) = %d, %v; want %d", want, back, err, ms)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Time
		ok   bool
	}{
		{"2026-09-07T12:00:01Z", 1788782401000, true},
		{"2026-09-07T12:00:01.5Z", 1788782401500, true},
		{"2026-09-07T12:00:01.123456789Z", 1788782401123, true},
		{"2026-09-07t12:00:01z", 1788782401000, true},
		{"2026-09-07 12:00:01Z", 1788782401000, true},
		{"2026-09-07T14:00:01+02:00", 1788782401000, true},
		{"2026-09-07T12:00:01.250-00:30", 1788784201250, true},
		{"2026-02-30T12:00:01Z", 0, false},
		{"2026-09-07T24:00:01Z", 0, false},
		{"2026-09-07T12:00:01.Z", 0, false},
		{"yesterday", 0, false},
		{"2026-09-07", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := Parse([]byte(tt.in))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestAddSaturates(t *testing.T) {
	if got := MaxTime.Add(5); got != MaxTime {
		t.Errorf("MaxTime+5 = %d", got)
	}
	if got := MinTime.Add(-5); got != MinTime {
		t.Errorf("MinTime-5 = %d", got)
	}
	if got := Time(10).Add(-3); got != 7 {
		t.Errorf("10-3 = %d", got)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want Time
		ok   bool
	}{
		{"2s", 2000, true}, {"20000ms", 20000, true}, {"1m30s", 90000, true}, {"1d", 86400000, true},
		{"0", 0, true}, {"0s", 0, true}, {"60", 0, false}, {"soon", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %d, %v", tt.in, got, err)
		}
	}
	if Millis(1500*time.Microsecond) != 1 {
		t.Error("Millis does not truncate")
	}
}

func BenchmarkParse(b *testing.B) {
	s := []byte("2026-09-07T12:00:01.123Z")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFormat(b *testing.B) {
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		buf = Time(1788782401123).AppendFormat(buf[:0])
	}
}

func TestAlignUp(t *testing.T) {
	for _, c := range []struct{ t, d, want Time }{
		{0, 60_000, 0}, {1, 60_000, 60_000}, {60_000, 60_000, 60_000}, {60_001, 60_000, 120_000},
		{-1, 60_000, 0}, {-60_000, 60_000, -60_000}, {-60_001, 60_000, -60_000},
	} {
		if got := AlignUp(c.t, c.d); got != c.want {
			t.Errorf("AlignUp(%d, %d) = %d, want %d", c.t, c.d, got, c.want)
		}
	}
}
