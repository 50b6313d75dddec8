// Package zstd stands in for github.com/DataDog/zstd (a cgo binding of the
// C library) in weir's builds: the part of its API Pebble calls when built
// with cgo, over github.com/klauspost/compress/zstd, the pure-Go library
// Pebble uses itself without cgo (and weir's release builds, built without
// cgo, use). Compiling the C library's 40 files took 88 s of CPU, a quarter
// of a first build of weir; weir's Pebble stores write no compressed
// blocks, so nothing weir writes changes.
//
// go.mod's replace directive points github.com/DataDog/zstd here.
package zstd

import (
	"errors"
	"sync"

	kzstd "github.com/klauspost/compress/zstd"
)

// Compression levels, as the C library's.
const (
	BestSpeed          = 1
	BestCompression    = 20
	DefaultCompression = 5
)

// CompressBound is the most bytes a payload of srcSize bytes compresses to
// (the C library's ZSTD_COMPRESSBOUND).
func CompressBound(srcSize int) int {
	const lowLimit = 128 << 10
	margin := 0
	if srcSize < lowLimit {
		margin = (lowLimit - srcSize) >> 11
	}
	return srcSize + srcSize>>8 + margin
}

// Ctx compresses and decompresses, reusing its state between calls; it is
// not safe for concurrent use.
type Ctx interface {
	// CompressLevel compresses src at level into dst when it fits its
	// capacity (CompressBound), else into a new slice.
	CompressLevel(dst, src []byte, level int) ([]byte, error)
	// DecompressInto decompresses src into dst, which must be large
	// enough, and returns the bytes written.
	DecompressInto(dst, src []byte) (int, error)
}

// NewCtx is a new Ctx.
func NewCtx() Ctx { return &ctx{} }

type ctx struct {
	level int
	enc   *kzstd.Encoder
}

// decoders are shared: a klauspost decoder's DecodeAll is safe for
// concurrent use.
var decoder = sync.OnceValue(func() *kzstd.Decoder {
	d, err := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(0))
	if err != nil {
		panic(err)
	}
	return d
})

func (c *ctx) CompressLevel(dst, src []byte, level int) ([]byte, error) {
	if c.enc == nil || c.level != level {
		enc, err := kzstd.NewWriter(nil, kzstd.WithEncoderLevel(kzstd.EncoderLevelFromZstd(level)), kzstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		c.enc, c.level = enc, level
	}
	return c.enc.EncodeAll(src, dst[:0]), nil
}

// errShort: the destination cannot hold the payload.
var errShort = errors.New("zstd: destination buffer too small")

func (c *ctx) DecompressInto(dst, src []byte) (int, error) {
	out, err := decoder().DecodeAll(src, dst[:0])
	if err != nil {
		return 0, err
	}
	if len(out) > len(dst) || len(out) > 0 && &out[0] != &dst[0] {
		return 0, errShort
	}
	return len(out), nil
}
