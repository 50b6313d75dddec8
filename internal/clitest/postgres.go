package clitest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/internal/pgtest"
)

// One PostgreSQL cluster per test binary, for the tests that need one.
var pg struct {
	once sync.Once
	mu   sync.Mutex
	dsn  string // the cluster's database postgres
	dir  string
	err  error
	n    int
}

// PGDatabase makes a database of its own for t in the test binary's
// PostgreSQL cluster, started the first time (and stopped by Main), and
// returns its DSN. Without PostgreSQL the test fails: CI installs it.
func PGDatabase(t testing.TB) string {
	t.Helper()
	pg.once.Do(func() {
		dir, err := os.MkdirTemp("", "weir-pg-")
		if err != nil {
			pg.err = err
			return
		}
		atExit(func() { os.RemoveAll(dir) })
		pg.dir = dir
		var stop func()
		if pg.dsn, stop, pg.err = pgtest.Start(dir); pg.err == nil {
			atExit(stop)
		}
	})
	if pg.err != nil {
		t.Fatalf("this test needs PostgreSQL (apt-get install postgresql): %v", pg.err)
	}
	pg.mu.Lock()
	pg.n++
	name := fmt.Sprintf("db%d", pg.n)
	pg.mu.Unlock()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(pg.dsn, "/postgres?", "/"+name+"?", 1)
}

// PGAddUser adds a user with a password that may connect to database (one
// of PGDatabase's) by password authentication only.
func PGAddUser(t testing.TB, database, user, password string) {
	t.Helper()
	if err := pgtest.AddUser(pg.dsn, pg.dir, database, user, password); err != nil {
		t.Fatal(err)
	}
}
