package weir

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
)

type ccSeen struct {
	Count int
	seen  map[string]bool
}

type ccInner struct{ Hidden ccHidden }
type ccHidden struct{ n int }

type ccList struct{ Items []ccInner }

type ccTree struct {
	Value    int
	Children []*ccTree
}

type ccFuncs struct{ OnFire func() }
type ccChan struct{ C chan int }
type ccComplex struct{ Z complex128 }
type ccAny struct{ V any }
type ccSkipped struct {
	Count int
	Cache map[string]int `json:"-"`
}

type ccPoint struct{ X, Y int }
type ccByPoint struct{ M map[ccPoint]int }

type ccEmbedded struct {
	ccBase
	Extra int
}
type ccBase struct{ Total int }

type ccEmbeddedBad struct{ ccBaseBad }
type ccBaseBad struct{ total int }

type ccEmbeddedPtr struct{ *ccBase }

// CCBase is exported: encoding/json sets a pointer to it embedded.
type CCBase struct{ Total int }
type ccEmbeddedExportedPtr struct{ *CCBase }

// ccOwn has unexported fields and its own JSON codec: it is taken at its
// word.
type ccOwn struct{ seen map[string]bool }

func (o ccOwn) MarshalJSON() ([]byte, error)  { return json.Marshal(o.seen) }
func (o *ccOwn) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &o.seen) }

type ccHalf struct{ n int }

func (h ccHalf) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(h.n)), nil }

type ccPtrOnly struct{ n int }

func (h *ccPtrOnly) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(h.n)), nil }
func (h *ccPtrOnly) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &h.n) }

type ccTextKey struct{ a, b int }

func (k ccTextKey) MarshalText() ([]byte, error) { return []byte(strconv.Itoa(k.a*1000 + k.b)), nil }
func (k *ccTextKey) UnmarshalText(b []byte) error {
	n, err := strconv.Atoi(string(b))
	k.a, k.b = n/1000, n%1000
	return err
}

// What the JSON state codec cannot round-trip is named with the path to
// it; what it can is accepted.
func TestCheckpointable(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[int64](), ""},
		{reflect.TypeFor[string](), ""},
		{reflect.TypeFor[mtime.Time](), ""},
		{reflect.TypeFor[time.Time](), ""},
		{reflect.TypeFor[[]byte](), ""},
		{reflect.TypeFor[aggregate.Mean](), ""},
		{reflect.TypeFor[aggregate.Extreme[float64]](), ""},
		{reflect.TypeFor[map[string]struct{}](), ""},
		{reflect.TypeFor[map[int64][]string](), ""},
		{reflect.TypeFor[ccTree](), ""},
		{reflect.TypeFor[ccSkipped](), ""},
		{reflect.TypeFor[ccEmbedded](), ""},
		{reflect.TypeFor[ccEmbeddedExportedPtr](), ""},
		{reflect.TypeFor[ccOwn](), ""},
		{reflect.TypeFor[[]ccOwn](), ""},
		{reflect.TypeFor[map[ccTextKey]int](), ""},
		{reflect.TypeFor[ccSeen](), "field .seen is unexported: JSON leaves it out, and a restore would make it zero"},
		{reflect.TypeFor[*ccSeen](), "field .seen is unexported: JSON leaves it out, and a restore would make it zero"},
		{reflect.TypeFor[ccList](), "field .Items[i].Hidden.n is unexported: JSON leaves it out, and a restore would make it zero"},
		{reflect.TypeFor[map[string][2]ccHidden](), "element [k][i].n is unexported: JSON leaves it out, and a restore would make it zero"},
		{reflect.TypeFor[ccEmbeddedBad](), "field .total is unexported: JSON leaves it out, and a restore would make it zero"},
		{reflect.TypeFor[ccEmbeddedPtr](), "field .ccBase is an embedded pointer to an unexported struct, which encoding/json cannot set"},
		{reflect.TypeFor[ccFuncs](), "field .OnFire is a func (func()), which JSON cannot hold"},
		{reflect.TypeFor[ccChan](), "field .C is a channel (chan int), which JSON cannot hold"},
		{reflect.TypeFor[ccComplex](), "field .Z is a complex number (complex128), which JSON cannot hold"},
		{reflect.TypeFor[complex64](), "it is a complex number (complex64), which JSON cannot hold"},
		{reflect.TypeFor[ccAny](), "field .V is an interface (interface {}): JSON would restore a map, a slice, a string, a float64 or a bool in it, not the value it held"},
		{reflect.TypeFor[[]any](), "element [i] is an interface (interface {}): JSON would restore a map, a slice, a string, a float64 or a bool in it, not the value it held"},
		{reflect.TypeFor[ccByPoint](), "field .M is a map with keys of type weir.ccPoint, which JSON cannot hold as object keys (strings, integers, or types with MarshalText and UnmarshalText)"},
		{reflect.TypeFor[ccHalf](), "it is a weir.ccHalf, which has MarshalJSON and no UnmarshalJSON: a restore would not read what it wrote"},
		{reflect.TypeFor[ccPtrOnly](), "it is a weir.ccPtrOnly, whose MarshalJSON has a pointer receiver, which encoding/json does not call on a value: give it a value receiver"},
		{reflect.TypeFor[*ccPtrOnly](), ""},
	} {
		if got := checkpointable(c.t); got != c.want {
			t.Errorf("%s: %q\nwant %q", c.t, got, c.want)
		}
	}
}
