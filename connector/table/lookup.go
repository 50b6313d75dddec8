package table

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Lookup reads rows of a SQLite or PostgreSQL table by key, for a lookup
// join (weir.LookupJoin): it is a connector.Lookup. Each call runs query
// once for a batch of keys, its {keys} replaced by a placeholder a key
// ("SELECT card, credit_limit FROM limits WHERE card IN ({keys})"), and
// scan reads a key and its row from each result row; a key the query
// returns twice keeps its last row. It opens its connections when it is
// first called and keeps a few (as many as the lookups at once); Close
// closes them.
type Lookup[K comparable, R any] struct {
	db    *sql.DB
	query []string // the query around its {keys}
	param func(i int) string
	scan  func(*sql.Rows) (K, R, error)
	what  string
}

// SQLiteLookup looks keys up in the SQLite database at path, opened read
// only.
func SQLiteLookup[K comparable, R any](path, query string, scan func(*sql.Rows) (K, R, error)) (*Lookup[K, R], error) {
	db, err := sql.Open("sqlite", sqliteURI(path)+"&mode=ro")
	if err != nil {
		return nil, err
	}
	return newLookup(db, query, sqliteDialect.param, scan, "SQLite database "+path)
}

// PostgresLookup looks keys up in the PostgreSQL database at dsn (a URL or
// key=value pairs, as Postgres takes it).
func PostgresLookup[K comparable, R any](dsn, query string, scan func(*sql.Rows) (K, R, error)) (*Lookup[K, R], error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// Said without quoting the DSN, which may hold a password.
		return nil, CheckDSN(dsn)
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "weir"
	}
	return newLookup(stdlib.OpenDB(*cfg), query, pgDialect.param, scan, describe(cfg))
}

// DescribeDSN is what the PostgreSQL connection string dsn reads, as a
// person reads it: its database, host and port, never its password.
func DescribeDSN(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "PostgreSQL database (a connection string that does not parse)"
	}
	return describe(cfg)
}

func describe(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("PostgreSQL database %s at %s:%d", cfg.Database, cfg.Host, cfg.Port)
}

func newLookup[K comparable, R any](db *sql.DB, query string, param func(int) string, scan func(*sql.Rows) (K, R, error), what string) (*Lookup[K, R], error) {
	parts := strings.Split(query, "{keys}")
	if len(parts) != 2 || scan == nil {
		db.Close()
		return nil, fmt.Errorf("a lookup's query has {keys} once, where the keys go, and a scan function: %q", query)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return &Lookup[K, R]{db: db, query: parts, param: param, scan: scan, what: what}, nil
}

// Lookup implements connector.Lookup.
func (l *Lookup[K, R]) Lookup(ctx context.Context, keys []K) (map[K]R, error) {
	var q strings.Builder
	q.WriteString(l.query[0])
	args := make([]any, len(keys))
	for i, k := range keys {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(l.param(i + 1))
		args[i] = k
	}
	q.WriteString(l.query[1])
	rows, err := l.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.what, err)
	}
	defer rows.Close()
	out := make(map[K]R, len(keys))
	for rows.Next() {
		k, r, err := l.scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.what, err)
		}
		out[k] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", l.what, err)
	}
	return out, nil
}

// String says what the lookup reads (never a password).
func (l *Lookup[K, R]) String() string { return l.what }

// Close closes the lookup's connections.
func (l *Lookup[K, R]) Close() error { return l.db.Close() }
