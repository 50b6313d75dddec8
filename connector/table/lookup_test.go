package table

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// limit is a card's row of a limits table.
type limit struct {
	Card  string
	Limit float64
}

func scanLimit(rows *sql.Rows) (string, limit, error) {
	var l limit
	err := rows.Scan(&l.Card, &l.Limit)
	return l.Card, l, err
}

// order is a card's order, arriving at its time.
type order struct {
	Card   string
	Amount float64
	At     mtime.Time
}

// lookupLines runs orders through a lookup join with table and returns
// what comes out, in order: each order with its card's limit, or without
// one, and the dead letters.
func lookupLines(t *testing.T, table connector.Lookup[string, limit], opts ...weir.LookupOption) []string {
	t.Helper()
	orders := []order{
		{"c1", 80, 1_000}, {"c2", 10, 2_000}, {"c1", 150, 3_000}, {"c9", 5, 4_000},
		{"c3", 700, 5_000}, {"c2", 30, 6_000}, {"c1", 120, 7_000},
	}
	p := weir.NewPipeline()
	src := weir.FromSeq(p, func(yield func(order, mtime.Time) bool) {
		for _, o := range orders {
			if !yield(o, o.At) {
				return
			}
		}
	})
	looked, failed := weir.LookupJoin(src, func(o order) string { return o.Card }, table, opts...)
	var lines []string
	weir.Sink(looked, func(l weir.Looked[string, order, limit]) error {
		switch {
		case !l.Found:
			lines = append(lines, fmt.Sprintf("%s %.0f: no limit", l.Key, l.Value.Amount))
		case l.Value.Amount > l.Row.Limit:
			lines = append(lines, fmt.Sprintf("%s %.0f: over %.0f", l.Key, l.Value.Amount, l.Row.Limit))
		default:
			lines = append(lines, fmt.Sprintf("%s %.0f: within %.0f", l.Key, l.Value.Amount, l.Row.Limit))
		}
		return nil
	})
	weir.Sink(failed, func(f weir.LookupFailed[string, order]) error {
		lines = append(lines, fmt.Sprintf("%s %.0f: %s after %d attempts: %s", f.Key, f.Value.Amount, f.Reason, f.Attempts, f.Err))
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return lines
}

var wantLooked = []string{
	"c1 80: within 100", "c2 10: within 20", "c1 150: over 100", "c9 5: no limit",
	"c3 700: within 1000", "c2 30: over 20", "c1 120: over 100",
}

func createLimits(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, q := range []string{
		"CREATE TABLE limits (card TEXT PRIMARY KEY, credit_limit DOUBLE PRECISION NOT NULL)",
		"INSERT INTO limits VALUES ('c1', 100), ('c2', 20), ('c3', 1000)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// A lookup join against a SQLite table: every order with its card's
// limit, in the order the orders came, an order of a card without a row
// marked so; with a cache, and without.
func TestSQLiteLookupJoin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limits.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	createLimits(t, db)
	db.Close()
	lk, err := SQLiteLookup(path, "SELECT card, credit_limit FROM limits WHERE card IN ({keys})", scanLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	for _, opts := range [][]weir.LookupOption{nil, {weir.LookupCache(100, time.Minute), weir.LookupBatch(2, 2)}} {
		if got := lookupLines(t, lk, opts...); !slices.Equal(got, wantLooked) {
			t.Errorf("got  %q\nwant %q", got, wantLooked)
		}
	}
	// It reads, never writes: the database is opened read only.
	if _, err := lk.db.Exec("DELETE FROM limits"); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("a write through the lookup: %v", err)
	}
}

// The same against PostgreSQL; a query that fails (a table that is not
// there) sends each order to the dead letters with the error, after its
// attempts: none is dropped.
func TestPostgresLookupJoin(t *testing.T) {
	dsn := pgDSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	createLimits(t, db)
	lk, err := PostgresLookup(dsn, "SELECT card, credit_limit FROM limits WHERE card IN ({keys})", scanLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if got := lookupLines(t, lk, weir.LookupCache(100, time.Minute)); !slices.Equal(got, wantLooked) {
		t.Errorf("got  %q\nwant %q", got, wantLooked)
	}
	if strings.Contains(lk.String(), "password") || !strings.HasPrefix(lk.String(), "PostgreSQL database ") {
		t.Errorf("String: %q", lk.String())
	}

	bad, err := PostgresLookup(dsn, "SELECT card, credit_limit FROM nowhere WHERE card IN ({keys})", scanLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	got := lookupLines(t, bad, weir.LookupRetries(2, time.Millisecond), weir.LookupBatch(1, 1))
	if len(got) != 7 {
		t.Fatalf("%d lines, want 7: %q", len(got), got)
	}
	for i, l := range got {
		card := strings.Fields(wantLooked[i])[0]
		if !strings.HasPrefix(l, card+" ") || !strings.Contains(l, "lookup_failed after 2 attempts: PostgreSQL database") || !strings.Contains(l, `"nowhere" does not exist`) {
			t.Errorf("line %d: %q", i, l)
		}
	}
}

// A lookup's query needs its {keys} once.
func TestLookupQueryNeedsItsKeys(t *testing.T) {
	_, err := SQLiteLookup(filepath.Join(t.TempDir(), "x.db"), "SELECT card, credit_limit FROM limits WHERE card = ?", scanLimit)
	if err == nil || !strings.Contains(err.Error(), "{keys} once") {
		t.Errorf("got %v", err)
	}
}

// A DSN pgx cannot read is refused with why, never quoted: it may hold a
// password.
func TestPostgresLookupBadDSN(t *testing.T) {
	_, err := PostgresLookup("postgres://weir:s3cret@localhost:notaport/db", "SELECT card, credit_limit FROM limits WHERE card IN ({keys})", scanLimit)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "not a connection string pgx can read") {
		t.Errorf("got %v", err)
	}
}
