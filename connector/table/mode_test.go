package table

import "testing"

// Every row says the mode its values were computed in, so that a reader
// cannot add up totals as if they were deltas.
func TestModeInEveryRow(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		commit(t, d.sink(t, alerts, checkpointed()), 1, pane("line-1", 1, "ON_TIME", 2))
		commit(t, d.sink(t, sessions, Options{SinkName: "sessions-sink"}), 0, pane("line-2", 1, "ON_TIME", 3))
		commit(t, d.sink(t, deltas, checkpointed()), 1, pane("line-1", 1, "ON_TIME", 2), pane("line-1", 2, "LATE", 1))
		expect(t, "alerts", d.rows(t, "SELECT line, mode FROM alerts ORDER BY line"),
			[]string{"line-1|accumulating", "line-2|retracting"})
		expect(t, "deltas", d.rows(t, "SELECT revision, mode FROM deltas ORDER BY revision"),
			[]string{"1|discarding", "2|discarding"})
	})
}

// A table made by a weir that wrote no mode keeps working: the sink adds
// the column (the rows before have none) and says so, once.
func TestModeColumnAdded(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		ts := "TEXT"
		if d.kind == "postgres" {
			ts = "TIMESTAMPTZ"
		}
		d.exec(t, `CREATE TABLE alerts (line TEXT NOT NULL, orders BIGINT, window_start `+ts+` NOT NULL, window_end `+ts+` NOT NULL,
			revision BIGINT NOT NULL, timing TEXT NOT NULL, final BOOLEAN NOT NULL, status TEXT NOT NULL, version BIGINT NOT NULL,
			updated_at `+ts+` NOT NULL, reason TEXT, PRIMARY KEY (line, window_start, window_end))`)
		d.exec(t, `INSERT INTO alerts VALUES ('old', 1, '2026-09-07T12:00:00.000Z', '2026-09-07T12:01:00.000Z',
			1, 'ON_TIME', true, 'closed', 1, '2026-09-07T12:01:01.000Z', NULL)`)
		var log []string
		o := checkpointed()
		o.Log = func(s string) { log = append(log, s) }
		k := d.sink(t, alerts, o)
		where := ""
		if d.kind == "sqlite" {
			where = " in " + d.path
		}
		expect(t, "log", log[:1], []string{"alerts-sink: added column mode to table alerts" + where +
			": it says of each row whether its values are totals or deltas (the rows written before have none)"})
		commit(t, k, 1, pane("new", 1, "ON_TIME", 2))
		expect(t, "rows", d.rows(t, "SELECT line, coalesce(mode, 'none') FROM alerts ORDER BY line"),
			[]string{"new|accumulating", "old|none"})
		log = nil
		d.sink(t, alerts, o).Close()
		expect(t, "log when opened again", log, nil)
	})
}
