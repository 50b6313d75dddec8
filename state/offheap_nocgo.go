//go:build !cgo

package state

// offHeap says Pebble's block cache and memtables live outside the Go heap:
// built without cgo, Pebble allocates them in the Go heap.
const offHeap = false
