package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/internal/pgtest"
	"github.com/weirstream/weir/jobfile"
)

// One PostgreSQL cluster for the package's tests, started when one first
// needs it; each gets a database of its own.
var pg struct {
	once sync.Once
	dsn  string
	err  error
	stop func()
	dir  string
	mu   sync.Mutex
	n    int
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.stop != nil {
		pg.stop()
	}
	if pg.dir != "" {
		os.RemoveAll(pg.dir)
	}
	os.Exit(code)
}

// pgDatabase makes a database for t and returns its DSN. Without
// PostgreSQL the test fails: CI installs it.
func pgDatabase(t *testing.T) string {
	t.Helper()
	pg.once.Do(func() {
		if pg.dir, pg.err = os.MkdirTemp("", "weir-job-pg-"); pg.err != nil {
			return
		}
		pg.dsn, pg.stop, pg.err = pgtest.Start(pg.dir)
	})
	if pg.err != nil {
		t.Fatalf("PostgreSQL is needed for this test and could not be started: %v", pg.err)
	}
	pg.mu.Lock()
	pg.n++
	name := fmt.Sprintf("job%d", pg.n)
	pg.mu.Unlock()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(pg.dsn, "/postgres?", "/"+name+"?", 1)
}

// minimal is the smallest job file the tests build on, the grammar's
// tests' own: a file source, a tumbling minute, a count, a file output.
var minimal = func() string {
	b, err := os.ReadFile("../jobfile/testdata/minimal.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// runJobIn writes the job file yaml and its input (input.jsonl) to a new
// directory and runs the job there with o: the directory and the summary.
func runJobIn(t *testing.T, yaml, input string, o Options) (string, *Summary) {
	t.Helper()
	dir := t.TempDir()
	return dir, runJobAt(t, dir, yaml, input, o)
}

// runJobAt is runJobIn in dir, which may hold what an earlier run left
// (its checkpoints, its outputs).
func runJobAt(t *testing.T, dir, yaml, input string, o Options) *Summary {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(input), 0o600)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o600)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), j, o)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// runParser is j's line parser as a run has it: with its source's
// decoder, when its records are of a format.
func runParser(t testing.TB, j *jobfile.Job) *lineParser {
	t.Helper()
	d, err := NewDecoder(j)
	if err != nil {
		t.Fatal(err)
	}
	return d.lp
}
