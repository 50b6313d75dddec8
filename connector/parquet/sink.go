package parquet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
)

// Sink is a Parquet output's connector (see the package's doc).
type Sink struct {
	cfg   *Config
	env   plan.Env
	task  string
	exact bool // the job takes checkpoints
	// dir is the local directory of the part files: the output's, or,
	// with remote, where they wait for their upload.
	dir    string
	remote *objects // the object store the files go to, or nil
	// finals are the remote objects of the output's naming, as listed at
	// Open and uploaded since (a part file's number is never one of them).
	finals map[string]bool
	// unput are the closed part files of an output to object storage
	// without checkpoints whose upload has not completed yet.
	unput []fileRef
	// now is the clock of roll.interval (tests set it).
	now func() time.Time

	// Of the goroutine that writes.
	layout *layout
	open   map[string]*part // by partition folder
	done   []fileRef        // closed, not pre-committed yet
	next   uint64           // the number of the next part file
	row    pq.Row
	dirBuf []byte
	uses   uint64 // counts writes, for the part file written least recently

	// Of the goroutine that commits.
	mu       sync.Mutex
	markNext uint64
}

// part is a part file being written.
type part struct {
	ref    fileRef
	f      *os.File
	w      *pq.Writer
	opened time.Time
	group  int64 // the file's size when its row group began
	used   uint64
}

// fileRef names a part file: its partition folder and number.
type fileRef struct {
	Dir  string `json:"dir,omitempty"`
	N    uint64 `json:"n"`
	Rows int64  `json:"rows"`
	// Upload is the multipart upload that holds the file (an output to
	// object storage), and Parts its parts: completed at commit.
	Upload string       `json:"upload,omitempty"`
	Parts  []remotePart `json:"parts,omitempty"`
}

// preCommit is what a checkpoint keeps of the output: the part files it
// closed (and their names' task token, kept so that a job renamed since
// still commits them), and the number the next part file gets.
type preCommit struct {
	Task  string    `json:"task"`
	Next  uint64    `json:"next"`
	Files []fileRef `json:"files"`
}

// mark is what the output records of what it committed.
type mark struct {
	Next uint64 `json:"next"`
}

var (
	_ connector.Sink[plan.Item] = (*Sink)(nil)
	_ connector.Marker          = (*Sink)(nil)
)

func newSink(c *Config, env plan.Env) (*Sink, error) {
	s := &Sink{cfg: c, env: env, task: c.task(env.Job), exact: env.Checkpointed, now: time.Now, open: map[string]*part{}, dir: c.Dir}
	if c.S3 != nil {
		var err error
		if s.remote, err = newObjects(c.S3); err != nil {
			return nil, fmt.Errorf("%s: %w", c.S3.URL(), err)
		}
		if s.dir == "" {
			s.dir = filepath.Join(os.TempDir(), "weir-parquet-"+s.task)
		}
	}
	return s, nil
}

// finalName is a part file's final name; tmpName its in-progress name.
func (s *Sink) finalName(n uint64) string { return finalName(s.task, n) }
func (s *Sink) tmpName(n uint64) string   { return tmpName(s.task, n) }

func finalName(task string, n uint64) string { return fmt.Sprintf("part-%s-%d.parquet", task, n) }
func tmpName(task string, n uint64) string {
	return fmt.Sprintf(".part-%s-%d.parquet.inprogress", task, n)
}

// partNames recognises the names of one output's part files, final
// (finalName) and in progress (tmpName), by their task token.
type partNames struct{ re *regexp.Regexp }

func newPartNames(task string) partNames {
	return partNames{regexp.MustCompile(`^(\.?)part-` + regexp.QuoteMeta(task) + `-([0-9]+)\.parquet(\.inprogress)?$`)}
}

// number is the number of a part file's name and whether the name is the
// in-progress one; ok is false for a name that is neither of the output's.
func (p partNames) number(name string) (n uint64, inProgress, ok bool) {
	m := p.re.FindStringSubmatch(name)
	if m == nil || (m[1] == ".") != (m[3] != "") {
		return 0, false, false
	}
	n, err := strconv.ParseUint(m[2], 10, 64)
	return n, m[3] != "", err == nil
}

func (s *Sink) path(dir, name string) string {
	return filepath.Join(s.dir, filepath.FromSlash(dir), name)
}

func (s *Sink) logf(format string, args ...any) {
	if s.env.Log != nil {
		s.env.Log(fmt.Sprintf("%s: %s", s.cfg.Writes(), fmt.Sprintf(format, args...)))
	}
}

