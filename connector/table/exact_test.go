package table

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
)

var totals = Schema{Table: "totals", Keys: []Column{{"shop", Text}}, Values: []Column{{"spent", Numeric}, {"orders", Integer}}}

// total is revision rev of window W for shop, with the sum spent.
func total(shop string, rev int64, spent any) Row {
	r := pane(shop, rev, "ON_TIME", rev)
	r.Key, r.Values = []any{shop}, []any{spent, rev}
	return r
}

// centsTotal is the exact sum of n amounts of money: 98,765,432,109.01,
// .02, ... (the cents going round 1 to 99), as a job sums them.
func centsTotal(n int64) Decimal {
	var sum int64
	for i := range n {
		sum += 9_876_543_210_900 + i%99 + 1
	}
	return Decimal{sum, 2}
}

// Decimal sums are stored exactly in both databases, and read back exactly:
// beyond the 15 significant digits SQLite's NUMERIC keeps, from the exact
// companion column, while the number column still orders and compares as a
// number.
func TestExactDecimals(t *testing.T) {
	many := centsTotal(100_000)
	if s := many.String(); s != "9876543210949995.55" {
		t.Fatalf("the cents' total is %s", s) // 18 significant digits
	}
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, totals, checkpointed())
		commit(t, k, 1, total("a", 1, Decimal{1234567890123456789, 2}), total("b", 1, many), total("c", 1, Decimal{-5, 2}),
			total("d", 1, int64(9223372036854775807)), total("e", 1, 2.5), total("f", 1, nil), total("g", 1, Decimal{47350, 2}))
		got, err := k.Read(context.Background(), w0, w1)
		if err != nil {
			t.Fatal(err)
		}
		var read []string
		for _, r := range got {
			read = append(read, r.Key[0]+"|"+nullText(r.Values[0].String, r.Values[0].Valid)+"|"+r.Values[1].String)
		}
		expect(t, "read back", read, []string{"a|12345678901234567.89|1", "b|9876543210949995.55|1", "c|-0.05|1",
			"d|9223372036854775807|1", "e|2.5|1", "f|NULL|1", "g|473.50|1"})

		exact := "SELECT shop, spent::text FROM totals ORDER BY shop"
		if d.kind == "sqlite" {
			exact = "SELECT shop, spent_exact FROM totals ORDER BY shop"
		}
		expect(t, "in SQL", d.rows(t, exact), []string{"a|12345678901234567.89", "b|9876543210949995.55", "c|-0.05",
			"d|9223372036854775807", "e|2.5", "f|NULL", "g|473.50"})
		expect(t, "compared and ordered as numbers", d.rows(t, "SELECT shop FROM totals WHERE spent > 100 ORDER BY spent DESC"),
			[]string{"d", "a", "b", "g"})
	})
}

func nullText(s string, valid bool) string {
	if !valid {
		return "NULL"
	}
	return s
}

