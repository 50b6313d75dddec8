//go:build !unix

package bench

// cpuTime is unknown here: per-core figures are left out.
func cpuTime() float64 { return 0 }

// peakRSS is unknown here.
func peakRSS() int64 { return 0 }
