package gen

import (
	"bytes"
	"io"
	"testing"

	"github.com/weirstream/weir/mtime"
)

// field returns the value of a string field of a JSON line written by this
// package (no escapes, no spaces), or nil.
func field(line []byte, name string) []byte {
	var buf [32]byte
	key := append(buf[:0], '"')
	key = append(key, name...)
	key = append(key, '"', ':')
	i := bytes.Index(line, key)
	if i < 0 {
		return nil
	}
	v := line[i+len(key):]
	if len(v) > 0 && v[0] == '"' {
		v = v[1:]
		return v[:bytes.IndexByte(v, '"')]
	}
	end := bytes.IndexAny(v, ",}")
	return v[:end]
}

func timeField(t testing.TB, line []byte, name string) mtime.Time {
	t.Helper()
	v := field(line, name)
	ts, err := mtime.Parse(v)
	if err != nil {
		t.Fatalf("%s %q: %v in %s", name, v, err, line)
	}
	return ts
}

func lines(data []byte) [][]byte {
	ls := bytes.Split(data, []byte{'\n'})
	if n := len(ls); n > 0 && len(ls[n-1]) == 0 {
		ls = ls[:n-1]
	}
	return ls
}

// streamStats are the figures of the chapter, measured on a stream with ts
// and arrival fields.
type streamStats struct {
	Lines      int
	Within2s   int // arrival - ts <= 2 s
	Between    int // 2 s < arrival - ts < 5 min
	Late       int // 5 min <= arrival - ts <= 6 h
	TooLate    int // more than 6 h
	Early      int // arrival before ts
	WebLate    int // web lines more than 2 s late
	OutOfOrder int // ts < the largest ts of the lines before
	Dups       int // event_id seen before
	Unsorted   int // arrival before the previous line's arrival
	LateOver1h int
	LateOver3h int
	Start, End mtime.Time // smallest and largest ts
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// measurer computes streamStats over the lines written to it, without
// keeping the stream.
type measurer struct {
	t        testing.TB
	s        streamStats
	idField  string
	seen     map[uint64]bool
	maxTS    mtime.Time
	lastArr  mtime.Time
	partial  []byte
	eachLine func(line []byte)
}

func newMeasurer(t testing.TB, idField string) *measurer {
	m := &measurer{t: t, idField: idField, seen: make(map[uint64]bool, 1<<16),
		maxTS: mtime.MinTime, lastArr: mtime.MinTime}
	m.s.Start, m.s.End = mtime.MaxTime, mtime.MinTime
	return m
}

func (m *measurer) Write(p []byte) (int, error) {
	n := len(p)
	if len(m.partial) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m.partial = append(m.partial, p...)
			return n, nil
		}
		m.partial = append(m.partial, p[:i]...)
		m.line(m.partial)
		m.partial = m.partial[:0]
		p = p[i+1:]
	}
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		m.line(p[:i])
		p = p[i+1:]
	}
	m.partial = append(m.partial, p...)
	return n, nil
}

func (m *measurer) line(line []byte) {
	t, s := m.t, &m.s
	if m.eachLine != nil {
		m.eachLine(line)
	}
	s.Lines++
	ts := timeField(t, line, "ts")
	arr := timeField(t, line, "arrival")
	d := arr - ts
	switch {
	case d < 0:
		s.Early++
	case d <= 2*second:
		s.Within2s++
	case d < 5*minute:
		s.Between++
	case d <= 6*hour:
		s.Late++
		if d > hour {
			s.LateOver1h++
		}
		if d > 3*hour {
			s.LateOver3h++
		}
	default:
		s.TooLate++
	}
	if d > 2*second && string(field(line, "platform")) == "web" {
		s.WebLate++
	}
	if ts < m.maxTS {
		s.OutOfOrder++
	}
	m.maxTS = max(m.maxTS, ts)
	if arr < m.lastArr {
		s.Unsorted++
	}
	m.lastArr = arr
	id := hashBytes(field(line, m.idField))
	if m.seen[id] {
		s.Dups++
	}
	m.seen[id] = true
	s.Start = min(s.Start, ts)
	s.End = max(s.End, ts)
}

// measure generates a stream and measures it.
func measure(t testing.TB, write func(io.Writer, Options) error, o Options, idField string) streamStats {
	t.Helper()
	m := newMeasurer(t, idField)
	if err := write(m, o); err != nil {
		t.Fatal(err)
	}
	if len(m.partial) > 0 {
		t.Fatalf("the stream ends without a newline: %s", m.partial)
	}
	return m.s
}

func (s streamStats) report(t testing.TB) {
	t.Helper()
	t.Logf("%d lines, %s .. %s: within 2 s %.3f%%, late (5 min-6 h) %.3f%%, between %.4f%%, out of order %.3f%%, duplicates %.3f%%, late > 1 h %.1f%% and > 3 h %.1f%% of the late",
		s.Lines, s.Start, s.End, pct(s.Within2s, s.Lines), pct(s.Late, s.Lines), pct(s.Between, s.Lines),
		pct(s.OutOfOrder, s.Lines), pct(s.Dups, s.Lines), pct(s.LateOver1h, s.Late), pct(s.LateOver3h, s.Late))
}

// hashBytes is FNV-1a: ids are compared by hash (a collision among a million
// ids has a chance of about 1 in 10^7).
func hashBytes(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
