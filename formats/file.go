package formats

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// FileFormat is a format whose records come in a file of its own (a CSV
// file, an Avro object container file), read whole by weir run rather than
// as lines.
type FileFormat interface {
	plan.FormatConfig
	// OpenFile reads the file's rows, each as a JSON object.
	OpenFile(path string) (RowReader, error)
}

// RawFileFormat is a FileFormat whose files' rows a job can read as their
// records' bytes, decoded by a plan.Decoder (a topic's records are): an
// Avro container file whose records need no resolution, whose decoder
// builds each record's object without its JSON text (jsontree.Builder).
type RawFileFormat interface {
	FileFormat
	// RowDecoder is the decoder of the raw rows of the file at path, or
	// nil when its rows are to be read as JSON objects (OpenFile).
	RowDecoder(path string) (plan.Decoder, error)
	// OpenRawFile reads the file's rows as their records' bytes, for dec
	// (RowDecoder's): an error if the file is no longer one dec reads.
	OpenRawFile(path string, dec plan.Decoder) (RowReader, error)
}

// RowReader reads a file's rows in order.
type RowReader interface {
	// Next appends the next row, as a JSON object, to dst, and gives its
	// place in the file (its line for CSV, its number from 1 for Avro). A
	// row that cannot be one is given as its text, which the job then
	// quarantines. At the end it returns io.EOF.
	Next(dst []byte) (row []byte, place int64, err error)
	Close() error
}

// FileSource is a connector.Source of a file of a FileFormat: one record per
// row, the row as a JSON object (or its record's bytes, with a Decoder).
// Its position in checkpoints is how many rows it has read; a restore reads
// the file again from its start and skips them.
type FileSource struct {
	Path   string
	Format FileFormat
	// Decoder, when not nil, is the RawFileFormat's RowDecoder: the rows
	// are read as their records' bytes, for it.
	Decoder plan.Decoder

	rows  RowReader
	read  uint64
	sent  bool
	batch []byte
}

// Recorded implements connector.Recorded: a file of records is read whole,
// in its order.
func (s *FileSource) Recorded() bool { return true }

// Open implements connector.Source.
func (s *FileSource) Open(ctx context.Context, position []byte) error {
	var rows RowReader
	var err error
	if raw, ok := s.Format.(RawFileFormat); ok && s.Decoder != nil {
		rows, err = raw.OpenRawFile(s.Path, s.Decoder)
	} else {
		rows, err = s.Format.OpenFile(s.Path)
	}
	if err != nil {
		return err
	}
	s.rows, s.read = rows, 0
	if position == nil {
		return nil
	}
	d := enc.NewDecoder(position)
	skip := d.Uvarint()
	if err := d.Err(); err != nil {
		return fmt.Errorf("%s: a position that is not a row count: %w", s.Path, err)
	}
	var buf []byte
	for ; s.read < skip; s.read++ {
		if _, _, err := rows.Next(buf[:0]); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%s has %d rows, fewer than the %d the checkpoint read: it is not the file it read", s.Path, s.read, skip)
			}
			return err
		}
	}
	return nil
}

// Read implements connector.Source.
func (s *FileSource) Read(ctx context.Context, b *connector.Batch) error {
	if !s.sent {
		s.sent = true
		b.Partitions = []connector.Partition{{Name: s.Path}}
	}
	// The rows of a batch share one buffer of their own, which the records
	// keep.
	s.batch = make([]byte, 0, 64<<10)
	for len(b.Records) < 1024 {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := len(s.batch)
		out, place, err := s.rows.Next(s.batch)
		if errors.Is(err, io.EOF) {
			b.Position = enc.AppendUvarint(nil, s.read)
			return io.EOF
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.Path, err)
		}
		s.read++
		// A row that did not fit grew a new array: those before it keep
		// the old one.
		s.batch = out
		b.Records = append(b.Records, connector.Record{Value: out[start:len(out):len(out)], Offset: place, Arrival: mtime.MinTime, Timestamp: mtime.MinTime})
	}
	b.Position = enc.AppendUvarint(nil, s.read)
	return nil
}

// Close implements connector.Source.
func (s *FileSource) Close() error {
	if s.rows == nil {
		return nil
	}
	return s.rows.Close()
}
