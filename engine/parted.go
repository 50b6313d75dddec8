package engine

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
)

// The state of a stage of the source loop that keeps its keys in parts by
// key group (a join's, a keyed process function's) is one rule: a file
// "clock" holds the number of parts, the driver's state (clocks,
// watermark, partitions) and the stage's header; a file "op-i" holds the
// keys of the groups g with g*n/exec.KeyGroups == i, so that a restore at
// any parallelism reads every part.

// ackParted acknowledges barrier b for p with its state in n parts: head
// appends the driver's state and the stage's header, keys the keys of the
// groups keep says. A part that cannot be written fails the checkpoint.
func ackParted(b *CheckpointBarrier, p *Participant, n int, head func([]byte) []byte, keys func(keep func(group int) bool) ([]byte, error)) {
	ackPartedFiles(b, p, n, head, func(name string, keep func(group int) bool) ([]File, error) {
		data, err := keys(keep)
		return []File{{Name: p.FileName(name), Data: data}}, err
	})
}

// ackPartedFiles is ackParted with each part's file made by part, given
// its name's suffix ("op-i"): a stage whose keys are in a state database
// writes them into a file on disk (a shared object of the checkpoint
// store), so that they are never whole in memory.
func ackPartedFiles(b *CheckpointBarrier, p *Participant, n int, head func([]byte) []byte, part func(name string, keep func(group int) bool) ([]File, error)) {
	clock := head(enc.AppendUvarint(nil, uint64(n)))
	files := []File{{Name: p.FileName("clock"), Data: clock}}
	for i := range n {
		fs, err := part(fmt.Sprintf("op-%d", i), func(g int) bool { return g*n/exec.KeyGroups == i })
		if err != nil {
			b.Fail(p, err)
			return
		}
		files = append(files, fs...)
	}
	b.Ack(p, files...)
}

// ackPartedDB is ackParted for a stage whose keys are in the state
// database db: write writes a part's keys from it into a file of the
// snapshot's, on disk (the checkpoint store takes it from there), never
// whole in memory; failed is the stage's error once they are written (the
// database's). what names the stage in errors.
func ackPartedDB(b *CheckpointBarrier, p *Participant, n int, head func([]byte) []byte, db *state.DB, what string, write func(w io.Writer, keep func(group int) bool) error, failed func() error) {
	ackPartedFiles(b, p, n, head, func(name string, keep func(int) bool) ([]File, error) {
		snap, err := db.WriteSnapshot(name, func(w io.Writer) error { return write(w, keep) })
		if err == nil {
			err = failed()
		}
		if err != nil {
			if snap != nil {
				_ = snap.Release()
			}
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return b.snapshotFiles(p, "", snap)
	})
}

// restoreParted reads what ackParted wrote: head reads the driver's state
// and the stage's header, keys each part's keys as they come, from its
// file (a part kept in a file of its own, ackPartedDB's, is never read
// whole into memory), none when the restore drops the part's state (its
// clocks carry over). It returns the number of parts.
func restoreParted(e *Engine, p *Participant, clock []byte, head func(*enc.Decoder) error, keys func(io.Reader) error) (int, error) {
	d := enc.NewDecoder(clock)
	n := d.Count(exec.KeyGroups)
	if err := head(d); err != nil {
		return 0, err
	}
	if e.restore.DroppedPart(p.name) {
		return n, nil
	}
	for i := range n {
		name := fmt.Sprintf("op-%d", i)
		r, err := p.OpenFile(name)
		if err != nil {
			return 0, err
		}
		err = keys(r)
		r.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p.FileName(name), err)
		}
	}
	return n, nil
}

// partedState is what a checkpoint holds of such a stage: its number of
// parts, its watermark, the keys of its parts (each begins with its
// count) and the size of its files.
type partedState struct {
	instances   int
	watermark   mtime.Time
	keys, bytes int64
}

// inspectParted reads the state of the stage name in c; header, when set,
// reads the stage's header after the driver's state.
func inspectParted(c *checkpoint.Checkpoint, name string, header func(*enc.Decoder) error) (partedState, error) {
	var ps partedState
	d := enc.NewDecoder(c.Files[name+".clock"])
	ps.instances = d.Count(exec.KeyGroups)
	drv := exec.NewDriver[struct{}, struct{}](nil, watermark.Strategy{}, false)
	if err := drv.RestoreState(d); err != nil {
		return ps, fmt.Errorf("%s: %s.clock is corrupt", c.Path, name)
	}
	ps.watermark = drv.Watermark()
	if header != nil {
		if err := header(d); err != nil {
			return ps, fmt.Errorf("%s: %s.clock is corrupt", c.Path, name)
		}
	}
	for _, f := range c.Manifest.Files {
		if strings.HasPrefix(f.Name, name+".") {
			ps.bytes += f.Size
		}
	}
	for i := range ps.instances {
		part := fmt.Sprintf("%s.op-%d", name, i)
		data, ok := c.Files[part]
		if !ok && c.Paths[part] != "" {
			// A part kept as a file of its own: its count is in its
			// first bytes.
			data, _ = readFileHead(c.Paths[part], binary.MaxVarintLen64)
		}
		d := enc.NewDecoder(data)
		ps.keys += int64(d.Uvarint())
		if d.Err() != nil {
			return ps, fmt.Errorf("%s: %s.op-%d is corrupt", c.Path, name, i)
		}
	}
	return ps, nil
}

// readFileHead reads at most the first n bytes of the file at path.
func readFileHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return b[:m], err
}
