package weir

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/weirstream/weir/window"
)

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkpointable says why the JSON state codec cannot round-trip values of
// type t (a key, an accumulator or a result of an aggregation), or "" when
// it can: what it would lose silently (an unexported field, which restores
// as its zero value) and what it cannot hold at all (channels, funcs,
// complex numbers, interfaces, which decode as maps and numbers). A type
// with MarshalJSON and UnmarshalJSON, or MarshalText and UnmarshalText, is
// taken at its word.
func checkpointable(t reflect.Type) string {
	return (&codecCheck{seen: map[reflect.Type]bool{}}).check(t, "")
}

type codecCheck struct{ seen map[reflect.Type]bool }

// what names the value at path: the whole value, a field or an element.
func what(path string) string {
	switch {
	case path == "":
		return "it"
	case strings.HasPrefix(path, "."):
		return "field " + path
	}
	return "element " + path
}

// decodes says whether a value of t decodes itself with u, as encoding/json
// calls it: on a pointer to the value (the decoder allocates a nil one).
func decodes(t, u reflect.Type) bool {
	return reflect.PointerTo(t).Implements(u) || t.Kind() == reflect.Pointer && t.Implements(u)
}

func (c *codecCheck) check(t reflect.Type, path string) string {
	for _, m := range []struct {
		marshaler, unmarshaler reflect.Type
		enc, dec               string
	}{{jsonMarshaler, jsonUnmarshaler, "MarshalJSON", "UnmarshalJSON"}, {textMarshaler, textUnmarshaler, "MarshalText", "UnmarshalText"}} {
		if t.Kind() == reflect.Interface {
			break
		}
		encodes, dec := t.Implements(m.marshaler), decodes(t, m.unmarshaler)
		switch {
		case encodes && dec:
			return ""
		case encodes:
			return fmt.Sprintf("%s is a %s, which has %s and no %s: a restore would not read what it wrote", what(path), t, m.enc, m.dec)
		case reflect.PointerTo(t).Implements(m.marshaler):
			return fmt.Sprintf("%s is a %s, whose %s has a pointer receiver, which encoding/json does not call on a value: give it a value receiver", what(path), t, m.enc)
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return ""
	case reflect.Complex64, reflect.Complex128:
		return fmt.Sprintf("%s is a complex number (%s), which JSON cannot hold", what(path), t)
	case reflect.Chan:
		return fmt.Sprintf("%s is a channel (%s), which JSON cannot hold", what(path), t)
	case reflect.Func:
		return fmt.Sprintf("%s is a func (%s), which JSON cannot hold", what(path), t)
	case reflect.UnsafePointer:
		return fmt.Sprintf("%s is an unsafe.Pointer, which JSON cannot hold", what(path))
	case reflect.Interface:
		return fmt.Sprintf("%s is an interface (%s): JSON would restore a map, a slice, a string, a float64 or a bool in it, not the value it held", what(path), t)
	case reflect.Pointer:
		return c.check(t.Elem(), path)
	case reflect.Slice, reflect.Array:
		return c.check(t.Elem(), path+"[i]")
	case reflect.Map:
		k := t.Key()
		switch {
		case k.Kind() == reflect.String,
			k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr,
			k.Implements(textMarshaler) && decodes(k, textUnmarshaler):
		default:
			return fmt.Sprintf("%s is a map with keys of type %s, which JSON cannot hold as object keys (strings, integers, or types with MarshalText and UnmarshalText)", what(path), k)
		}
		return c.check(t.Elem(), path+"[k]")
	case reflect.Struct:
		if c.seen[t] {
			return ""
		}
		c.seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Tag.Get("json") == "-" {
				continue // left out on purpose
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case f.Anonymous && ft.Kind() == reflect.Struct && !f.IsExported() && f.Type.Kind() == reflect.Pointer:
				return fmt.Sprintf("%s is an embedded pointer to an unexported struct, which encoding/json cannot set", what(path+"."+f.Name))
			case f.Anonymous && ft.Kind() == reflect.Struct:
				// Its exported fields are promoted into the struct's.
				if why := c.check(f.Type, path); why != "" {
					return why
				}
			case !f.IsExported():
				return fmt.Sprintf("%s is unexported: JSON leaves it out, and a restore would make it zero", what(path+"."+f.Name))
			default:
				if why := c.check(f.Type, path+"."+f.Name); why != "" {
					return why
				}
			}
		}
		return ""
	}
	return fmt.Sprintf("%s is a %s, which JSON cannot hold", what(path), t)
}

// checkState refuses, when the pipeline is built, an aggregation whose
// state the JSON codec cannot round-trip: its keys, its accumulators and,
// in retracting mode, the results it retracts.
func (p *Pipeline) checkState(label string, mode window.Mode, key, acc, out reflect.Type) {
	types := []struct {
		role string
		t    reflect.Type
	}{{"key", key}, {"accumulator", acc}}
	if mode == window.Retracting {
		types = append(types, struct {
			role string
			t    reflect.Type
		}{"result", out})
	}
	for _, s := range types {
		if why := checkpointable(s.t); why != "" {
			p.fail("aggregation %s: the %s type %s cannot be %s: %s", label, s.role, s.t, p.encoded(), why)
			return
		}
	}
}
