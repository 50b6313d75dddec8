package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	os.MkdirAll(filepath.Join(dir, ".tmp-00000009"), 0o755)
	if _, err := Open(OSFS, dir, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".tmp-00000009")); !os.IsNotExist(err) {
		t.Error("a half-written checkpoint was left")
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
