package enc

import (
	"errors"
	"io"
)

// streamChunk is the least that ReadItems reads at a time.
const streamChunk = 1 << 20

// ReadItems reads from r what was written as a count (a uvarint) and then
// that many items, without holding them all: it reads a chunk at a time
// (1 MiB, or more for an item larger than that) and calls item with a
// Decoder over the bytes at hand, from the next item on. An item that runs
// past them (its Decoder failed) is decoded again once more bytes are
// read, so item must change nothing until its Decoder has read the whole
// item without an error. Chunks are never reused: what item keeps of its
// Decoder's bytes stays valid. It returns r's error, or ErrCorrupt for an
// item that fails with every byte after it at hand, an item of no bytes,
// or bytes after the last.
func ReadItems(r io.Reader, item func(d *Decoder)) error {
	var buf []byte // the bytes at hand, from the next item on
	eof := false
	more := func() error {
		if eof {
			return ErrCorrupt
		}
		nb := make([]byte, len(buf), len(buf)+max(streamChunk, len(buf)))
		copy(nb, buf)
		n, err := io.ReadFull(r, nb[len(buf):cap(nb)])
		buf = nb[:len(buf)+n]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			eof, err = true, nil
		}
		return err
	}
	if err := more(); err != nil {
		return err
	}
	var d Decoder
	var n uint64
	for {
		d.Reset(buf)
		n = d.Uvarint()
		if d.Err() == nil {
			buf = buf[len(buf)-d.Len():]
			break
		}
		if err := more(); err != nil {
			return err
		}
	}
	for i := uint64(0); i < n; {
		d.Reset(buf)
		item(&d)
		if d.Err() == nil {
			if d.Len() == len(buf) {
				// Every item takes a byte at least (as Items
				// says): a count of more is corrupt.
				return ErrCorrupt
			}
			buf = buf[len(buf)-d.Len():]
			i++
			continue
		}
		if err := more(); err != nil {
			return err
		}
	}
	if len(buf) > 0 {
		return ErrCorrupt
	}
	if !eof {
		var one [1]byte
		if k, err := io.ReadFull(r, one[:]); k > 0 {
			return ErrCorrupt
		} else if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return nil
}
