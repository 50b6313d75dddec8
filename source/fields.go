package source

import (
	"math"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/mtime"
)

// PlausibleFrom is 2000-01-01T00:00:00Z: an event time before it is
// implausible, which catches seconds read as milliseconds (they land in
// 1970).
const PlausibleFrom mtime.Time = 946684800000

// Time reads a JSON value as an instant: an RFC 3339 string, or a number of
// epoch milliseconds (a fraction is truncated). ok is false for anything
// else, and for numbers beyond mtime's range. Every weir command reads event
// and arrival times with it, so they agree on which lines have a time.
func Time(v *fastjson.Value) (t mtime.Time, ok bool) {
	if v == nil {
		return 0, false // no such field
	}
	switch v.Type() {
	case fastjson.TypeString:
		t, err := mtime.Parse(v.GetStringBytes())
		return t, err == nil
	case fastjson.TypeNumber:
		f := v.GetFloat64()
		if math.IsNaN(f) || math.IsInf(f, 0) || f > float64(mtime.MaxTime) || f < float64(mtime.MinTime) {
			return 0, false
		}
		if i, err := v.Int64(); err == nil {
			return mtime.Time(i), true
		}
		return mtime.Time(math.Floor(f)), true
	}
	return 0, false
}

// Get returns the value at a dotted path split in parts, or nil when it is
// missing or null.
func Get(v *fastjson.Value, path []string) *fastjson.Value {
	v = v.Get(path...)
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil
	}
	return v
}
