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
