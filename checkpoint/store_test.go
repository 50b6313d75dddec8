package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/vfs"
)

func save(t *testing.T, s *Store, id uint64, kind Kind, data string) string {
	t.Helper()
	p, err := s.Save(Manifest{ID: id, Kind: kind, Job: "j"}, []string{"a", "b"}, [][]byte{[]byte(data), []byte("b" + data)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSaveLoadLatestPrune(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(OSFS, dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Latest(func(string) {}) != nil || s.NextID() != 1 {
		t.Fatal("an empty store has a checkpoint")
	}
	save(t, s, 1, Periodic, "one")
	save(t, s, 2, Periodic, "two")
	sp := save(t, s, 3, Savepoint, "three")
	save(t, s, 4, Periodic, "four")
	s.Prune()
	c := s.Latest(func(m string) { t.Errorf("warned: %s", m) })
	if c == nil || c.Manifest.ID != 4 || string(c.Files["a"]) != "four" || string(c.Files["b"]) != "bfour" {
		t.Fatalf("latest = %+v", c)
	}
	if s.NextID() != 5 {
		t.Errorf("next id %d", s.NextID())
	}
	// keep 2 periodic ones (2 and 4); the savepoint stays
	for _, name := range []string{"chk-00000001"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s not pruned", name)
		}
	}
	for _, p := range []string{filepath.Join(dir, "chk-00000002"), filepath.Join(dir, "chk-00000004"), sp} {
		if _, err := Load(OSFS, p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A store on the scratch file system (a group task's) keeps and finds its
// checkpoints as one on OS does, and is locked as one on disk.
func TestScratchStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(vfs.Scratch, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	save(t, s, 1, Periodic, "one")
	save(t, s, 2, Periodic, "two")
	s.Prune()
	if _, err := Open(vfs.Scratch, dir, 1); !errors.Is(err, ErrLocked) {
		t.Errorf("a second store on the directory: %v, want ErrLocked", err)
	}
	s.Close()
	o, err := Open(OSFS, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c := o.Latest(func(m string) { t.Errorf("warned: %s", m) })
	if c == nil || c.Manifest.ID != 2 || string(c.Files["a"]) != "two" {
		t.Fatalf("latest = %+v", c)
	}
	if _, err := os.Stat(filepath.Join(dir, "chk-00000001")); !os.IsNotExist(err) {
		t.Errorf("chk-00000001 not pruned: %v", err)
	}
}

func TestCorruptionIsDetected(t *testing.T) {
	for _, damage := range []struct {
		name string
		do   func(dir string)
		want string
	}{
		{"truncated file", func(d string) { os.WriteFile(filepath.Join(d, "a"), []byte("tw"), 0o644) }, "a has 2 bytes, the manifest says 3 (truncated?)"},
		{"flipped byte", func(d string) { os.WriteFile(filepath.Join(d, "b"), []byte("bTwo"), 0o644) }, "b checksum mismatch (corrupt)"},
		{"flipped manifest", func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, ManifestName))
			b[20] ^= 1
			os.WriteFile(filepath.Join(d, ManifestName), b, 0o644)
		}, "manifest checksum mismatch"},
		{"torn manifest", func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, ManifestName))
			os.WriteFile(filepath.Join(d, ManifestName), b[:len(b)/2], 0o644)
		}, "manifest has no checksum line (torn write?)"},
		{"missing file", func(d string) { os.Remove(filepath.Join(d, "a")) }, "no such file or directory"},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := Open(OSFS, dir, 5)
			save(t, s, 1, Periodic, "one")
			newest := save(t, s, 2, Periodic, "two")
			damage.do(newest)
			var warned []string
			c := s.Latest(func(m string) { warned = append(warned, m) })
			if c == nil || c.Manifest.ID != 1 {
				t.Fatalf("latest = %+v", c)
			}
			if len(warned) != 1 || !strings.Contains(warned[0], damage.want) || !strings.Contains(warned[0], "falling back") {
				t.Errorf("warnings %q, want one with %q", warned, damage.want)
			}
		})
	}
}

func TestOpenRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(OSFS, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	writeFiles(t, dir, map[string]string{".tmp-00000009/" + MarkName: "", ".tmp-00000009/a": "half"})
	os.MkdirAll(filepath.Join(dir, ".tmp-00000010"), 0o755)
	if _, err := Open(OSFS, dir, 1); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{".tmp-00000009", ".tmp-00000010"} {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("a half-written checkpoint was left: %s", n)
		}
	}
}

// Shared objects are copied once, referenced by every checkpoint that has
// them, pruned when none does, verified on load; a savepoint has its own
// copies.
func TestSharedObjects(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	for _, n := range []string{"1.sst", "2.sst", "3.sst"} {
		os.WriteFile(filepath.Join(src, n), []byte("table "+n), 0o644)
	}
	s, err := Open(OSFS, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	obj := func(n string) Input {
		return Input{Name: "op." + n, Path: filepath.Join(src, n), Object: "db1-" + n}
	}
	shared := func() string {
		names, _ := os.ReadDir(filepath.Join(dir, "shared"))
		var out []string
		for _, e := range names {
			out = append(out, e.Name())
		}
		return strings.Join(out, " ")
	}
	meta := Input{Name: "op", Data: []byte("state")}
	if _, err := s.SaveFiles(Manifest{ID: 1, Kind: Periodic}, []Input{meta, obj("1.sst"), obj("2.sst")}); err != nil {
		t.Fatal(err)
	}
	if s.Copied != int64(len("table 1.sst")+len("table 2.sst")) {
		t.Errorf("copied %d bytes after the first checkpoint", s.Copied)
	}
	copied := s.Copied
	if _, err := s.SaveFiles(Manifest{ID: 2, Kind: Periodic}, []Input{meta, obj("2.sst"), obj("3.sst")}); err != nil {
		t.Fatal(err)
	}
	if s.Copied-copied != int64(len("table 3.sst")) {
		t.Errorf("the second checkpoint copied %d bytes, want only 3.sst's", s.Copied-copied)
	}
	sp, err := s.SaveFiles(Manifest{ID: 3, Kind: Savepoint}, []Input{meta, obj("3.sst")})
	if err != nil {
		t.Fatal(err)
	}
	if got := shared(); got != "db1-1.sst db1-2.sst db1-3.sst" {
		t.Errorf("shared before pruning: %s", got)
	}
	s.Prune() // keeps checkpoint 2 (and the savepoint, which holds its own copy)
	if got := shared(); got != "db1-2.sst db1-3.sst" {
		t.Errorf("shared after pruning: %s", got)
	}
	c := s.Latest(func(m string) { t.Errorf("warned: %s", m) })
	if c == nil || c.Manifest.ID != 3 || c.Paths["op.3.sst"] != filepath.Join(sp, "op.3.sst") || c.Files["op.3.sst"] != nil {
		t.Fatalf("latest = %+v", c)
	}
	c2, err := Load(OSFS, filepath.Join(dir, "chk-00000002"))
	if err != nil {
		t.Fatal(err)
	}
	if c2.Paths["op.2.sst"] != filepath.Join(dir, "shared", "db1-2.sst") || string(c2.Files["op"]) != "state" {
		t.Errorf("checkpoint 2: %+v", c2)
	}
	// The savepoint stands alone; a damaged object is caught on load.
	os.RemoveAll(filepath.Join(dir, "chk-00000002"))
	s.Prune()
	if got := shared(); got != "" {
		t.Errorf("objects no checkpoint references stay: %s", got)
	}
	if _, err := Load(OSFS, sp); err != nil {
		t.Errorf("the savepoint needs the shared objects: %v", err)
	}
	if _, err := s.SaveFiles(Manifest{ID: 4, Kind: Periodic}, []Input{obj("1.sst")}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "shared", "db1-1.sst"), []byte("table 9.sst"), 0o644)
	if _, err := Load(OSFS, filepath.Join(dir, "chk-00000004")); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("a damaged object loads: %v", err)
	}
}

