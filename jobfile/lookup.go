package jobfile

import (
	"strings"

	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/mtime"
)

// Lookup is a job's lookup join (lookup:), as Flink's lookup join: the
// key of each record of the source is looked up in a table of SQLite or
// PostgreSQL as the record passes, in processing time, and the record is
// written with the row found (or, in a left_outer lookup, without one).
// Lookups are batched and run beside the job, through a cache; a lookup
// that keeps failing sends its records to the dead letters. Its results
// depend on when each row was read: a rerun reads the table as it is then.
type Lookup struct {
	// Driver is "sqlite" or "postgres"; Path is the SQLite database,
	// opened read only, DSN PostgreSQL's connection string (its password
	// put in).
	Driver, Path, DSN string
	// Query reads the rows of a batch of keys; {keys} stands for them, a
	// placeholder each.
	Query string
	// KeyColumn is the column of the query's rows that holds their key
	// (empty: the first).
	KeyColumn string
	// Kind is inner (the records whose key has a row) or left_outer
	// (every record, with its row or without).
	Kind string
	// CacheSize keys' rows (and that a key has none) are kept, each for
	// CacheTTL (0: until evicted); 0 keeps none.
	CacheSize int
	CacheTTL  mtime.Time
	// Batch keys are looked up in one query, InFlight queries at once.
	Batch, InFlight int
	// Attempts is how many times a query is tried, Backoff the wait
	// before the second try, doubled before each next one.
	Attempts int
	Backoff  mtime.Time
}

// What describes the table a lookup reads, as a person reads it: never
// its password.
func (l *Lookup) What() string {
	if l.Driver == "sqlite" {
		return "SQLite database " + l.Path
	}
	return table.DescribeDSN(l.DSN)
}

// notInLookup are the fields a job with lookup does not take, with why.
var notInLookup = []struct{ field, why string }{
	{"aggregations", "a job looks up or aggregates, not both yet: a lookup writes the records it looked up"},
	{"join", "a job has one join: a lookup, or a join with another input"},
	{"window", "a lookup writes each record with its row, not windows' panes"},
	{"trigger", "a lookup writes each record once, when its row is read"},
	{"allowed_lateness", "a lookup has no windows: no record is too late for it"},
	{"mode", "a lookup writes each record once: there is nothing to revise"},
	{"aggregates", "a lookup writes each record with its row, not aggregates"},
	{"having", "a lookup writes records; keep records with where"},
	{"late_for_some_windows", "a lookup has no windows"},
	{"version_field", "a lookup does not revise records"},
	{"heartbeat", "a lookup's source has no heartbeats yet"},
	{"acceptance", "the acceptance record is an aggregation's"},
	{"state", "a lookup keeps no state: its cache is not state"},
}

// LookupFields are the fields of lookup:.
var LookupFields = []string{"sqlite", "postgres", "query", "key_column", "kind", "cache", "batch", "retries"}

