//go:build race

package job

// raceEnabled says the tests run with the race detector, which makes them
// several times slower: the largest take less input.
const raceEnabled = true
