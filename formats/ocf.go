package formats

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/avro"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/jsontree"
	"github.com/weirstream/weir/plan"
)

// An Avro object container file whose records need no resolution (no
// reader's schema, or the writer's) is read block by block here: each
// record as its bytes, which a job decodes as a topic's records
// (ocfDecoder, RawFileFormat), or written as JSON straight from its
// binary by the schema's transcoder (OpenFile, weir lateness). The library
// would decode each into a map first (15 allocations a record). One that
// needs resolving is read through the library (ocfRows).

// maxBlock bounds a block's bytes, compressed and not: a block is read
// whole.
const maxBlock = 64 << 20

// blockRows are the records of a container file read block by block.
type blockRows struct {
	f     *os.File
	r     *bufio.Reader
	t     *transcoder
	codec string
	sync  [16]byte
	// canonical is the schema's Parsing Canonical Form.
	canonical []byte
	data      []byte // the block being read: its records not read yet
	left      int64  // its records not read yet
	n         int64
	zr        *zstd.Decoder
	plain     []byte // a block decompressed
	raw       bool   // rows as their records' bytes, not JSON
}

// ocfDecoder decodes the raw rows of container files of one schema (its
// Parsing Canonical Form: canonical).
type ocfDecoder struct {
	t         *transcoder
	canonical []byte
}

var (
	_ RawFileFormat    = (*avroConfig)(nil)
	_ jsontree.Builder = (*ocfDecoder)(nil)
)

// AppendJSON implements plan.Decoder.
func (d *ocfDecoder) AppendJSON(dst, value []byte) ([]byte, error) {
	out, err := d.t.appendJSON(dst, value)
	if err != nil {
		return dst, plan.Bad(ReasonNotDecodable, "%v", err)
	}
	return out, nil
}

// Build implements jsontree.Builder.
func (d *ocfDecoder) Build(tr *jsontree.Tree, value []byte) *fastjson.Value {
	return d.t.build(tr, value)
}

// RowDecoder implements RawFileFormat.
func (c *avroConfig) RowDecoder(path string) (plan.Decoder, error) {
	rows, err := openBlockRows(path, c.reader)
	if rows == nil || err != nil {
		return nil, err
	}
	rows.Close()
	return &ocfDecoder{rows.t, rows.canonical}, nil
}

// OpenRawFile implements RawFileFormat.
func (c *avroConfig) OpenRawFile(path string, dec plan.Decoder) (RowReader, error) {
	rows, err := openBlockRows(path, c.reader)
	if err != nil {
		return nil, err
	}
	d, ok := dec.(*ocfDecoder)
	if rows == nil || !ok || !bytes.Equal(rows.canonical, d.canonical) {
		if rows != nil {
			rows.Close()
		}
		return nil, fmt.Errorf("%s is no longer the file the job started on: its schema changed", path)
	}
	rows.raw = true
	return rows, nil
}

// openBlockRows reads the header of the container file at path: its rows,
// or nil (and the file closed) when its schema is not a record's or
// differs from reader (a schema to resolve to, or nil).
func openBlockRows(path string, reader *avro.Schema) (*blockRows, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := &blockRows{f: f, r: bufio.NewReaderSize(f, 1<<20)}
	schema, err := br.header()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("not an Avro object container file: %w", err)
	}
	s, err := avro.Parse(schema)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("not an Avro object container file: its schema: %w", err)
	}
	if reader != nil && !bytes.Equal(reader.Canonical(), s.Canonical()) {
		f.Close()
		return nil, nil
	}
	node := s.Root().ExpandReferences()
	if node.Type != "record" {
		f.Close()
		return nil, nil
	}
	switch br.codec {
	case "", "null", "deflate", "snappy", "zstandard":
	default:
		f.Close()
		return nil, nil // the library says what it reads
	}
	br.t, br.canonical = newTranscoder(node), s.Canonical()
	return br, nil
}

// header reads the file's magic, metadata and sync marker, and returns
// its schema.
func (b *blockRows) header() (string, error) {
	var magic [4]byte
	if _, err := io.ReadFull(b.r, magic[:]); err != nil || string(magic[:]) != "Obj\x01" {
		return "", errors.New("no magic bytes")
	}
	var schema string
	for {
		count, err := b.long()
		if err != nil {
			return "", err
		}
		if count == 0 {
			break
		}
		if count < 0 {
			if _, err := b.long(); err != nil {
				return "", err
			}
			count = -count
		}
		for ; count > 0; count-- {
			k, err := b.bytes(1 << 20)
			if err != nil {
				return "", err
			}
			v, err := b.bytes(maxBlock)
			if err != nil {
				return "", err
			}
			switch string(k) {
			case "avro.schema":
				schema = string(v)
			case "avro.codec":
				b.codec = string(v)
			}
		}
	}
	if schema == "" {
		return "", errors.New("no avro.schema in its metadata")
	}
	if _, err := io.ReadFull(b.r, b.sync[:]); err != nil {
		return "", errors.New("no sync marker")
	}
	return schema, nil
}

