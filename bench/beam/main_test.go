package main

import "testing"

// TestExpectedWindows checks the closed form against a brute-force count of
// distinct (key, window) pairs.
func TestExpectedWindows(t *testing.T) {
	for _, base := range []int64{0, 1_780_000_000_000, 59_999, 123_457} {
		for _, n := range []int64{0, 1, 9, 10, 599_999, 600_000, 600_001, 1_234_567} {
			for _, k := range []int64{1, 7, 10_000, 1_000_000} {
				type pair struct{ key, win int64 }
				seen := map[pair]struct{}{}
				for i := int64(0); i < n; i++ {
					seen[pair{i % k, (base + i/10) / 60_000}] = struct{}{}
				}
				if got, want := expectedWindows(n, k, base), int64(len(seen)); got != want {
					t.Errorf("expectedWindows(%d, %d, %d) = %d, want %d", n, k, base, got, want)
				}
			}
		}
	}
}
