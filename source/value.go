package source

import (
	"math"
	"unsafe"

	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"

	"github.com/weirstream/weir/mtime"
)

// Type is what a field's value is, as the line rules tell values apart.
type Type uint8

// The types of values: JSON's, null read as absent.
const (
	// Absent is a field a record lacks, or null.
	Absent Type = iota
	// String is a string.
	String
	// Number is a number.
	Number
	// True is true.
	True
	// False is false.
	False
	// Other is an object or an array.
	Other
)

// A Value is one field of a record as the line rules read it: what a JSON
// line's value is (ValueOf), or what a record of a binary format holds,
// read without its JSON text. Its Text is only valid as long as what it
// was read from is.
type Value struct {
	// Text is a String's bytes (unescaped, as they are: they may not be
	// UTF-8) or a Number's JSON text.
	Text []byte
	// Int is a Number's integer when IsInt says that it is one, its Text
	// Int's digits: a format's integer, read without parsing its text;
	// or, when IsTime says so, the instant (epoch milliseconds) a String's
	// RFC 3339 Text parses as (a format's timestamp), whose Text may be
	// left out where only its instant is read (linedec.Projection).
	Int    int64
	Type   Type
	IsInt  bool
	IsTime bool
}

// ValueOf is the JSON value v (nil: Absent, as null is) as a Value; a
// number's text is appended to *slab, which keeps it (and grows).
func ValueOf(v *fastjson.Value, slab *[]byte) Value {
	var x Value
	x.SetJSON(v, slab)
	return x
}

// SetJSON sets x to ValueOf(v, slab).
func (x *Value) SetJSON(v *fastjson.Value, slab *[]byte) {
	if v == nil {
		*x = Value{}
		return
	}
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes() // a string's
		*x = Value{Type: String, Text: b}
	case fastjson.TypeNumber:
		start := len(*slab)
		*slab = v.MarshalTo(*slab)
		*x = Value{Type: Number, Text: (*slab)[start:len(*slab):len(*slab)]}
	case fastjson.TypeTrue:
		*x = Value{Type: True}
	case fastjson.TypeFalse:
		*x = Value{Type: False}
	case fastjson.TypeNull:
		*x = Value{}
	default:
		*x = Value{Type: Other}
	}
}

// ReadJSON reads the values at paths of the JSON object v into out, one a
// path (a nil path's Absent, an empty one's the object itself); their
// numbers' texts are appended to *slab.
func ReadJSON(v *fastjson.Value, paths [][]string, out []Value, slab *[]byte) {
	o, _ := v.Object() // a one-name path read from it straight: 7 ns a line less
	for i, p := range paths {
		var x *fastjson.Value
		switch {
		case p == nil:
			out[i] = Value{}
			continue
		case len(p) == 1 && o != nil:
			x = o.Get(p[0])
		default:
			x = v.Get(p...)
		}
		out[i].SetJSON(x, slab) // null: Absent
	}
}

// Float is a Number's value as a float64, as fastjson reads its text
// (GetFloat64): ±Inf beyond a float64's range.
func (v *Value) Float() float64 {
	if v.IsInt {
		return float64(v.Int)
	}
	return fastfloat.ParseBestEffort(b2s(v.Text))
}

// Int64 is a Number's value when it is an integer written without a
// fraction or an exponent, within an int64's range (as fastjson's Int64
// reads its text).
func (v *Value) Int64() (int64, bool) {
	if v.IsInt {
		return v.Int, true
	}
	if v.Type != Number || !IsIntText(v.Text) {
		return 0, false // and no error to make
	}
	i, err := fastfloat.ParseInt64(b2s(v.Text))
	return i, err == nil
}

// TimeOf reads a value as an instant: an RFC 3339 string, or a number of
// epoch milliseconds (a fraction is truncated). ok is false for anything
// else, and for numbers beyond mtime's range. Every weir command reads
// event and arrival times with it, so they agree on which lines have a
// time.
func TimeOf(v *Value) (t mtime.Time, ok bool) {
	switch v.Type {
	case String:
		if v.IsTime {
			t := mtime.Time(v.Int)
			return t, t >= mtime.MinTime && t <= mtime.MaxTime
		}
		t, err := mtime.Parse(v.Text)
		return t, err == nil
	case Number:
		if i, ok := v.Int64(); ok {
			// Its float64 is the one fastjson reads of its text: the
			// integer rounded once.
			if f := float64(i); f > float64(mtime.MaxTime) || f < float64(mtime.MinTime) {
				return 0, false
			}
			return mtime.Time(i), true
		}
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) || f > float64(mtime.MaxTime) || f < float64(mtime.MinTime) {
			return 0, false
		}
		return mtime.Time(math.Floor(f)), true
	}
	return 0, false
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

// b2s is b as a string, without a copy: for reading it at once.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
