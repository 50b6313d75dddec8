package weir

import (
	"encoding/json"
	"hash/maphash"
	"unsafe"

	"github.com/weirstream/weir/internal/enc"
)

// jsonCodec stores an aggregation's keys, accumulators and results as JSON
// in checkpoints; checkpointable refuses, when the aggregation is built, the
// types it would not restore as they were.
type jsonCodec[K comparable, A, O any] struct{}

func appendJSON(b []byte, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		// Checked by the round trip on restore: a value that does not
		// encode restores as its zero value and fails the decode.
		data = nil
	}
	return enc.AppendBytes(b, data)
}

func readJSON[V any](d *enc.Decoder) V {
	var v V
	data := d.Bytes()
	if d.Err() == nil {
		if err := json.Unmarshal(data, &v); err != nil {
			d.Fail()
		}
	}
	return v
}

func (jsonCodec[K, A, O]) AppendKey(b []byte, k K) []byte { return appendJSON(b, k) }
func (jsonCodec[K, A, O]) ReadKey(d *enc.Decoder) K       { return readJSON[K](d) }
func (jsonCodec[K, A, O]) AppendAcc(b []byte, a A) []byte { return appendJSON(b, a) }
func (jsonCodec[K, A, O]) ReadAcc(d *enc.Decoder) A       { return readJSON[A](d) }
func (jsonCodec[K, A, O]) AppendOut(b []byte, o O) []byte { return appendJSON(b, o) }
func (jsonCodec[K, A, O]) ReadOut(d *enc.Decoder) O       { return readJSON[O](d) }

// stableHash hashes keys into key groups. Strings and integers hash the same
// in every run (FNV-1a of their bytes), as checkpoints need; other keys use
// maphash, with a seed of the run, or their JSON text with checkpoints.
func stableHash[K comparable](stable bool) func(K) uint64 {
	var zero K
	switch any(zero).(type) {
	case string:
		return func(k K) uint64 { return fnv(*(*string)(unsafe.Pointer(&k))) }
	case int:
		return func(k K) uint64 { return mix(uint64(*(*int)(unsafe.Pointer(&k)))) }
	case uint:
		return func(k K) uint64 { return mix(uint64(*(*uint)(unsafe.Pointer(&k)))) }
	case int64:
		return func(k K) uint64 { return mix(uint64(*(*int64)(unsafe.Pointer(&k)))) }
	case uint64:
		return func(k K) uint64 { return mix(*(*uint64)(unsafe.Pointer(&k))) }
	case int32:
		return func(k K) uint64 { return mix(uint64(*(*int32)(unsafe.Pointer(&k)))) }
	case uint32:
		return func(k K) uint64 { return mix(uint64(*(*uint32)(unsafe.Pointer(&k)))) }
	}
	if stable {
		return func(k K) uint64 {
			b, _ := json.Marshal(k)
			return fnv(string(b))
		}
	}
	seed := maphash.MakeSeed()
	return func(k K) uint64 { return maphash.Comparable(seed, k) }
}

func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is the finalizer of SplitMix64: integers that differ in few bits land
// in different key groups.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}
