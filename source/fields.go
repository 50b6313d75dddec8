package source

import (
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/mtime"
)

// PlausibleFrom is 2000-01-01T00:00:00Z: an event time before it is
// implausible, which catches seconds read as milliseconds (they land in
// 1970).
const PlausibleFrom mtime.Time = 946684800000

// Time reads a JSON value as an instant, as TimeOf reads it.
func Time(v *fastjson.Value) (t mtime.Time, ok bool) {
	var buf [32]byte
	slab := buf[:0]
	x := ValueOf(v, &slab)
	return TimeOf(&x)
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
