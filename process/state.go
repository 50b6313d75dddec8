package process

import (
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
)

// State is a state a keyed process function keeps per key: a *Value, a
// *List or a *Map. It describes the state, as Flink's state descriptors
// do: the values are the running function's, one set per stage, so that a
// State may be declared once and used by every run of the function. Its
// name is unique among the function's states and stays the same from run
// to run: a checkpoint keeps each key's state by it, as JSON.
type State interface {
	// Name is the state's name.
	Name() string
	// Type is the type checkpoints hold its values as (V; []V for a
	// List, map[MK]V for a Map).
	Type() reflect.Type

	newStore() store
}

// store is a state's values in a running function, by key slot.
type store interface {
	grow(n int)
	has(slot int32) bool
	// items is how many values the slot holds: what its memory is
	// reckoned by.
	items(slot int32) int
	reset(slot int32)
	appendSlot(b []byte, slot int32) ([]byte, error)
	readSlot(data []byte, slot int32) error
}

// storeOf is the store of the state st in the function s is a context
// of, and the slot of the key being processed; it panics when s is not in
// one of the calls of a function that lists st.
func storeOf[S store](st State, s Scope) (S, int32) {
	c := s.scope()
	if !c.active {
		panic(fmt.Sprintf("process: state %q used outside a call of the function", st.Name()))
	}
	for i, x := range c.states {
		if x == st {
			return c.stores[i].(S), c.slot
		}
	}
	panic(fmt.Sprintf("process: state %q is not one of this function's states (Func.State)", st.Name()))
}

// Value is a single value per key (Flink's ValueState).
type Value[V any] struct{ name string }

// NewValue returns a value state named name.
func NewValue[V any](name string) *Value[V] { return &Value[V]{name: name} }

// Name implements State.
func (v *Value[V]) Name() string { return v.name }

// Type implements State.
func (v *Value[V]) Type() reflect.Type { return reflect.TypeFor[V]() }

func (v *Value[V]) newStore() store { return &valueStore[V]{} }

// Get is the key's value, and whether it has one.
func (v *Value[V]) Get(s Scope) (V, bool) {
	st, i := storeOf[*valueStore[V]](v, s)
	return st.vals[i], st.set[i]
}

// Set sets the key's value.
func (v *Value[V]) Set(s Scope, x V) {
	st, i := storeOf[*valueStore[V]](v, s)
	st.vals[i], st.set[i] = x, true
}

// Clear removes the key's value.
func (v *Value[V]) Clear(s Scope) {
	st, i := storeOf[*valueStore[V]](v, s)
	st.reset(i)
}

type valueStore[V any] struct {
	vals []V
	set  []bool
}

func (v *valueStore[V]) grow(n int) {
	for len(v.vals) < n {
		var zero V
		v.vals, v.set = append(v.vals, zero), append(v.set, false)
	}
}

func (v *valueStore[V]) has(i int32) bool { return v.set[i] }

func (v *valueStore[V]) items(i int32) int {
	if v.set[i] {
		return 1
	}
	return 0
}

func (v *valueStore[V]) reset(i int32) {
	var zero V
	v.vals[i], v.set[i] = zero, false
}

func (v *valueStore[V]) appendSlot(b []byte, i int32) ([]byte, error) {
	data, err := json.Marshal(v.vals[i])
	return append(b, data...), err
}

func (v *valueStore[V]) readSlot(data []byte, i int32) error {
	var x V
	if err := json.Unmarshal(data, &x); err != nil {
		return err
	}
	v.vals[i], v.set[i] = x, true
	return nil
}

// List is a list of values per key, in the order they were added (Flink's
// ListState, Beam's BagState). A key whose list is empty has none.
type List[V any] struct{ name string }

// NewList returns a list state named name.
func NewList[V any](name string) *List[V] { return &List[V]{name: name} }

// Name implements State.
func (l *List[V]) Name() string { return l.name }

// Type implements State.
func (l *List[V]) Type() reflect.Type { return reflect.TypeFor[[]V]() }

func (l *List[V]) newStore() store { return &listStore[V]{} }

// Get is the key's list, in the order of Add. It is the state's own: it
// stays valid until the next change of the key's list, and must not be
// modified.
func (l *List[V]) Get(s Scope) []V {
	st, i := storeOf[*listStore[V]](l, s)
	return st.vals[i]
}

// Len is the length of the key's list.
func (l *List[V]) Len(s Scope) int { return len(l.Get(s)) }

// Add appends x to the key's list.
func (l *List[V]) Add(s Scope, x V) {
	st, i := storeOf[*listStore[V]](l, s)
	st.vals[i] = append(st.vals[i], x)
}

// Set replaces the key's list with a copy of xs.
func (l *List[V]) Set(s Scope, xs []V) {
	st, i := storeOf[*listStore[V]](l, s)
	st.reset(i)
	st.vals[i] = append(st.vals[i], xs...)
}

// Clear empties the key's list.
func (l *List[V]) Clear(s Scope) {
	st, i := storeOf[*listStore[V]](l, s)
	st.reset(i)
}

type listStore[V any] struct{ vals [][]V }

func (l *listStore[V]) grow(n int) {
	for len(l.vals) < n {
		l.vals = append(l.vals, nil)
	}
}

func (l *listStore[V]) has(i int32) bool { return len(l.vals[i]) > 0 }

func (l *listStore[V]) items(i int32) int { return len(l.vals[i]) }

