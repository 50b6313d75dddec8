package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// What a restore or an inspection materializes goes whole when it is done
// with: the directory, its process's mark and the mark's lock, not only
// the files.
func TestMaterializedFilesGoWhole(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, err := materializeFiles(nil, []File{{Name: "op-0.db.MANIFEST", Data: []byte("m")}, {Name: "other", Data: []byte("o")}}, "op-0.db.")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "MANIFEST")); err != nil || string(got) != "m" {
		t.Fatalf("materialized %q, %v", got, err)
	}
	removeDir(dir)
	if es, _ := os.ReadDir(tmp); len(es) != 0 {
		t.Errorf("%s holds %s after the removal", tmp, es[0].Name())
	}
}
