package job

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
)

const compositeJob = `name: views
source: {file: input.jsonl}
time: {field: ts}
key: [user, page]
window: {tumbling: 1m}
aggregates: {views: count, spent: sum(amount)}
quarantine: quarantine.jsonl
`

// A composite key counts each combination of its fields' values apart,
// each value keeping its type (page 1 and page "1" are two keys, as they
// are for a key of one field). A result holds the key as a JSON array and
// each of its fields beside it; a line that lacks one of them is
// quarantined naming it.
func TestCompositeKey(t *testing.T) {
	const t0 = 1_780_000_000_000
	in := lines(
		fmt.Sprintf(`{"user":"ann","page":1,"amount":2,"ts":%d}`, t0),
		fmt.Sprintf(`{"user":"ann","page":"1","amount":3,"ts":%d}`, t0+1),
		fmt.Sprintf(`{"user":"ann","page":1.0,"amount":4,"ts":%d}`, t0+2),
		fmt.Sprintf(`{"user":"bob","page":1,"amount":5,"ts":%d}`, t0+3),
		fmt.Sprintf(`{"user":"ann","amount":6,"ts":%d}`, t0+4),
		fmt.Sprintf(`{"user":"ann","page":{"id":1},"amount":7,"ts":%d}`, t0+5),
		fmt.Sprintf(`{"user":"ann","page":"a,\"b\"]","amount":8,"ts":%d}`, t0+6),
	)
	dir, sum := runJob(t, compositeJob+"output: results.jsonl\n", in)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n") {
		got = append(got, l[:strings.Index(l, `,"window_start"`)]+" "+l[strings.Index(l, `"views"`):len(l)-1])
	}
	want := []string{
		`{"key":["ann",1],"user":"ann","page":1 "views":2,"spent":6`,
		`{"key":["ann","1"],"user":"ann","page":"1" "views":1,"spent":3`,
		`{"key":["bob",1],"user":"bob","page":1 "views":1,"spent":5`,
		`{"key":["ann","a,\"b\"]"],"user":"ann","page":"a,\"b\"]" "views":1,"spent":8`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("results:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sum.Accepted != 5 || sum.Quarantined != 2 || !sum.Balanced() {
		t.Errorf("accepted %d, quarantined %d", sum.Accepted, sum.Quarantined)
	}
	q := read(t, dir, "quarantine.jsonl")
	for _, w := range []string{
		`"reason":"no_key","line":5,"detail":"page is missing"`,
		`"reason":"no_key","line":6,"detail":"page is not a string, number or boolean"`,
	} {
		if !strings.Contains(q, w) {
			t.Errorf("quarantine lacks %s:\n%s", w, q)
		}
	}
}

// In a table, a composite key is a column per field, together the primary
// key: rows of keys of two types stay two rows.
func TestCompositeKeyTable(t *testing.T) {
	const t0 = 1_780_000_000_000
	in := lines(
		fmt.Sprintf(`{"user":"ann","page":1,"amount":2,"ts":%d}`, t0),
		fmt.Sprintf(`{"user":"ann","page":"1","amount":3,"ts":%d}`, t0+1),
		fmt.Sprintf(`{"user":"ann","page":1,"amount":4,"ts":%d}`, t0+2),
		fmt.Sprintf(`{"user":"true","page":true,"amount":5,"ts":%d}`, t0+3),
	)
	dir, _ := runJob(t, compositeJob+"output: {sqlite: {path: results.db, table: views}}\n", in)
	db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT user, page, views, spent FROM views ORDER BY user, page")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var u, p string
		var n, s int
		if err := rows.Scan(&u, &p, &n, &s); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%s=%d,%d", u, p, n, s))
	}
	if want := `"true"/true=1,5 ann/"1"=1,3 ann/1=2,6`; strings.Join(got, " ") != want {
		t.Errorf("rows %s\nwant %s", strings.Join(got, " "), want)
	}
	var pk int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('views') WHERE pk > 0 AND name IN ('user', 'page', 'window_start')`).Scan(&pk); err != nil || pk != 3 {
		t.Errorf("primary key columns: %d (%v)", pk, err)
	}
}

func TestCompositeKeyErrors(t *testing.T) {
	base := strings.Replace(minimal, "window:", "key: KEY\nwindow:", 1)
	for _, tt := range []struct{ key, extra, want string }{
		{"[]", "", `job.yaml:4: key: an empty list: name the key's fields, or leave key out for one global key`},
		{"[user, user]", "", `job.yaml:4: key: user is in the key twice`},
		{"[user, {page: 1}]", "", `job.yaml:4: key: expected a list of field names: key: [user, page]`},
		{"{user: 1}", "", `job.yaml:4: key: expected a field name, or a list of them: key: [user, page]`},
		{"[user, status]", "", `job.yaml:4: key: "status" is a field of every result, and a composite key's fields are written beside it: rename the input field with fields:`},
		{"[user, n]", "", `job.yaml:6: aggregates.n: is also a field of the composite key, which every result holds: rename the aggregate`},
		{"[user, a.b, a_b]", "output: {sqlite: {path: r.db, table: t}}\n", `job.yaml:4: key: two of the key's fields are written to table t as the column "a_b": rename one with fields:`},
		{"[user, page]", "output: {sqlite: {path: r.db, table: t, key_column: k}}\n", `job.yaml:7: output.sqlite.key_column: a composite key's columns are named by its fields: leave key_column out`},
	} {
		y := strings.Replace(base, "KEY", tt.key, 1)
		if tt.extra != "" {
			y = strings.Replace(y, "output: results.jsonl\n", tt.extra, 1)
		}
		_, err := jobfile.Parse([]byte(y), "job.yaml", "/d")
		if err == nil || err.Error() != tt.want {
			t.Errorf("key: %s\ngot  %v\nwant %s", tt.key, err, tt.want)
		}
	}
	// One field in a list is a key of one field.
	j, err := jobfile.Parse([]byte(strings.Replace(base, "KEY", "[user]", 1)), "job.yaml", "/d")
	if err != nil || j.Key.String() != "user" || j.KeyParts != nil {
		t.Errorf("key: [user]: %v %v %v", err, j.Key, j.KeyParts)
	}
}