// lookup reads lookup:, in a job whose source, time, key and where are
// read already.
func (p *parser) lookup(root *node, j *Job) error {
	const example = `lookup: {sqlite: {path: limits.db}, query: "SELECT card, credit_limit FROM limits WHERE card IN ({keys})"}`
	for _, f := range notInLookup {
		if n := root.get(f.field); n != nil {
			return root.errf(n, f.field, "not in a job with lookup: %s", f.why)
		}
	}
	ln, err := root.sub("lookup")
	if err != nil {
		return err
	}
	if err := ln.strict(LookupFields...); err != nil {
		return err
	}
	l := &Lookup{Kind: JoinInner}
	sq, pg := ln.get("sqlite"), ln.get("postgres")
	switch {
	case sq != nil && pg != nil:
		return ln.errf(pg, "lookup.postgres", "a lookup reads one database: sqlite or postgres")
	case sq == nil && pg == nil:
		return ln.errf(nil, "lookup", "missing the database: sqlite or postgres, e.g. %s", example)
	case sq != nil:
		l.Driver = "sqlite"
		db, err := ln.sub("sqlite")
		if err != nil {
			return err
		}
		if err := db.strict("path"); err != nil {
			return err
		}
		path, pn, err := db.str("path")
		if err != nil {
			return err
		}
		if path == "" {
			return db.errf(pn, "lookup.sqlite.path", "missing: the database file, e.g. path: limits.db")
		}
		l.Path = p.resolve(path)
	default:
		l.Driver = "postgres"
		db, err := ln.sub("postgres")
		if err != nil {
			return err
		}
		if err := db.strict("dsn", "password"); err != nil {
			return err
		}
		dsn, dn, err := db.str("dsn")
		if err != nil {
			return err
		}
		if dsn == "" {
			return db.errf(dn, "lookup.postgres.dsn", "missing: the connection string, e.g. dsn: postgres://weir@localhost/shop (${NAME} reads NAME from the environment)")
		}
		pw, pn, err := db.str("password")
		if err != nil {
			return err
		}
		if l.DSN, err = withPassword(dsn, pw, pn != nil); err != nil {
			return db.errf(pn, "lookup.postgres.password", "%v", err)
		}
		if err := table.CheckDSN(l.DSN); err != nil {
			return db.errf(dn, "lookup.postgres.dsn", "%v", err)
		}
	}
	q, qn, err := ln.str("query")
	if err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(q) == "":
		return ln.errf(qn, "lookup.query", "missing: the query that reads the rows of a batch of keys, {keys} where they go, e.g. SELECT card, credit_limit FROM limits WHERE card IN ({keys})")
	case strings.Count(q, "{keys}") != 1:
		return ln.errf(qn, "lookup.query", "expected {keys} once, where the batch's keys go, e.g. WHERE card IN ({keys}); got %d", strings.Count(q, "{keys}"))
	}
	l.Query = q
	if l.KeyColumn, _, err = ln.str("key_column"); err != nil {
		return err
	}
	k, kn, err := ln.str("kind")
	if err != nil {
		return err
	}
	switch k {
	case "":
	case JoinInner, JoinLeftOuter:
		l.Kind = k
	default:
		return ln.errf(kn, "lookup.kind", "expected inner or left_outer, got %q", k)
	}
	if err := lookupCache(ln, l); err != nil {
		return err
	}
	if j.Kafka != nil && j.Kafka.Group != "" {
		return ln.errf(nil, "lookup", "a lookup reads its source in one job: not in a consumer group yet")
	}
	if !j.Keyed() {
		return root.errf(nil, "key", "missing: a lookup reads the row of each record's key, e.g. key: card")
	}
	if len(j.KeyFields()) != 1 {
		return root.errf(root.get("key"), "key", "a lookup's key is one field; %s has %d", j.KeyName(), len(j.KeyFields()))
	}
	j.Lookup = l
	return nil
}

// lookupCache reads lookup's cache, batch and retries.
func lookupCache(ln *node, l *Lookup) error {
	l.Batch, l.InFlight, l.Attempts, l.Backoff = 64, 4, 3, 100
	positive := func(m *node, name string, dst *int) error {
		n, ok, err := m.integer(name)
		if err != nil {
			return err
		}
		if ok {
			if n < 1 {
				return m.errf(m.get(name), m.field(name), "expected a whole number above 0, got %d", n)
			}
			*dst = n
		}
		return nil
	}
	for _, s := range []struct {
		name   string
		fields []string
		read   func(m *node) error
	}{
		{"cache", []string{"size", "ttl"}, func(m *node) error {
			if m.get("size") == nil {
				return m.errf(nil, "lookup.cache.size", "missing: how many keys' rows to keep, e.g. cache: {size: 10000, ttl: 5m}")
			}
			if err := positive(m, "size", &l.CacheSize); err != nil {
				return err
			}
			var err error
			l.CacheTTL, _, err = m.duration("ttl")
			return err
		}},
		{"batch", []string{"keys", "in_flight"}, func(m *node) error {
			if err := positive(m, "keys", &l.Batch); err != nil {
				return err
			}
			return positive(m, "in_flight", &l.InFlight)
		}},
		{"retries", []string{"attempts", "backoff"}, func(m *node) error {
			if err := positive(m, "attempts", &l.Attempts); err != nil {
				return err
			}
			d, ok, err := m.duration("backoff")
			if err != nil {
				return err
			}
			if ok {
				if d <= 0 {
					return m.errf(m.get("backoff"), "lookup.retries.backoff", "expected a duration above 0, such as 100ms")
				}
				l.Backoff = d
			}
			return nil
		}},
	} {
		m, err := ln.sub(s.name)
		if err != nil {
			return err
		}
		if m == nil {
			continue
		}
		if err := m.strict(s.fields...); err != nil {
			return err
		}
		if err := s.read(m); err != nil {
			return err
		}
	}
	return nil
}
