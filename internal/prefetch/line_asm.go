//go:build amd64 || arm64

package prefetch

import "unsafe"

// Line asks for the cache line that holds p to be loaded.
//
//go:noescape
func Line(p unsafe.Pointer)
