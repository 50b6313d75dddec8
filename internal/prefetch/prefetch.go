// Package prefetch asks the processor to bring a cache line from memory
// before it is read, so that a loop over many independent lookups (the keys
// of a batch of events, each in its own part of a large table) waits for
// their cache misses together rather than one after the other. It is a
// hint: it never faults, whatever the address, and changes nothing a
// program can see but its speed. On processors without an instruction for
// it, Line does nothing.
package prefetch
