package connector

import "context"

// Lookup reads rows of a table by key, for a lookup join (Flink's
// LookupTableSource): Lookup returns the row of each key of keys it has,
// at most one a key; a key it has no row for is left out. It is called
// from goroutines of its own, several at once, and must be safe for that.
// An error fails the whole call: the engine tries it again, and the
// records of a call that keeps failing go to the join's dead letters.
type Lookup[K comparable, R any] interface {
	Lookup(ctx context.Context, keys []K) (map[K]R, error)
}

// LookupFunc is a function as a Lookup.
type LookupFunc[K comparable, R any] func(ctx context.Context, keys []K) (map[K]R, error)

// Lookup implements Lookup.
func (f LookupFunc[K, R]) Lookup(ctx context.Context, keys []K) (map[K]R, error) { return f(ctx, keys) }
