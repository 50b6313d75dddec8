//go:build cgo

package state

// offHeap says Pebble's block cache and memtables live outside the Go heap:
// built with cgo, Pebble allocates them with the C allocator.
const offHeap = true
