// Package table writes windowed results ("panes") into SQL tables, so that a
// table always holds the latest result of every key and window however often
// the job restarts, retries or replays: SQLite (modernc.org/sqlite, a file)
// and PostgreSQL (github.com/jackc/pgx/v5).
//
// A Sink is a connector.Sink[Row]. What it guarantees:
//
//   - Highest revision wins. In Accumulating and Retracting mode the table
//     has one row per key and window (its primary key), and a pane is an
//     upsert guarded by (version, revision): it replaces the row only when
//     (version, revision) is greater than the row's. Receiving revision 1
//     then 2 leaves 2; receiving 2 again, or a delayed 1, changes nothing.
//     A new metric-definition version replaces the row whatever its revision.
//     Within one commit, panes of the same row are coalesced first, so that
//     each row is written once.
//   - Tombstones, never deletes. A retraction that no later pane of the same
//     row follows in the same commit (a session window merged away) becomes a
//     tombstone: the row gets status "retracted", keeps the retraction's
//     revision and the withdrawn values, and replaces a row of the same or a
//     lower revision. A stale pane of that revision or a lower one never
//     brings the row back; the next revision does. Rows are never deleted: a
//     deleted row would let a delayed revision 1 in again.
//   - Delta ids. In Discarding mode the table is an append log of deltas, one
//     row each, with a delta_id column under a UNIQUE constraint: a hex
//     SHA-256 of the job, the version, the key values, the window, the
//     revision and the retract flag. A delta written again (a replay after a
//     restore) is ON CONFLICT DO NOTHING, so summing the deltas of a window
//     gives its value once: +2 then +1 is 3, never 4.
//   - Commit markers. With Options.Checkpointed the sink is exactly once:
//     rows wait in memory until the checkpoint barrier, travel in the
//     checkpoint (PreCommit) and are written by Commit in one transaction
//     with a marker row (sink, checkpoint) in the table weir_commits. A
//     commit run again after a restart finds its marker and does nothing.
//     The marker also records the run that pre-committed the rows, so that a
//     job started afresh, whose checkpoint numbers begin at 1 again, is not
//     mistaken for a re-run of the job before it. Without checkpoints the
//     sink is idempotent by the revision guard (and delta ids) alone, and
//     writes no markers.
//   - Retries. Errors say what failed and are classified for the engine's
//     retry: a lost or refused connection, a server shutting down, a
//     serialization failure or a deadlock (SQLSTATE class 08, 57P01 to
//     57P03, 40001, 40P01, 53300) and SQLite's BUSY and LOCKED are
//     transient, and the next call reconnects; everything else the database
//     refuses (permissions, a missing table or column, a full disk, a
//     read-only database, a value the column cannot hold) is permanent and
//     stops the job.
//
// When the table exists, Open checks it before the job starts: every column
// the sink writes must be there with a type that can hold its values, and the
// primary key (or, in Discarding mode, the unique delta_id) must be the
// expected one. Other columns are left alone.
//
// The table's columns are the key columns and the value columns (as the
// Schema names them), then window_start, window_end, revision, timing,
// final, status, version and updated_at (and delta_id in Discarding mode);
// its primary key is (key columns..., window_start, window_end). In SQLite
// each Numeric value column c is followed by c_exact (ExactColumn), TEXT,
// its exact value: SQLite's NUMERIC keeps 15 significant digits (see
// Numeric). A table made without them (by an older weir) gets them when the
// sink opens it, by ALTER TABLE ... ADD COLUMN, which the sink logs. The commit
// markers are rows (sink, checkpoint, run, committed_at) of weir_commits,
// primary key (sink, checkpoint); several sinks may share it.
//
// Window bounds and updated_at are timestamptz in PostgreSQL and RFC 3339
// text with milliseconds in SQLite ("2026-09-07T12:00:01.000Z"); a global
// window is stored as 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z.
package table