// userFiles are a person's files in a folder that a job names as its
// checkpoint directory: names weir uses (shared/, .tmp-) for other things.
var userFiles = map[string]string{
	"shared/reports/q3.txt": "revenue",
	"shared/contacts.txt":   "alice, bob",
	".tmp-notes":            "call the bank",
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameUserFiles(t *testing.T, dir string) {
	t.Helper()
	for name, text := range userFiles {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != text {
			t.Errorf("%s: %q, %v; want %q", name, b, err, text)
		}
	}
}

// A folder that holds files weir did not write is refused, with an error
// naming the first of them, and left as it was.
func TestForeignDirectoryIsRefused(t *testing.T) {
	for _, c := range []struct {
		files map[string]string
		entry string
	}{
		{userFiles, ".tmp-notes"},
		{map[string]string{"shared/contacts.txt": "alice"}, "shared/contacts.txt"},
		{map[string]string{"job.yaml": "name: j"}, "job.yaml"},
		{map[string]string{"chk-2024/notes.txt": "a folder named like a checkpoint"}, "chk-2024"},
		{map[string]string{".tmp-00000003/half.txt": "no mark"}, ".tmp-00000003"},
		{map[string]string{"savepoints/mine.txt": "x"}, "savepoints/mine.txt"},
	} {
		dir := t.TempDir()
		writeFiles(t, dir, c.files)
		_, err := Open(OSFS, dir, 1)
		var fe *ForeignError
		if !errors.As(err, &fe) || fe.Entry != c.entry {
			t.Fatalf("%v: Open: %v, want a ForeignError naming %s", c.files, err, c.entry)
		}
		want := dir + " holds " + c.entry + ", which weir did not write: weir deletes old checkpoints in its checkpoint directory, and keeps them only in a directory that is new, empty or marked WEIR-CHECKPOINTS by weir; choose another directory"
		if err.Error() != want {
			t.Errorf("error\n%s\nwant\n%s", err, want)
		}
		for name, text := range c.files {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != text {
				t.Errorf("%s: %q, %v", name, b, err)
			}
		}
		if names, _ := os.ReadDir(dir); len(names) != len(topNames(c.files)) {
			t.Errorf("Open wrote into a directory it refused: %v", names)
		}
	}
}

func topNames(files map[string]string) map[string]bool {
	out := map[string]bool{}
	for name := range files {
		top, _, _ := strings.Cut(name, "/")
		out[top] = true
	}
	return out
}

// Files a person puts into weir's own checkpoint directory later, under
// names of weir's shape, survive checkpoints, pruning and the removal of a
// crashed writer's leftovers; weir's own checkpoints and objects are still
// pruned.
func TestPruneRemovesOnlyWhatWeirWrote(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	for _, n := range []string{"1.sst", "2.sst"} {
		os.WriteFile(filepath.Join(src, n), []byte("table "+n), 0o644)
	}
	s, err := Open(OSFS, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, userFiles)
	writeFiles(t, dir, map[string]string{"chk-2024/notes.txt": "mine"})
	obj := func(n string) Input { return Input{Name: "op." + n, Path: filepath.Join(src, n), Object: "db1-" + n} }
	for id, o := range map[uint64]string{1: "1.sst", 2: "2.sst", 3: "2.sst"} {
		if _, err := s.SaveFiles(Manifest{ID: id, Kind: Periodic}, []Input{{Name: "op", Data: []byte("state")}, obj(o)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Prune()
	s.Close()
	s, err = Open(OSFS, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Clear()
	s.Close()
	sameUserFiles(t, dir)
	if b, err := os.ReadFile(filepath.Join(dir, "chk-2024/notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("chk-2024/notes.txt: %q, %v", b, err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, rel)
		}
		return nil
	})
	want := ".tmp-notes LOCK WEIR-CHECKPOINTS chk-2024/notes.txt shared/contacts.txt shared/reports/q3.txt"
	if got := strings.Join(left, " "); got != want {
		t.Errorf("left after pruning and clearing:\n%s\nwant\n%s", got, want)
	}
}

// A directory a weir from before the marker wrote (checkpoints with sound
// manifests, their objects, a lock, a pid file, an empty temporary
// directory) is adopted and marked; one with anything else in it is not.
func TestAdoptsAnOldCheckpointDirectory(t *testing.T) {
	old := func(t *testing.T) string {
		dir, src := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(src, "1.sst"), []byte("table"), 0o644)
		s, err := Open(OSFS, dir, 3)
		if err != nil {
			t.Fatal(err)
		}
		save(t, s, 1, Periodic, "one")
		if _, err := s.SaveFiles(Manifest{ID: 2, Kind: Periodic}, []Input{{Name: "op", Path: filepath.Join(src, "1.sst"), Object: "db1-1.sst"}}); err != nil {
			t.Fatal(err)
		}
		save(t, s, 3, Savepoint, "three")
		s.Close()
		// What the older weir left: no marks, a pid file, an empty
		// temporary directory.
		for _, p := range []string{MarkerName, "chk-00000001/" + MarkName, "chk-00000002/" + MarkName, "savepoints/sp-00000003/" + MarkName} {
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(dir, PIDName), []byte("12\n"), 0o644)
		os.Mkdir(filepath.Join(dir, ".tmp-00000004"), 0o755)
		return dir
	}
	dir := old(t)
	s, err := Open(OSFS, dir, 3)
	if err != nil {
		t.Fatalf("an old checkpoint directory is refused: %v", err)
	}
	if c := s.Latest(func(m string) { t.Error(m) }); c == nil || c.Manifest.ID != 3 {
		t.Errorf("latest: %+v", c)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, MarkerName)); err != nil {
		t.Errorf("not marked: %v", err)
	}
	for name, entry := range map[string]string{"shared/notes.txt": "shared/notes.txt", "README": "README", "chk-00000001/" + ManifestName: "chk-00000001"} {
		dir := old(t)
		if strings.HasSuffix(name, ManifestName) {
			os.WriteFile(filepath.Join(dir, name), []byte("torn"), 0o644)
		} else {
			os.WriteFile(filepath.Join(dir, name), []byte("mine"), 0o644)
		}
		var fe *ForeignError
		if _, err := Open(OSFS, dir, 3); !errors.As(err, &fe) || fe.Entry != entry {
			t.Errorf("with %s: %v, want a ForeignError naming %s", name, err, entry)
		}
	}
}

// A writer that crashed while adding shared objects left its temporary
// directory, the objects its mark lists and a copy half done: the next
// Open removes them, and nothing else.
func TestOpenRemovesACrashedWritersObjects(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "1.sst"), []byte("table 1"), 0o644)
	s, err := Open(OSFS, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveFiles(Manifest{ID: 1, Kind: Periodic}, []Input{{Name: "op", Path: filepath.Join(src, "1.sst"), Object: "db1-1.sst"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Checkpoint 2 was adding db1-2.sst and db1-3.sst (half copied) and
	// refers to db1-1.sst, which checkpoint 1 needs.
	writeFiles(t, dir, map[string]string{
		".tmp-00000002/" + MarkName: "db1-1.sst\ndb1-2.sst\ndb1-3.sst\n",
		".tmp-00000002/op":          "half",
		"shared/db1-2.sst":          "table 2",
		"shared/.tmp-db1-3.sst":     "tab",
		".tmp-00000005/mine.txt":    "not weir's: no mark",
	})
	s, err = Open(OSFS, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]bool{".tmp-00000002": false, "shared/db1-2.sst": false, "shared/.tmp-db1-3.sst": false, "shared/db1-1.sst": true, ".tmp-00000005/mine.txt": true} {
		if _, err := os.Stat(filepath.Join(dir, p)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
	if _, err := Load(OSFS, filepath.Join(dir, "chk-00000001")); err != nil {
		t.Error(err)
	}
}

// A restore from an older checkpoint or savepoint leaves the newer ones
// behind: a later fallback past a corrupt checkpoint goes to the one the
// restore started from, not to one of those, whose outputs the restore took
// back. The record survives the store being opened again.
func TestFallbackSkipsWhatARestoreLeftBehind(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(OSFS, dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	save(t, s, 1, Periodic, "one")
	save(t, s, 2, Savepoint, "two")
	save(t, s, 3, Periodic, "three")
	if err := s.Abandon(3); err != nil { // resuming from the newest: nothing left behind
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, AbandonedName)); !os.IsNotExist(err) {
		t.Fatalf("a restore from the newest checkpoint recorded something: %v", err)
	}
	if err := s.Abandon(2); err != nil { // a restore from the savepoint
		t.Fatal(err)
	}
	newest := save(t, s, 4, Periodic, "four")
	b, _ := os.ReadFile(filepath.Join(newest, ManifestName))
	b[20] ^= 1
	os.WriteFile(filepath.Join(newest, ManifestName), b, 0o644)
	s.Close()

	s, err = Open(OSFS, dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var warned []string
	c := s.Latest(func(m string) { warned = append(warned, m) })
	if c == nil || c.Manifest.ID != 2 {
		t.Fatalf("latest = %+v", c)
	}
	want := []string{
		"checkpoint " + newest + ": manifest checksum mismatch; falling back to an older checkpoint",
		"checkpoint " + filepath.Join(dir, "chk-00000003") + " was left behind by a run that resumed from the older checkpoint 2 (its outputs were taken back to that one); falling back to an older checkpoint",
	}
	if strings.Join(warned, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(warned, "\n"), strings.Join(want, "\n"))
	}
	// Abandoned says the same of each id, for a restore named by hand.
	for id, want := range map[uint64]bool{1: false, 2: false, 3: true, 4: false} {
		if base, gone := s.Abandoned(id); gone != want || (gone && base != 2) {
			t.Errorf("Abandoned(%d) = %d, %v; want %v", id, base, gone, want)
		}
	}
}

// A file given in parts is the file of its joined bytes: same bytes, same
// size and checksum in the manifest, on the real and the crashable file
// system.
func TestSaveFilesParts(t *testing.T) {
	for _, fs := range []FS{OSFS, vfs.NewCrashable()} {
		dir := t.TempDir()
		if fs != OSFS {
			dir = "/store"
		}
		s, err := Open(fs, dir, 2)
		if err != nil {
			t.Fatal(err)
		}
		parts := [][]byte{[]byte("head "), nil, []byte("pending output "), {}, []byte("tail")}
		if _, err := s.SaveFiles(Manifest{ID: 1, Kind: Periodic, Job: "j"}, []Input{
			{Name: "whole", Data: []byte("head pending output tail")},
			{Name: "parts", Parts: parts},
			{Name: "empty", Parts: [][]byte{}},
		}); err != nil {
			t.Fatal(err)
		}
		c := s.Latest(func(m string) { t.Errorf("warned: %s", m) })
		if c == nil {
			t.Fatal("no checkpoint")
		}
		if got := string(c.Files["parts"]); got != "head pending output tail" {
			t.Errorf("parts read back as %q", got)
		}
		if got, ok := c.Files["empty"]; !ok || len(got) != 0 {
			t.Errorf("empty parts read back as %q (present %v)", got, ok)
		}
		var whole, joined File
		for _, f := range c.Manifest.Files {
			switch f.Name {
			case "whole":
				whole = f
			case "parts":
				joined = f
			}
		}
		if whole.Size != 24 || joined.Size != whole.Size || joined.SHA256 != whole.SHA256 {
			t.Errorf("manifest entries differ: %+v and %+v", whole, joined)
		}
		if got := string((Input{Parts: parts}).Bytes()); got != "head pending output tail" {
			t.Errorf("Bytes = %q", got)
		}
	}
}
