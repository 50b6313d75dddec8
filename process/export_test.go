package process

// AtHand is the number of keys an Op holds in memory.
func AtHand[K comparable, T, O any](o *Op[K, T, O]) int { return len(o.slots) }
