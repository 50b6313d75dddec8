package join

import "github.com/weirstream/weir/mtime"

// lookup joins a temporal join's left record e, expiring, with the key's
// version valid at its time: the last right record at or before it, by
// (time, arrival). It says whether e joined: a version that is a deletion,
// or none, leaves it unmatched.
func (o *Op[K, L, R]) lookup(key K, ks *keyState[L, R], e *Entry[L], wm mtime.Time) bool {
	i := first(ks.right, e.TS+1) - 1
	if i < 0 || o.isDeletion(ks.right[i].V) {
		return false
	}
	if o.cfg.Mode != Anti {
		r := &ks.right[i]
		o.stats.Pairs++
		o.out = Out[K, L, R]{Kind: OutPair, Key: key, Left: e.V, Right: r.V, LeftTime: e.TS, RightTime: r.TS, Watermark: wm}
		o.emit(&o.out)
	}
	return true
}

// settle drops the versions of a temporal join's key that no record still
// to come can look up, now that the watermark has passed ts (minus the
// lateness): those before the last one at or before ts, and that one too
// when it is a deletion (a lookup then finds no version, as it would find
// the deletion). A version expires by its own time, in the order of the
// expiries, so that a left record expiring before it has looked it up.
func (o *Op[K, L, R]) settle(ks *keyState[L, R], ts mtime.Time) {
	n := first(ks.right, ts+1) - 1 // the versions before the one valid at ts
	if n < 0 {
		return
	}
	if o.isDeletion(ks.right[n].V) {
		n++
	}
	clear(ks.right[:n])
	ks.right = ks.right[n:]
	o.size[Right] -= int64(n)
}

func (o *Op[K, L, R]) isDeletion(v R) bool { return o.deleted != nil && o.deleted(v) }
