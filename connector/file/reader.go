package file

import (
	"context"
	"errors"
	"io"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// Reader is a source of lines from a stream that cannot be read again, such
// as standard input: a job that reads it cannot resume from a checkpoint. A
// batch goes as soon as reading more would wait, so a live stream is not
// held back.
type Reader struct {
	// Name names the stream ("standard input").
	Name string
	R    io.Reader

	lines *source.Lines
	sent  bool
}

// ErrNotReplayable is returned by Reader.Open for a position: the stream
// cannot be read again.
var ErrNotReplayable = errors.New("this stream cannot be read again from a checkpoint")

// Open implements connector.Source.
func (r *Reader) Open(ctx context.Context, position []byte) error {
	if position != nil {
		return ErrNotReplayable
	}
	r.lines = source.NewLines(r.R, 64<<10, 0, 0)
	r.lines.SetMaxLine(source.DefaultMaxLine)
	return nil
}

// Read implements connector.Source. It blocks while the stream has nothing;
// the engine does not wait for it when the job stops.
func (r *Reader) Read(ctx context.Context, b *connector.Batch) error {
	if !r.sent {
		r.sent = true
		b.Partitions = []connector.Partition{{Name: r.Name}}
	}
	for len(b.Records) < MaxBatch {
		ln, ok := r.lines.Next()
		if !ok {
			if err := r.lines.Err(); err != nil {
				return err
			}
			return io.EOF
		}
		b.Records = append(b.Records, connector.Record{Value: ln.Text, Offset: ln.No, Arrival: mtime.MinTime, Cut: ln.Cut})
		if !r.lines.Buffered() {
			break
		}
	}
	return nil
}

// Close implements connector.Source.
func (r *Reader) Close() error { return nil }
