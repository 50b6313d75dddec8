package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/freeport"
)

// A connection the server closes (an administrator, a restart) fails the
// commit with a transient error; the commit tried again reconnects and
// succeeds.
func TestPostgresConnectionLost(t *testing.T) {
	d := newPostgresDB(t)
	var logs []string
	o := checkpointed()
	o.Log = func(s string) { logs = append(logs, s) }
	k := d.sink(t, alerts, o)
	ctx := context.Background()
	commit(t, k, 1, pane("line-1", 1, "ON_TIME", 2))
	d.exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'weir' AND datname = current_database()`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := d.rows(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'weir' AND datname = current_database()`)
		if n[0] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sink's connection is still there 10 s after it was terminated")
		}
	}
	k.Write(ctx, []Row{pane("line-1", 2, "LATE", 3)})
	pre, _ := k.PreCommit(ctx, 2)
	err := k.Commit(ctx, 2, pre)
	var ce *connector.Error
	if err == nil || !connector.Retryable(err) || !errors.As(err, &ce) || ce.Op != "commit" || ce.Connector != "alerts-sink" {
		t.Fatalf("commit on a terminated connection: %v (retryable %v)", err, connector.Retryable(err))
	}
	t.Logf("lost: %v", err)
	if err := k.Commit(ctx, 2, pre); err != nil {
		t.Fatalf("commit again: %v", err)
	}
	expect(t, "rows", d.rows(t, alertsQuery), []string{row("line-1", 2, "LATE", "provisional", 3)})
	if !strings.Contains(strings.Join(logs, "\n"), "reconnecting") {
		t.Errorf("logs: %q", logs)
	}
}

// A server that is not there is transient (it may be starting); a role
// without the right to write is permanent.
func TestPostgresErrors(t *testing.T) {
	d := newPostgresDB(t)
	ctx := context.Background()
	port, err := freeport.Find()
	if err != nil {
		t.Fatal(err)
	}
	k := Postgres(fmt.Sprintf("postgres://weir@127.0.0.1:%d/x?sslmode=disable&connect_timeout=5", port), alerts, Options{})
	err = k.Open(ctx, connector.Resume{})
	if err == nil || !connector.Retryable(err) {
		t.Errorf("open with nothing listening: %v (retryable %v)", err, connector.Retryable(err))
	}
	t.Logf("refused: %v", err)
	k.Close()

	d.sink(t, alerts, checkpointed()) // creates the tables
	u, _ := url.Parse(d.dsn)
	reader := "reader_" + strings.TrimPrefix(u.Path, "/") // roles are the cluster's, not the database's
	d.exec(t, `CREATE ROLE `+reader+` LOGIN`)
	d.exec(t, `GRANT SELECT ON alerts, weir_commits TO `+reader)
	dsn := strings.Replace(d.dsn, "weir@", reader+"@", 1)
	r := Postgres(dsn, alerts, checkpointed())
	if err := r.Open(ctx, connector.Resume{}); err != nil {
		t.Fatalf("open as reader: %v", err)
	}
	defer r.Close()
	r.Write(ctx, []Row{pane("line-1", 1, "ON_TIME", 2)})
	pre, _ := r.PreCommit(ctx, 1)
	err = r.Commit(ctx, 1, pre)
	var pe *pgconn.PgError
	if err == nil || connector.Retryable(err) || !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("commit without the right to insert: %v (retryable %v)", err, connector.Retryable(err))
	}
	t.Logf("denied: %v", err)
	// The failed transaction left the connection usable.
	d.exec(t, `GRANT INSERT, UPDATE ON alerts, weir_commits TO `+reader)
	if err := r.Commit(ctx, 1, pre); err != nil {
		t.Fatalf("commit once granted: %v", err)
	}
	expect(t, "rows", d.rows(t, "SELECT line, revision, orders FROM alerts"), []string{"line-1|1|2"})
}

// Another writer holding the database beyond the busy timeout is transient.
func TestSQLiteBusy(t *testing.T) {
	defer func(ms int) { sqliteBusyMillis = ms }(sqliteBusyMillis)
	sqliteBusyMillis = 50
	d := newSQLiteDB(t)
	k := d.sink(t, alerts, checkpointed())
	ctx := context.Background()
	conn, err := d.sqlite(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	k.Write(ctx, []Row{pane("line-1", 1, "ON_TIME", 2)})
	pre, _ := k.PreCommit(ctx, 1)
	err = k.Commit(ctx, 1, pre)
	if err == nil || !connector.Retryable(err) || !strings.Contains(err.Error(), "SQLITE_BUSY") {
		t.Fatalf("commit while another writer holds the database: %v (retryable %v)", err, connector.Retryable(err))
	}
	t.Logf("busy: %v", err)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := k.Commit(ctx, 1, pre); err != nil {
		t.Fatalf("commit again: %v", err)
	}
	expect(t, "rows", d.rows(t, "SELECT line, revision, orders FROM alerts"), []string{"line-1|1|2"})
}

// A database SQLite cannot open is permanent.
func TestSQLiteCannotOpen(t *testing.T) {
	k := SQLite(t.TempDir()+"/no/such/dir/out.db", alerts, Options{})
	err := k.Open(context.Background(), connector.Resume{})
	t.Logf("cannot open: %v", err)
	if err == nil || connector.Retryable(err) {
		t.Errorf("open: %v (retryable %v)", err, connector.Retryable(err))
	}
	k.Close()
}

// proxy forwards TCP connections to addr until cut closes them all.
type proxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, addr string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A connection cut without a word from the server (a network failure) is
// transient too, and the next commit reconnects.
func TestPostgresConnectionCut(t *testing.T) {
	d := newPostgresDB(t)
	u, err := url.Parse(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.l.Addr().String()
	k := Postgres(u.String(), alerts, checkpointed())
	ctx := context.Background()
	if err := k.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	commit(t, k, 1, pane("line-1", 1, "ON_TIME", 2))
	p.cut()
	k.Write(ctx, []Row{pane("line-1", 2, "LATE", 3)})
	pre, _ := k.PreCommit(ctx, 2)
	err = k.Commit(ctx, 2, pre)
	t.Logf("cut: %v", err)
	if err == nil || !connector.Retryable(err) {
		t.Fatalf("commit on a cut connection: %v (retryable %v)", err, connector.Retryable(err))
	}
	if err := k.Commit(ctx, 2, pre); err != nil {
		t.Fatalf("commit again: %v", err)
	}
	expect(t, "rows", d.rows(t, alertsQuery), []string{row("line-1", 2, "LATE", "provisional", 3)})
}