// Open implements connector.Sink: on restore, it removes the in-progress
// files of this output written after the checkpoint (and aborts such
// uploads), and numbers the next part files after the checkpoint's.
func (s *Sink) Open(ctx context.Context, r connector.Resume) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return connector.Permanent(err)
	}
	pending := map[string]bool{} // in-progress files, and uploads by id
	if len(r.Mark) > 0 {
		var m mark
		if err := json.Unmarshal(r.Mark, &m); err != nil {
			return connector.Permanent(fmt.Errorf("the checkpoint's mark of %s is not one of a Parquet output's", s.cfg.Writes()))
		}
		s.next = max(s.next, m.Next)
	}
	for _, p := range r.Pending {
		pc, err := decodePre(p.Data)
		if err != nil {
			return err
		}
		s.next = max(s.next, pc.Next)
		for _, f := range pc.Files {
			pending[s.path(f.Dir, tmpName(pc.Task, f.N))] = true
			if f.Upload != "" {
				pending[f.Upload] = true
			}
		}
	}
	s.mu.Lock()
	s.markNext = s.next
	s.mu.Unlock()
	names := newPartNames(s.task)
	var later []string
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n, inProgress, ok := names.number(d.Name())
		if d.IsDir() || !ok || !d.Type().IsRegular() {
			return nil
		}
		switch {
		case !inProgress:
			if r.Resumed() && n >= s.next {
				later = append(later, path)
			}
		case pending[path]:
		case r.Resumed() && n >= s.next:
			// Written after the checkpoint this run resumes from: weir's
			// own, and no checkpoint holds it.
			if err := os.Remove(path); err != nil {
				return err
			}
			s.logf("removed %s, written after the checkpoint the job resumes from", path)
		default:
			s.logf("left %s: an in-progress part file no checkpoint proves weir's; no reader of *.parquet reads it", path)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.dir, err)
	}
	if s.remote != nil {
		remoteLater, err := s.openRemote(ctx, r, names, pending)
		if err != nil {
			return err
		}
		later = append(later, remoteLater...)
	}
	if len(later) > 0 {
		sort.Strings(later)
		s.logf("%d part file(s) were committed after the checkpoint the job resumes from (%s first); they stay, and this run writes their panes again into new files", len(later), later[0])
	}
	if s.env.Shape != nil {
		l, err := newLayout(*s.env.Shape, s.cfg.PartitionBy)
		if err != nil {
			return connector.Permanent(err)
		}
		s.layout = l
	}
	return nil
}

func decodePre(b []byte) (preCommit, error) {
	var pc preCommit
	if err := json.Unmarshal(b, &pc); err != nil {
		return pc, connector.Permanent(fmt.Errorf("a checkpoint's pre-commit is not one of a Parquet output's: %v", err))
	}
	return pc, nil
}

// Write implements connector.Sink.
func (s *Sink) Write(ctx context.Context, items []plan.Item) error {
	if err := s.put(ctx); err != nil {
		return err
	}
	for i := range items {
		it := &items[i]
		if it.Kind != plan.Pane || it.Pane == nil {
			return connector.Permanent(errors.New("a Parquet output holds panes only"))
		}
		if s.layout == nil {
			l, err := newLayout(shapeOf(s.env.Job, it.Pane), s.cfg.PartitionBy)
			if err != nil {
				return connector.Permanent(err)
			}
			s.layout = l
		}
		var err error
		if s.dirBuf, err = s.layout.dir(s.dirBuf[:0], it.Pane); err != nil {
			return connector.Permanent(err)
		}
		p := s.open[string(s.dirBuf)]
		if p == nil {
			if p, err = s.newPart(string(s.dirBuf)); err != nil {
				return err
			}
		}
		if s.row, err = s.layout.row(s.row[:0], it.Pane); err != nil {
			return connector.Permanent(err)
		}
		s.uses++
		p.used = s.uses
		if _, err := p.w.WriteRows([]pq.Row{s.row}); err != nil {
			return fmt.Errorf("writing %s: %w", p.f.Name(), err)
		}
		p.ref.Rows++
		size := p.w.Size()
		if size-p.group >= RowGroupBytes {
			if err := p.w.Flush(); err != nil {
				return fmt.Errorf("writing %s: %w", p.f.Name(), err)
			}
			p.group = p.w.Size()
		}
		if size >= s.cfg.RollSize {
			if err := s.finish(p); err != nil {
				return err
			}
		}
	}
	return s.rollOld()
}