// long reads a zig-zag varint.
func (b *blockRows) long() (int64, error) {
	u, err := binary.ReadUvarint(b.r)
	if err != nil {
		return 0, io.ErrUnexpectedEOF
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

// bytes reads a length and that many bytes, at most max.
func (b *blockRows) bytes(max int64) ([]byte, error) {
	n, err := b.long()
	if err != nil || n < 0 || n > max {
		return nil, fmt.Errorf("a length of %d", n)
	}
	v := make([]byte, n)
	if _, err := io.ReadFull(b.r, v); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return v, nil
}

func (b *blockRows) Next(dst []byte) ([]byte, int64, error) {
	for b.left == 0 {
		if err := b.block(); err != nil {
			return dst, 0, err
		}
	}
	var out, rest []byte
	var err error
	if b.raw {
		if rest, err = b.t.skip(b.data, b.t.root, 0); err == nil {
			out = append(dst, b.data[:len(b.data)-len(rest)]...)
		}
	} else {
		out, rest, err = b.t.value(dst, b.data, b.t.root, 0)
	}
	if err != nil {
		// A container file's blocks cannot be read past a corrupt one.
		return dst, 0, fmt.Errorf("record %d: %w", b.n+1, err)
	}
	b.data, b.left = rest, b.left-1
	b.n++
	if b.left == 0 && len(b.data) > 0 {
		return dst, 0, fmt.Errorf("record %d: %d bytes after the block's last record", b.n, len(b.data))
	}
	return out, b.n, nil
}

// block reads the next block; io.EOF at the end of the file.
func (b *blockRows) block() error {
	if _, err := b.r.Peek(1); err == io.EOF {
		return io.EOF
	}
	count, err := b.long()
	if err != nil {
		return fmt.Errorf("after record %d: a cut block", b.n)
	}
	raw, err := b.bytes(maxBlock)
	if err != nil {
		return fmt.Errorf("after record %d: a block of %w", b.n, err)
	}
	var sync [16]byte
	if _, err := io.ReadFull(b.r, sync[:]); err != nil || sync != b.sync {
		return fmt.Errorf("after record %d: a block without the file's sync marker", b.n)
	}
	data, err := b.decompress(raw)
	if err != nil {
		return fmt.Errorf("after record %d: %w", b.n, err)
	}
	if count < 0 || count > int64(len(data))+maxNulls {
		return fmt.Errorf("after record %d: a block of %d records in %d bytes", b.n, count, len(data))
	}
	b.data, b.left = data, count
	return nil
}

// decompress is a block's records, decompressed by the file's codec.
func (b *blockRows) decompress(raw []byte) ([]byte, error) {
	switch b.codec {
	case "deflate":
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, io.LimitReader(flate.NewReader(bytes.NewReader(raw)), maxBlock+1)); err != nil {
			return nil, fmt.Errorf("a deflate block: %w", err)
		}
		if buf.Len() > maxBlock {
			return nil, errors.New("a block of more than 64 MiB")
		}
		return buf.Bytes(), nil
	case "snappy":
		if len(raw) < 4 {
			return nil, errors.New("a snappy block without its checksum")
		}
		n, err := snappy.DecodedLen(raw[:len(raw)-4])
		if err != nil || n > maxBlock {
			return nil, fmt.Errorf("a snappy block of %d bytes: %v", n, err)
		}
		out, err := snappy.Decode(b.plain[:cap(b.plain)], raw[:len(raw)-4])
		if err != nil {
			return nil, fmt.Errorf("a snappy block: %w", err)
		}
		b.plain = out
		if crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(raw[len(raw)-4:]) {
			return nil, errors.New("a snappy block whose checksum is not its bytes'")
		}
		return out, nil
	case "zstandard":
		if b.zr == nil {
			zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxBlock))
			if err != nil {
				return nil, err
			}
			b.zr = zr
		}
		out, err := b.zr.DecodeAll(raw, b.plain[:0])
		if err != nil {
			return nil, fmt.Errorf("a zstandard block: %w", err)
		}
		b.plain = out
		return out, nil
	}
	return raw, nil
}

func (b *blockRows) Close() error {
	if b.zr != nil {
		b.zr.Close()
	}
	return b.f.Close()
}