// In SQLite, the companion is what is read only while the number column
// holds its number: a value changed by hand in the number column alone is
// read as the number column has it.
func TestExactCompanionChangedByHand(t *testing.T) {
	d := newSQLiteDB(t)
	k := d.sink(t, totals, checkpointed())
	commit(t, k, 1, total("a", 1, Decimal{1234567890123456789, 2}), total("b", 1, Decimal{4735, 1}))
	d.exec(t, "UPDATE totals SET spent = 99.5 WHERE shop = 'b'")
	got, err := k.Read(context.Background(), w0, w1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Values[0].String != "12345678901234567.89" || got[1].Values[0].String != "99.5" {
		t.Errorf("read %+v", got)
	}
}

// A table an older weir made, without the exact columns, keeps working: the
// sink adds them (and says so), the rows already there are read from the
// number column, the new ones exactly.
func TestExactColumnAdded(t *testing.T) {
	d := newSQLiteDB(t)
	d.exec(t, `CREATE TABLE totals (shop TEXT NOT NULL, spent NUMERIC, orders INTEGER, window_start TEXT NOT NULL, window_end TEXT NOT NULL,
		revision INTEGER NOT NULL, timing TEXT NOT NULL, final INTEGER NOT NULL, status TEXT NOT NULL, version INTEGER NOT NULL,
		updated_at TEXT NOT NULL, reason TEXT, PRIMARY KEY (shop, window_start, window_end)) WITHOUT ROWID`)
	d.exec(t, `INSERT INTO totals VALUES ('old', '12345678901234567.89', 1, '2026-09-07T12:00:00.000Z', '2026-09-07T12:01:00.000Z',
		1, 'ON_TIME', 0, 'provisional', 1, '2026-09-07T12:01:01.000Z', NULL)`)
	var log []string
	o := checkpointed()
	o.Log = func(s string) { log = append(log, s) }
	k := d.sink(t, totals, o)
	want := "alerts-sink: added column spent_exact to table totals in " + d.path +
		": it keeps the exact values of spent, whose NUMERIC keeps 15 significant digits (the rows written before have none, and read as spent holds them)"
	expect(t, "log", log[:1], []string{want})
	commit(t, k, 1, total("new", 1, Decimal{1234567890123456789, 2}))
	got, err := k.Read(context.Background(), w0, w1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key[0] != "new" || got[0].Values[0].String != "12345678901234567.89" ||
		got[1].Key[0] != "old" || got[1].Values[0].String != "12345678901234568" {
		t.Errorf("read %+v", got)
	}
	// Opened again, it has nothing to add.
	log = nil
	again := d.sink(t, totals, o)
	again.Close()
	expect(t, "log when opened again", log, nil)
}

// A table that differs otherwise is refused as it is, and not altered.
func TestExactColumnNotAddedToAWrongTable(t *testing.T) {
	d := newSQLiteDB(t)
	d.exec(t, `CREATE TABLE totals (shop TEXT NOT NULL, spent NUMERIC, window_start TEXT NOT NULL, window_end TEXT NOT NULL,
		revision INTEGER, timing TEXT, final INTEGER, status TEXT, version INTEGER, updated_at TEXT, reason TEXT, PRIMARY KEY (shop, window_start, window_end))`)
	k := d.newSink(totals, Options{})
	err := k.Open(context.Background(), connector.Resume{})
	k.Close()
	if want := `table totals: open: table totals: no column "orders"`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	expect(t, "columns", d.rows(t, "SELECT count(*) FROM pragma_table_info('totals') WHERE name = 'spent_exact'"), []string{"0"})
}

// Corrections write the exact value too.
func TestExactCorrections(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, totals, checkpointed())
		commit(t, k, 1, total("a", 1, Decimal{5, 0}))
		got, err := k.Read(context.Background(), w0, w1)
		if err != nil {
			t.Fatal(err)
		}
		base := got[0]
		fix := Correction{Base: &base, Key: []any{"a"}, WindowStart: w0, WindowEnd: w1, Values: []any{Decimal{1234567890123456789, 2}, int64(2)},
			Revision: 2, Version: 1, Timing: "LATE", Reason: "ledger", At: w1}
		fresh := Correction{Key: []any{"b"}, WindowStart: w0, WindowEnd: w1, Values: []any{Decimal{-9223372036854775807, 3}, int64(1)},
			Revision: 1, Version: 1, Timing: "LATE", Reason: "ledger", At: w1}
		if applied, err := k.Correct(context.Background(), []Correction{fix, fresh}); err != nil || len(applied) != 2 || !applied[0] || !applied[1] {
			t.Fatalf("applied %v, %v", applied, err)
		}
		got, err = k.Read(context.Background(), w0, w1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Values[0].String != "12345678901234567.89" || got[1].Values[0].String != "-9223372036854775.807" {
			t.Errorf("read %+v", got)
		}
		if d.kind == "sqlite" {
			expect(t, "exact column", d.rows(t, "SELECT spent_exact FROM totals ORDER BY shop"), []string{"12345678901234567.89", "-9223372036854775.807"})
		}
		bad := fix
		bad.Values = []any{"x", int64(2)}
		if _, err := k.Correct(context.Background(), []Correction{bad}); err == nil || !strings.HasSuffix(err.Error(), `a correction: column "spent" is numeric and cannot hold string x`) {
			t.Errorf("a correction of the wrong type: %v", err)
		}
	})
}