// newPart opens the next part file of a partition folder: the next number
// whose in-progress and final names are both free. With MaxOpenFiles open
// already, the one written least recently is finished first.
func (s *Sink) newPart(dir string) (*part, error) {
	if len(s.open) >= MaxOpenFiles {
		var lru *part
		for _, p := range s.open {
			if lru == nil || p.used < lru.used {
				lru = p
			}
		}
		if err := s.finish(lru); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(s.path(dir, ""), 0o755); err != nil {
		return nil, err
	}
	for {
		n := s.next
		s.next++
		if s.finalExists(dir, n) {
			continue
		}
		f, err := os.OpenFile(s.path(dir, s.tmpName(n)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		w := pq.NewWriter(f, s.layout.schema, pq.Compression(&pq.Zstd), pq.CreatedBy("weir", "", ""),
			pq.KeyValueMetadata("weir.job", s.env.Job))
		p := &part{ref: fileRef{Dir: dir, N: n}, f: f, w: w, opened: s.now()}
		s.open[dir] = p
		return p, nil
	}
}

// finish closes a part file: its footer written and synced. With
// checkpoints it waits for the next pre-commit; without, it gets its final
// name now.
func (s *Sink) finish(p *part) error {
	delete(s.open, p.ref.Dir)
	err := p.w.Close()
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("closing %s: %w", p.f.Name(), err)
	}
	if !s.exact {
		if s.remote != nil {
			s.unput = append(s.unput, p.ref)
			return s.put(context.Background())
		}
		return s.commitFile(s.task, p.ref)
	}
	s.done = append(s.done, p.ref)
	return nil
}

// rollOld closes the part files open for roll.interval.
func (s *Sink) rollOld() error {
	if s.cfg.RollInterval <= 0 {
		return nil
	}
	now := s.now()
	for _, p := range s.sorted() {
		if now.Sub(p.opened) >= s.cfg.RollInterval {
			if err := s.finish(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// sorted are the open part files, in the order of their numbers.
func (s *Sink) sorted() []*part {
	out := make([]*part, 0, len(s.open))
	for _, p := range s.open {
		out = append(out, p)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ref.N < out[b].ref.N })
	return out
}

// Flush implements connector.Sink: a part file is never visible before it
// is finished; Flush only closes those open for roll.interval (and, for an
// output to object storage without checkpoints, tries again the uploads
// that failed).
func (s *Sink) Flush(ctx context.Context) error {
	if err := s.put(ctx); err != nil {
		return err
	}
	return s.rollOld()
}

// PreCommit implements connector.Sink: it closes every open part file, and
// returns the names of those closed since the last pre-commit. An output to
// object storage uploads them first, as multipart uploads it does not
// complete: the pre-commit names the uploads and their parts.
func (s *Sink) PreCommit(ctx context.Context, _ uint64) ([]byte, error) {
	for _, p := range s.sorted() {
		if err := s.finish(p); err != nil {
			return nil, err
		}
	}
	if !s.exact {
		return nil, nil
	}
	if s.remote != nil {
		for i := range s.done {
			if err := s.stage(ctx, &s.done[i]); err != nil {
				return nil, err
			}
		}
	}
	pc := preCommit{Task: s.task, Next: s.next, Files: s.done}
	if pc.Files == nil {
		pc.Files = []fileRef{}
	}
	s.done = nil
	return json.Marshal(pc)
}

// Commit implements connector.Sink: it gives the part files of a
// pre-commit their final names. It is idempotent.
func (s *Sink) Commit(ctx context.Context, _ uint64, pre []byte) error {
	if len(pre) == 0 {
		return nil
	}
	pc, err := decodePre(pre)
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for _, f := range pc.Files {
		if f.Upload != "" {
			if err := s.completeUpload(ctx, pc.Task, f); err != nil {
				return err
			}
			continue
		}
		if err := s.commitFile(pc.Task, f); err != nil {
			return err
		}
		dirs[f.Dir] = true
	}
	for d := range dirs {
		if err := syncDir(s.path(d, "")); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.markNext = max(s.markNext, pc.Next)
	s.mu.Unlock()
	return nil
}

// commitFile gives a part file its final name: a hard link, which fails
// if the final name exists (never replaced), then the in-progress name
// removed. A link made already (the same file under both names), or an
// in-progress file gone with its final one there, is a commit done.
func (s *Sink) commitFile(task string, f fileRef) error {
	tmp, final := s.path(f.Dir, tmpName(task, f.N)), s.path(f.Dir, finalName(task, f.N))
	err := os.Link(tmp, final)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		ti, terr := os.Lstat(tmp)
		fi, ferr := os.Lstat(final)
		if terr != nil || ferr != nil || !os.SameFile(ti, fi) {
			return connector.Permanent(fmt.Errorf("%s exists and is not the part file weir wrote (%s); it is not replaced", final, tmp))
		}
	case errors.Is(err, fs.ErrNotExist):
		if _, ferr := os.Lstat(final); ferr == nil {
			return nil // committed already
		}
		return connector.Permanent(fmt.Errorf("%s, which a checkpoint holds, is gone, and %s is not there", tmp, final))
	default:
		return fmt.Errorf("committing %s: %w", tmp, err)
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Mark implements connector.Marker: the number the next part file gets,
// as of the last commit.
func (s *Sink) Mark() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(mark{Next: s.markNext})
	return b
}

// Guarantee implements connector.Sink: exactly once with checkpoints.
func (s *Sink) Guarantee() connector.Guarantee {
	if s.exact {
		return connector.ExactlyOnce
	}
	return connector.AtLeastOnce
}

// Close implements connector.Sink. Without checkpoints it finishes the
// open part files (they get their final names). With checkpoints it
// removes the part files no pre-commit holds (this run wrote them, and no
// checkpoint will): those a pre-commit holds stay for a restore to commit.
func (s *Sink) Close() error {
	var errs []error
	if !s.exact {
		for _, p := range s.sorted() {
			errs = append(errs, s.finish(p))
		}
		return errors.Join(errs...)
	}
	for _, p := range s.sorted() {
		delete(s.open, p.ref.Dir)
		p.f.Close()
		s.done = append(s.done, p.ref)
	}
	for _, f := range s.done {
		if err := os.Remove(s.path(f.Dir, s.tmpName(f.N))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.done = nil
	return errors.Join(errs...)
}
