package table

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/pgtest"
	"github.com/weirstream/weir/mtime"
)

// One PostgreSQL cluster per test binary, started when a test first needs
// it; each test gets a database of its own.
var cluster struct {
	once sync.Once
	dsn  string
	err  error
	stop func()
	dir  string
	n    int
	mu   sync.Mutex
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.stop != nil {
		cluster.stop()
	}
	if cluster.dir != "" {
		os.RemoveAll(cluster.dir)
	}
	os.Exit(code)
}

// pgDSN starts the cluster if needed, makes a database for t, and returns
// its DSN. Without PostgreSQL the test fails: CI installs it.
func pgDSN(t testing.TB) string {
	t.Helper()
	cluster.once.Do(func() {
		dir, err := os.MkdirTemp("", "weir-table-pg-")
		if err != nil {
			cluster.err = err
			return
		}
		cluster.dir = dir
		cluster.dsn, cluster.stop, cluster.err = pgtest.Start(dir)
	})
	if cluster.err != nil {
		t.Fatalf("PostgreSQL is needed for this test and could not be started: %v", cluster.err)
	}
	cluster.mu.Lock()
	cluster.n++
	name := fmt.Sprintf("t%d_%s", cluster.n, strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	cluster.mu.Unlock()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, cluster.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+quote(name)); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(cluster.dsn, "/postgres?", "/"+name+"?", 1)
}

// testDB is one database a test runs against: a SQLite file or a
// PostgreSQL database.
type testDB struct {
	kind string // "sqlite" or "postgres"
	path string // SQLite
	dsn  string // PostgreSQL
	sdb  *sql.DB
	pg   *pgx.Conn
}

// both runs f against SQLite and against PostgreSQL.
func both(t *testing.T, f func(t *testing.T, d *testDB)) {
	t.Run("sqlite", func(t *testing.T) { f(t, newSQLiteDB(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, newPostgresDB(t)) })
}

func newSQLiteDB(t *testing.T) *testDB {
	d := &testDB{kind: "sqlite", path: filepath.Join(t.TempDir(), "out.db")}
	t.Cleanup(func() {
		if d.sdb != nil {
			d.sdb.Close()
		}
	})
	return d
}

func newPostgresDB(t *testing.T) *testDB {
	d := &testDB{kind: "postgres", dsn: pgDSN(t)}
	conn, err := pgx.Connect(context.Background(), d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	d.pg = conn
	t.Cleanup(func() { conn.Close(context.Background()) })
	return d
}

// sink makes a sink on d and opens it.
func (d *testDB) sink(t *testing.T, s Schema, o Options) *Sink {
	t.Helper()
	k := d.newSink(s, o)
	if err := k.Open(context.Background(), connector.Resume{}); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func (d *testDB) newSink(s Schema, o Options) *Sink {
	if d.kind == "sqlite" {
		return SQLite(d.path, s, o)
	}
	return Postgres(d.dsn, s, o)
}

// exec runs statements on d, outside any sink.
func (d *testDB) exec(t *testing.T, q string) {
	t.Helper()
	if d.kind == "postgres" {
		if _, err := d.pg.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return
	}
	if _, err := d.sqlite(t).Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (d *testDB) sqlite(t *testing.T) *sql.DB {
	t.Helper()
	if d.sdb == nil {
		db, err := sql.Open("sqlite", d.path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		d.sdb = db
	}
	return d.sdb
}

// rows runs q and returns its rows, each as its values joined by "|":
// timestamps as mtime formats them, booleans true or false, NULL as NULL.
func (d *testDB) rows(t *testing.T, q string) []string {
	t.Helper()
	var out []string
	if d.kind == "postgres" {
		rows, err := d.pg.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		for rows.Next() {
			vs, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, joinValues(vs))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	rows, err := d.sqlite(t).Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vs := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vs {
			ptrs[i] = &vs[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, joinValues(vs))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func joinValues(vs []any) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		switch x := v.(type) {
		case nil:
			s[i] = "NULL"
		case time.Time:
			s[i] = mtime.FromTime(x).String()
		case bool:
			s[i] = strconv.FormatBool(x)
		case int64:
			s[i] = strconv.FormatInt(x, 10)
		case int32:
			s[i] = strconv.FormatInt(int64(x), 10)
		case float64:
			s[i] = strconv.FormatFloat(x, 'g', -1, 64)
		case string:
			s[i] = x
		case []byte:
			s[i] = string(x)
		case pgtype.Numeric:
			v, _ := x.Value()
			s[i] = fmt.Sprint(v)
		default:
			s[i] = fmt.Sprintf("%T(%v)", v, v)
		}
	}
	return strings.Join(s, "|")
}

// commit writes rows as one checkpoint's output and commits it; it returns
// the pre-commit.
func commit(t *testing.T, k *Sink, id uint64, rows ...Row) []byte {
	t.Helper()
	ctx := context.Background()
	if err := k.Write(ctx, rows); err != nil {
		t.Fatalf("write: %v", err)
	}
	pre, err := k.PreCommit(ctx, id)
	if err != nil {
		t.Fatalf("pre-commit %d: %v", id, err)
	}
	if err := k.Commit(ctx, id, pre); err != nil {
		t.Fatalf("commit %d: %v", id, err)
	}
	return pre
}
