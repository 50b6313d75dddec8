//go:build race

package join

// raceEnabled says the tests run with the race detector, under which
// Pebble checks its invariants and allocates for it: allocations are not
// the code's own.
const raceEnabled = true
