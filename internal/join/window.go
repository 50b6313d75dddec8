package join

import (
	"slices"

	"github.com/weirstream/weir/mtime"
)

// fire joins the records of key in the window that starts at start, now
// that the watermark has passed it: every left one, in order of (time,
// arrival), with every right one, in that order; a left one with none is
// unmatched. They leave the buffers.
func (o *Op[K, L, R]) fire(key K, ks *keyState[L, R], start, wm mtime.Time) {
	end := start + o.cfg.Window
	lo, hi := first(ks.left, start), first(ks.left, end)
	rlo, rhi := first(ks.right, start), first(ks.right, end)
	if lo == hi && rlo == rhi {
		return // fired already, at an earlier record's timer
	}
	for i := lo; i < hi; i++ {
		l := &ks.left[i]
		if rlo == rhi {
			o.stats.Unmatched++
			if o.cfg.Mode != Inner {
				o.out = Out[K, L, R]{Kind: OutUnmatched, Key: key, Left: l.V, LeftTime: l.TS, Watermark: wm}
				o.emit(&o.out)
			}
			continue
		}
		for j := rlo; j < rhi && o.cfg.Mode != Anti; j++ {
			r := &ks.right[j]
			o.pair(key, l.V, l.TS, r.V, r.TS)
		}
	}
	ks.left = slices.Delete(ks.left, lo, hi)
	ks.right = slices.Delete(ks.right, rlo, rhi)
	o.size[Left] -= int64(hi - lo)
	o.size[Right] -= int64(rhi - rlo)
}
