// Package pgtest starts throwaway PostgreSQL clusters for tests and
// benchmarks, from the server binaries of Debian's postgresql package.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/internal/freeport"
)

// Start starts a throwaway PostgreSQL cluster in dir (an empty
// directory), for tests and benchmarks: initdb with a superuser weir and
// trust authentication, then a server listening on 127.0.0.1 only, at a free
// port, with its unix socket in dir. It is made to be thrown away: fsync and
// synchronous commits are off. It returns once the server accepts
// connections, with the DSN of its database postgres and a function that
// stops the server (the caller removes dir).
//
// initdb and postgres are looked for in PATH, then in
// /usr/lib/postgresql/*/bin. PostgreSQL refuses to run as root: run by
// root, the cluster runs as the user postgres, dir is given to that user,
// and dir's parent directories must let it through (a directory made by
// os.MkdirTemp("", ...) does; t.TempDir() does not).
func Start(dir string) (dsn string, stop func(), err error) {
	bin, err := postgresBin()
	if err != nil {
		return "", nil, err
	}
	attr, err := clusterUser(dir)
	if err != nil {
		return "", nil, err
	}
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
		cmd.SysProcAttr = attr
		cmd.Dir = dir
		return cmd
	}
	data := filepath.Join(dir, "data")
	if out, err := command("initdb", "-D", data, "-U", "weir", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("initdb %s: %v: %s", data, err, strings.TrimSpace(string(out)))
	}
	// Another port if another process took its first (freeport.Start).
	err = freeport.Start(func(port int) error {
		dsn, stop, err = serve(command, dir, data, port)
		return err
	})
	return dsn, stop, err
}

// serve starts postgres on the cluster data, listening on port; an error
// that is syscall.EADDRINUSE when another process has it.
func serve(command func(string, ...string) *exec.Cmd, dir, data string, port int) (dsn string, stop func(), err error) {
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	defer logf.Close()
	srv := command("postgres", "-D", data, "-k", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=50")
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		return "", nil, fmt.Errorf("starting postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Process.Signal(syscall.SIGINT) // fast shutdown
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				srv.Process.Kill()
				<-exited
			}
		})
	}
	dsn = fmt.Sprintf("postgres://weir@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return dsn, stop, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			if strings.Contains(string(log), "Address already in use") {
				return "", nil, fmt.Errorf("postgres on port %d: %w", port, syscall.EADDRINUSE)
			}
			return "", nil, fmt.Errorf("postgres exited: %s", strings.TrimSpace(string(log)))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logPath)
			return "", nil, fmt.Errorf("postgres did not accept connections within 60s (%v): %s", err, strings.TrimSpace(string(log)))
		}
	}
}

// postgresBin is the directory of initdb and postgres.
func postgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return majorOf(found[i]) < majorOf(found[j]) })
	for i := len(found) - 1; i >= 0; i-- {
		dir := filepath.Dir(found[i])
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL is not installed: no initdb and postgres in PATH or in /usr/lib/postgresql/*/bin (install the server, e.g. apt-get install postgresql)")
}

// majorOf is the version in /usr/lib/postgresql/<version>/bin/initdb.
func majorOf(path string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(path))), 64)
	return v
}

// AddUser makes a login role user with password, authenticated by
// password (SCRAM) when it connects over TCP, and gives it the database
// (it owns it, and may create tables in it). dsn is the cluster's, as
// Start returned it; dir the directory given to Start. It returns once a
// wrong password is refused: the rule is in force.
func AddUser(dsn, dir, database, user, password string) error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %q LOGIN PASSWORD %s`, user, quote(password)),
		fmt.Sprintf(`ALTER DATABASE %q OWNER TO %q`, database, user),
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	hba := filepath.Join(dir, "data", "pg_hba.conf")
	old, err := os.ReadFile(hba)
	if err != nil {
		return err
	}
	rule := fmt.Sprintf("host all %s 127.0.0.1/32 scram-sha-256\n", user)
	if err := os.WriteFile(hba, append([]byte(rule), old...), 0o600); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	cfg.User, cfg.Password, cfg.Database = user, password+"-wrong", database
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		wrong, err := pgx.ConnectConfig(cctx, cfg)
		cancel()
		if err != nil {
			return nil
		}
		wrong.Close(ctx)
		if time.Now().After(deadline) {
			return errors.New("a wrong password is still accepted 30 s after the server reloaded pg_hba.conf")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
