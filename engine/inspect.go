package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// Inspection is what a checkpoint or a savepoint holds, part by part
// (weir savepoint inspect).
type Inspection struct {
	Path        string
	ID          uint64
	Kind        checkpoint.Kind
	Job         string
	Fingerprint string
	Created     string
	// Layout is the version of the engine's files; Shape the parts of the
	// job (nil before layout 4).
	Layout int
	Shape  *Shape
	// Bytes is the size of every file of the checkpoint.
	Bytes   int64
	Windows []WindowState
	Joins   []JoinState
	// Processes are the keyed process functions' stages.
	Processes []ProcessState
	Heads     []HeadState
	Sources   []SourceState
	Sinks     []SinkState
}

// WindowState is a window stage's state in a checkpoint.
type WindowState struct {
	Name      string
	Instances int
	Watermark mtime.Time
	// Keys holding windows; Bytes the size of the stage's files.
	Keys, Bytes int64
}

// HeadState is a head's state in a checkpoint: its accounting and its
// de-duplication ids.
type HeadState struct {
	Name  string
	Read  int64
	Bytes int64
	// IDs is the number of de-duplication ids kept, -1 when the head does
	// not de-duplicate.
	IDs int64
}

// SourceState is a source's position in a checkpoint, as its connector
// wrote it.
type SourceState struct {
	Name     string
	Position []byte
}

// SinkState is a sink's commit record in a checkpoint.
type SinkState struct {
	Name string
	// Committed is the number of items known to be committed; Pending the
	// pre-commits not known to be, oldest first.
	Committed int64
	Pending   []PendingCommit
}

// PendingCommit is one pre-commit of a sink not known to be committed.
type PendingCommit struct {
	Checkpoint uint64
	Items      int64
	Bytes      int
}

// Inspect reads what the checkpoint c holds. decoderState, when set,
// reads past the state of a head's decoder in a head of layout 3 or
// earlier (whose length it does not record); without it such a head's
// ids are not counted (IDs -1).
func Inspect(c *checkpoint.Checkpoint, decoderState func(*enc.Decoder) error) (*Inspection, error) {
	m := c.Manifest
	in := &Inspection{Path: c.Path, ID: m.ID, Kind: m.Kind, Job: m.Job, Fingerprint: m.Fingerprint, Created: m.Created}
	var meta jobMeta
	if err := json.Unmarshal(m.Meta, &meta); err != nil {
		return nil, fmt.Errorf("%s: the manifest's meta: %w", c.Path, err)
	}
	in.Layout, in.Shape = meta.Layout, meta.Shape
	files := checkpointFiles(c)
	for _, f := range m.Files {
		in.Bytes += f.Size
	}
	// The parts, by their files: a window stage has NAME.clock, a source
	// and a sink are named so, the rest are heads.
	names := map[string]bool{}
	for _, f := range m.Files {
		names[partOfFile(f.Name, meta.Participants)] = true
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	for _, name := range list {
		kind := meta.kindOf(name)
		if kind == partOther && c.Files[name+".clock"] != nil {
			kind = partWindow // a checkpoint of an earlier weir: a window stage has its clock
		}
		switch {
		case name == finalRecordName:
		case kind == partSource:
			in.Sources = append(in.Sources, SourceState{Name: strings.TrimPrefix(name, SourcePart("")), Position: c.Files[name]})
		case kind == partSink:
			list, committed, _, err := decodeRecord(c.Files[name], meta.Layout)
			if err != nil {
				return nil, fmt.Errorf("%s: %s is corrupt", c.Path, name)
			}
			s := SinkState{Name: strings.TrimPrefix(name, SinkPart("")), Committed: committed}
			for _, pc := range list {
				s.Pending = append(s.Pending, PendingCommit{Checkpoint: pc.id, Items: pc.items, Bytes: len(pc.data)})
			}
			in.Sinks = append(in.Sinks, s)
		case kind == partJoin:
			js, err := inspectJoin(c, name)
			if err != nil {
				return nil, err
			}
			in.Joins = append(in.Joins, js)
		case kind == partProcess:
			ps, err := inspectProcess(c, name)
			if err != nil {
				return nil, err
			}
			in.Processes = append(in.Processes, ps)
		case kind == partWindow:
			w, err := inspectWindow(c, files, name)
			if err != nil {
				return nil, err
			}
			in.Windows = append(in.Windows, w)
		default:
			if c.Files[name] == nil {
				continue
			}
			ids, read, err := headIDs(c, name, decoderState)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", c.Path, name, err)
			}
			h := HeadState{Name: name, IDs: ids, Read: read}
			for _, f := range m.Files {
				if f.Name == name || strings.HasPrefix(f.Name, name+".") {
					h.Bytes += f.Size
				}
			}
			in.Heads = append(in.Heads, h)
		}
	}
	return in, nil
}

// partOfFile is the participant whose file name is: the longest of
// participants that it is, or begins with and a dot ("window" of
// "window.op-0", "sink:results:file:out.jsonl" of itself); else what comes
// before its first dot.
func partOfFile(name string, participants []string) string {
	best := ""
	for _, p := range participants {
		if (name == p || strings.HasPrefix(name, p+".")) && len(p) > len(best) {
			best = p
		}
	}
	if best != "" {
		return best
	}
	base, _, _ := strings.Cut(name, ".")
	return base
}

// inspectWindow reads the window stage name of c: its instances and their
// keys.
func inspectWindow(c *checkpoint.Checkpoint, files []File, name string) (WindowState, error) {
	w := WindowState{Name: name, Watermark: mtime.MinTime}
	d := enc.NewDecoder(c.Files[name+".clock"])
	d.Uvarint()
	w.Instances = d.Count(exec.KeyGroups)
	if d.Err() != nil {
		return w, fmt.Errorf("%s: %s.clock is corrupt", c.Path, name)
	}
	for _, f := range c.Manifest.Files {
		if strings.HasPrefix(f.Name, name+".") {
			w.Bytes += f.Size
		}
	}
	for i := range w.Instances {
		op := fmt.Sprintf("%s.op-%d", name, i)
		dir, err := materializeFiles(nil, files, op+".db.")
		if err != nil {
			return w, err
		}
		si, err := exec.InspectSnapshot(c.Files[op], dir)
		removeDir(dir)
		if err != nil {
			return w, fmt.Errorf("%s: %s: %w", c.Path, op, err)
		}
		w.Keys += si.Keys
		w.Watermark = max(w.Watermark, si.Watermark)
	}
	return w, nil
}

// headIDs counts the de-duplication ids of the head name in c (-1 when it
// keeps none, or when its decoder's state cannot be read past) and the
// records it read.
func headIDs(c *checkpoint.Checkpoint, name string, decoderState func(*enc.Decoder) error) (n, read int64, err error) {
	d := enc.NewDecoder(c.Files[name])
	f, err := readHead(d, decoderState)
	if errors.Is(err, errDecoderState) {
		return -1, f.c.Read, nil
	}
	if err != nil {
		return -1, 0, err
	}
	read = f.c.Read
	switch f.ids {
	case 0:
		return -1, read, d.Err()
	case 1:
		n := state.CountState(d, f.version >= 9)
		return n, read, d.Err()
	}
	dir, err := materializeFiles(nil, checkpointFiles(c), name+".db.")
	if err != nil {
		return -1, read, err
	}
	defer removeDir(dir)
	if dir == "" {
		return -1, read, fmt.Errorf("its de-duplication ids are missing")
	}
	n, err = state.CountSnapshot(dir)
	return n, read, err
}
