package prefetch

import (
	"testing"
	"unsafe"
)

// TestLineNeverFaults asks for addresses a program may hand it: nil, the
// first and last bytes of a large array, a string's bytes, the empty
// string's. A prefetch that faulted (or an instruction the processor does
// not have) would stop the test.
func TestLineNeverFaults(t *testing.T) {
	Line(nil)
	big := make([]byte, 1<<20)
	for i := 0; i < len(big); i += 64 {
		Line(unsafe.Pointer(&big[i]))
	}
	Line(unsafe.Pointer(&big[len(big)-1]))
	s := "a key"
	Line(unsafe.Pointer(unsafe.StringData(s)))
	Line(unsafe.Pointer(unsafe.StringData("")))
	var x int
	Line(unsafe.Pointer(&x))
	if big[0] != 0 || x != 0 {
		t.Fatal("a prefetch changed memory")
	}
}
