package jobfile

import (
	"strings"
	"testing"
)

// lookupMinimal enriches the orders with their card's limit.
const lookupMinimal = `name: limits
source: {file: orders.jsonl}
time: {field: ts}
key: card
lookup:
  sqlite: {path: limits.db}
  query: SELECT card, credit_limit FROM limits WHERE card IN ({keys})
output: enriched.jsonl
dead_letter: failed.jsonl
`

func TestParseLookup(t *testing.T) {
	j, err := Parse([]byte(lookupMinimal), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	l := j.Lookup
	want := Lookup{Driver: "sqlite", Path: "/d/limits.db", Query: "SELECT card, credit_limit FROM limits WHERE card IN ({keys})", Kind: JoinInner,
		Batch: 64, InFlight: 4, Attempts: 3, Backoff: 100}
	if l == nil || *l != want {
		t.Fatalf("lookup %+v, want %+v", l, want)
	}
	if j.Join != nil || j.Window.Assigner != nil || len(j.Aggregates) != 0 || j.DeadLetter == nil {
		t.Errorf("join %v window %v aggregates %v dead letter %v", j.Join, j.Window.Assigner, j.Aggregates, j.DeadLetter)
	}
	if got := j.Warnings(); len(got) != 0 {
		t.Errorf("warnings %q", got)
	}
	all := strings.Replace(lookupMinimal, "  sqlite: {path: limits.db}\n",
		"  postgres: {dsn: \"postgres://weir@db.example/shop\", password: s3cret}\n  key_column: card\n  kind: left_outer\n"+
			"  cache: {size: 1000, ttl: 5m}\n  batch: {keys: 16, in_flight: 2}\n  retries: {attempts: 5, backoff: 1s}\n", 1)
	j, err = Parse([]byte(all), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	l = j.Lookup
	want = Lookup{Driver: "postgres", DSN: "postgres://weir:s3cret@db.example/shop", Query: want.Query, KeyColumn: "card", Kind: JoinLeftOuter,
		CacheSize: 1000, CacheTTL: 300_000, Batch: 16, InFlight: 2, Attempts: 5, Backoff: 1000}
	if *l != want {
		t.Errorf("lookup %+v, want %+v", *l, want)
	}
	if got := l.What(); got != "PostgreSQL database shop at db.example:5432" {
		t.Errorf("What: %q", got)
	}
	if got := j.Redact(l.DSN); strings.Contains(got, "s3cret") {
		t.Errorf("the password is shown: %s", got)
	}
	// Without dead_letter, the records whose lookup fails are lost: said
	// at start.
	j, err = Parse([]byte(strings.Replace(lookupMinimal, "dead_letter: failed.jsonl\n", "", 1)), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	if got := j.Warnings(); len(got) != 1 || !strings.HasPrefix(got[0], "no dead_letter: ") {
		t.Errorf("warnings %q", got)
	}
}

func TestParseLookupErrors(t *testing.T) {
	without := func(s string) string { return strings.Replace(lookupMinimal, s, "", 1) }
	with := func(old, new string) string { return strings.Replace(lookupMinimal, old, new, 1) }
	tests := []struct{ name, yaml, want string }{
		{"a window", lookupMinimal + "window: {tumbling: 1m}\n",
			`job.yaml:10: window: not in a job with lookup: a lookup writes each record with its row, not windows' panes`},
		{"aggregates", lookupMinimal + "aggregates: {n: count}\n",
			`job.yaml:10: aggregates: not in a job with lookup: a lookup writes each record with its row, not aggregates`},
		{"a join too", lookupMinimal + "join: {with: {source: p.jsonl, time: {field: ts}, key: k}, between: [0s, 1m]}\n",
			`job.yaml:10: join: not in a job with lookup: a job has one join: a lookup, or a join with another input`},
		{"state", lookupMinimal + "state: {backend: pebble}\n",
			`job.yaml:10: state: not in a job with lookup: a lookup keeps no state: its cache is not state`},
		{"no database", without("  sqlite: {path: limits.db}\n"),
			`job.yaml:6: lookup: missing the database: sqlite or postgres, e.g. lookup: {sqlite: {path: limits.db}, query: "SELECT card, credit_limit FROM limits WHERE card IN ({keys})"}`},
		{"two databases", with("  sqlite: {path: limits.db}\n", "  sqlite: {path: limits.db}\n  postgres: {dsn: postgres://h/db}\n"),
			`job.yaml:7: lookup.postgres: a lookup reads one database: sqlite or postgres`},
		{"no path", with("{path: limits.db}", "{}"),
			`job.yaml:6: lookup.sqlite.path: missing: the database file, e.g. path: limits.db`},
		{"a typo in sqlite", with("{path: limits.db}", "{pth: limits.db}"),
			`job.yaml:6: lookup.sqlite.pth: unknown field "pth" (did you mean "path"?)`},
		{"no dsn", with("  sqlite: {path: limits.db}\n", "  postgres: {password: x}\n"),
			`job.yaml:6: lookup.postgres.dsn: missing: the connection string, e.g. dsn: postgres://weir@localhost/shop (${NAME} reads NAME from the environment)`},
		{"a password twice", with("  sqlite: {path: limits.db}\n", "  postgres: {dsn: \"postgres://u:pw1@h/db\", password: two}\n"),
			`job.yaml:6: lookup.postgres.password: the dsn has a password already: give it in one place`},
		{"no query", without("  query: SELECT card, credit_limit FROM limits WHERE card IN ({keys})\n"),
			`job.yaml:6: lookup.query: missing: the query that reads the rows of a batch of keys, {keys} where they go, e.g. SELECT card, credit_limit FROM limits WHERE card IN ({keys})`},
		{"no keys in the query", with("IN ({keys})", "= 'c1'"),
			`job.yaml:7: lookup.query: expected {keys} once, where the batch's keys go, e.g. WHERE card IN ({keys}); got 0`},
		{"keys twice", with("IN ({keys})", "IN ({keys}) OR card IN ({keys})"),
			`job.yaml:7: lookup.query: expected {keys} once, where the batch's keys go, e.g. WHERE card IN ({keys}); got 2`},
		{"a kind", with("  query:", "  kind: anti\n  query:"),
			`job.yaml:7: lookup.kind: expected inner or left_outer, got "anti"`},
		{"a typo", with("  query:", "  cahce: {size: 10}\n  query:"),
			`job.yaml:7: lookup.cahce: unknown field "cahce" (did you mean "cache"?)`},
		{"a cache without size", with("  query:", "  cache: {ttl: 1m}\n  query:"),
			`job.yaml:7: lookup.cache.size: missing: how many keys' rows to keep, e.g. cache: {size: 10000, ttl: 5m}`},
		{"a cache of none", with("  query:", "  cache: {size: 0}\n  query:"),
			`job.yaml:7: lookup.cache.size: expected a whole number above 0, got 0`},
		{"a negative ttl", with("  query:", "  cache: {size: 5, ttl: -1m}\n  query:"),
			`job.yaml:7: lookup.cache.ttl: must not be negative, got "-1m"`},
		{"no keys a batch", with("  query:", "  batch: {keys: 0}\n  query:"),
			`job.yaml:7: lookup.batch.keys: expected a whole number above 0, got 0`},
		{"no backoff", with("  query:", "  retries: {backoff: 0s}\n  query:"),
			`job.yaml:7: lookup.retries.backoff: expected a duration above 0, such as 100ms`},
		{"no key", without("key: card\n"),
			`job.yaml:1: key: missing: a lookup reads the row of each record's key, e.g. key: card`},
		{"a composite key", with("key: card", "key: [card, shop]"),
			`job.yaml:4: key: a lookup's key is one field; [card, shop] has 2`},
		{"a table output", with("output: enriched.jsonl", "output: {sqlite: {path: r.db, table: r}}"),
			`job.yaml:8: output: a table holds an aggregation's results: give a lookup's output a file or a Kafka topic`},
		{"an avro output", with("output: enriched.jsonl", "output: {kafka: {brokers: [b:9092], topic: t}, format: avro, registry: {url: http://r:8081}}"),
			`job.yaml:8: output.kafka.format: a lookup's records are JSON: leave format out`},
		{"a consumer group", with("source: {file: orders.jsonl}", "source: {kafka: {brokers: [b:9092], topic: orders, group: g}}"),
			`job.yaml:6: lookup: a lookup reads its source in one job: not in a consumer group yet`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "job.yaml", "/d")
			if err == nil || err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}