// reset empties the list, keeping a small one's room for the next key of
// the slot.
func (l *listStore[V]) reset(i int32) {
	if cap(l.vals[i]) > 64 {
		l.vals[i] = nil
		return
	}
	clear(l.vals[i])
	l.vals[i] = l.vals[i][:0]
}

func (l *listStore[V]) appendSlot(b []byte, i int32) ([]byte, error) {
	data, err := json.Marshal(l.vals[i])
	return append(b, data...), err
}

func (l *listStore[V]) readSlot(data []byte, i int32) error {
	var xs []V
	if err := json.Unmarshal(data, &xs); err != nil {
		return err
	}
	l.vals[i] = xs
	return nil
}

// Map is a map per key (Flink's MapState, Beam's MapState). Its entries
// are in the order they were put (a deleted entry's place is taken by the
// last one), so that the same calls give the same order, across restores
// too. A key whose map is empty has none.
type Map[MK comparable, V any] struct{ name string }

// NewMap returns a map state named name.
func NewMap[MK comparable, V any](name string) *Map[MK, V] { return &Map[MK, V]{name: name} }

// Name implements State.
func (m *Map[MK, V]) Name() string { return m.name }

// Type implements State.
func (m *Map[MK, V]) Type() reflect.Type { return reflect.TypeFor[map[MK]V]() }

func (m *Map[MK, V]) newStore() store { return &mapStore[MK, V]{} }

// of is the key's map; a key without one reads an empty one, and gets one
// of its own only to put an entry.
func (m *Map[MK, V]) of(s Scope, put bool) *orderedMap[MK, V] {
	st, i := storeOf[*mapStore[MK, V]](m, s)
	if st.maps[i] == nil {
		if !put {
			return &st.empty
		}
		st.maps[i] = &orderedMap[MK, V]{idx: map[MK]int{}}
	}
	return st.maps[i]
}

// Get is the value of k in the key's map, and whether it has one.
func (m *Map[MK, V]) Get(s Scope, k MK) (V, bool) {
	om := m.of(s, false)
	if j, ok := om.idx[k]; ok {
		return om.vals[j], true
	}
	var zero V
	return zero, false
}

// Put sets the value of k in the key's map.
func (m *Map[MK, V]) Put(s Scope, k MK, v V) {
	om := m.of(s, true)
	if j, ok := om.idx[k]; ok {
		om.vals[j] = v
		return
	}
	om.idx[k] = len(om.keys)
	om.keys, om.vals = append(om.keys, k), append(om.vals, v)
}

// Delete removes k from the key's map.
func (m *Map[MK, V]) Delete(s Scope, k MK) {
	om := m.of(s, false)
	j, ok := om.idx[k]
	if !ok {
		return
	}
	last := len(om.keys) - 1
	om.keys[j], om.vals[j] = om.keys[last], om.vals[last]
	om.idx[om.keys[j]] = j
	var zk MK
	var zv V
	om.keys[last], om.vals[last] = zk, zv
	om.keys, om.vals = om.keys[:last], om.vals[:last]
	delete(om.idx, k)
}

// Len is the number of entries in the key's map.
func (m *Map[MK, V]) Len(s Scope) int { return len(m.of(s, false).keys) }

// All is the key's map's entries, in their order; the map must not change
// while they are read.
func (m *Map[MK, V]) All(s Scope) iter.Seq2[MK, V] {
	om := m.of(s, false)
	return func(yield func(MK, V) bool) {
		for j := range om.keys {
			if !yield(om.keys[j], om.vals[j]) {
				return
			}
		}
	}
}

// Clear empties the key's map.
func (m *Map[MK, V]) Clear(s Scope) {
	st, i := storeOf[*mapStore[MK, V]](m, s)
	st.reset(i)
}

type mapStore[MK comparable, V any] struct {
	maps  []*orderedMap[MK, V]
	empty orderedMap[MK, V] // what a key without a map reads
}

type orderedMap[MK comparable, V any] struct {
	idx  map[MK]int
	keys []MK
	vals []V
}

func (m *mapStore[MK, V]) grow(n int) {
	for len(m.maps) < n {
		m.maps = append(m.maps, nil)
	}
}

func (m *mapStore[MK, V]) has(i int32) bool { return m.maps[i] != nil && len(m.maps[i].keys) > 0 }

func (m *mapStore[MK, V]) items(i int32) int {
	if m.maps[i] == nil {
		return 0
	}
	return 2 * len(m.maps[i].keys)
}

func (m *mapStore[MK, V]) reset(i int32) { m.maps[i] = nil }

// mapEntries is a map's entries in a checkpoint: its keys and values, in
// their order.
type mapEntries[MK comparable, V any] struct {
	Keys []MK `json:"keys"`
	Vals []V  `json:"values"`
}

func (m *mapStore[MK, V]) appendSlot(b []byte, i int32) ([]byte, error) {
	om := m.maps[i]
	data, err := json.Marshal(mapEntries[MK, V]{Keys: om.keys, Vals: om.vals})
	return append(b, data...), err
}

func (m *mapStore[MK, V]) readSlot(data []byte, i int32) error {
	var e mapEntries[MK, V]
	if err := json.Unmarshal(data, &e); err != nil {
		return err
	}
	if len(e.Keys) != len(e.Vals) {
		return fmt.Errorf("%d keys and %d values", len(e.Keys), len(e.Vals))
	}
	om := &orderedMap[MK, V]{idx: make(map[MK]int, len(e.Keys)), keys: e.Keys, vals: e.Vals}
	for j, k := range e.Keys {
		om.idx[k] = j
	}
	m.maps[i] = om
	return nil
}
