package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// A flush that cannot write (the disk is full) fails the database: Failed
// is closed, Err names the state directory and the cause, and Close returns
// at once (Pebble would wait for the flush for ever) and still deletes the
// files, giving the disk its room back.
func TestFullDiskFailsTheDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	full := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".sst") {
			return syscall.ENOSPC
		}
		return nil
	})}
	db, err := open(dir, 8<<20, errorfs.Wrap(vfs.Default, full))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("k"), []byte("v"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if db.Err() != nil {
		t.Fatalf("Err before any failure: %v", db.Err())
	}
	full.On()
	// The flush does not return while it cannot write: nothing waits on it.
	go db.Flush()
	<-db.Failed()
	if err := db.Err(); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Err = %v, want ENOSPC naming %s", err, dir)
	}
	if err := db.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Close = %v, want the background error", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the state directory is still there after Close: %v", err)
	}
}