// A value column named as another's exact companion is refused in SQLite,
// where the companion exists; PostgreSQL has none.
func TestExactColumnNameTaken(t *testing.T) {
	s := Schema{Table: "totals", Values: []Column{{"spent", Numeric}, {"spent_exact", Integer}}}
	both(t, func(t *testing.T, d *testDB) {
		k := d.newSink(s, Options{})
		err := k.Open(context.Background(), connector.Resume{})
		k.Close()
		want := `table totals: open: table totals: column "spent_exact" takes the name of the column that keeps the exact values of "spent"`
		if d.kind == "postgres" {
			if err != nil {
				t.Errorf("postgres: %v", err)
			}
			return
		}
		if err == nil || err.Error() != want || connector.Retryable(err) {
			t.Errorf("got %v, want %s", err, fmt.Sprint(want))
		}
	})
}

// A table made before an aggregate was added to the job gets its column
// (and in SQLite the exact companion of a Numeric one) when the sink is told
// the aggregate is new, in the one place that adds missing columns: the
// rows already there hold NULL in it, and the sink says what it added. A
// column missing that the sink was not told of is an error, and nothing is
// added.
func TestAddedAggregateColumn(t *testing.T) {
	before := Schema{Table: "totals", Keys: []Column{{"shop", Text}}, Values: []Column{{"orders", Integer}}}
	after := Schema{Table: "totals", Keys: []Column{{"shop", Text}}, Values: []Column{{"orders", Integer}, {"spent", Numeric}}}
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, before, checkpointed())
		r := pane("old", 1, "ON_TIME", 1)
		r.Key, r.Values = []any{"old"}, []any{int64(1)}
		commit(t, k, 1, r)
		k.Close()

		err := d.newSink(after, checkpointed()).Open(context.Background(), connector.Resume{})
		if err == nil || err.Error() != `alerts-sink: open: table totals: no column "spent"` {
			t.Fatalf("open without AddColumns: %v", err)
		}
		var log []string
		o := checkpointed()
		o.AddColumns = []string{"spent"}
		o.Log = func(s string) { log = append(log, s) }
		k = d.sink(t, after, o)
		where, want := "", []string{"alerts-sink: added column spent to table totals: the aggregate spent was added to the job since its checkpoint (the rows written before have none)"}
		if d.kind == "sqlite" {
			where = " in " + d.path
			want = []string{"alerts-sink: added column spent to table totals" + where + ": the aggregate spent was added to the job since its checkpoint (the rows written before have none)",
				"alerts-sink: added column spent_exact to table totals" + where + ": the aggregate spent was added to the job since its checkpoint (the rows written before have none)"}
		}
		expect(t, "log", log, want)
		r = pane("new", 1, "ON_TIME", 1)
		r.Key, r.Values = []any{"new"}, []any{int64(2), Decimal{1234567890123456789, 2}}
		commit(t, k, 2, r)
		got, err := k.Read(context.Background(), w0, w1)
		if err != nil {
			t.Fatal(err)
		}
		var read []string
		for _, r := range got {
			read = append(read, r.Key[0]+"|"+r.Values[0].String+"|"+nullText(r.Values[1].String, r.Values[1].Valid))
		}
		expect(t, "read back", read, []string{"new|2|12345678901234567.89", "old|1|NULL"})
	})
}
