//go:build linux

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

// Clients of the console cannot stop the job: 5,000 idle keep-alive
// connections to the console of a job run with 4,096 file descriptors (a
// common service limit, set with prlimit) while it checkpoints every 50 ms.
// Every checkpoint succeeds and a stop takes its savepoint: exit 0.
func TestIdleConnectionsDoNotStopTheJob(t *testing.T) {
	const conns = 5000
	dir := t.TempDir()
	port := clitest.FreePort(t)
	job := fmt.Sprintf(`name: idle
source: {file: input.jsonl, follow: true}
time: {field: ts}
key: k
window: {tumbling: 1s}
aggregates: {n: count}
output: results.jsonl
checkpoint: {dir: ck, interval: 50ms, keep: 2, tolerable_failures: 3}
http: 127.0.0.1:%d
`, port)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	in, err := os.Create(filepath.Join(dir, "input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	addLines := func(n int) {
		now := time.Now().UTC()
		for i := range n {
			fmt.Fprintf(in, `{"k":"k%d","ts":"%s"}`+"\n", i%7, now.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		}
	}
	addLines(100)
	cmd := exec.Command("prlimit", "--nofile=4096:4096", clitest.Bin, "run", "job.yaml")
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("prlimit (util-linux) runs weir with a descriptor limit: %v", err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console did not come up: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", cmd.Process.Pid))
	if !strings.Contains(string(limits), "Max open files            4096                 4096") {
		t.Fatalf("weir does not run with 4096 descriptors:\n%s", limits)
	}

	// 5,000 connections, each asking once and keeping its connection open.
	start := time.Now()
	var open []net.Conn
	var mu sync.Mutex
	var established atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 3*time.Second)
			if err != nil {
				return
			}
			established.Add(1)
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	// The console serves 1,024 of them (a quarter of its descriptors);
	// the rest wait in the kernel's queue of the listening socket
	// (net.core.somaxconn).
	queue := 4096
	if b, err := os.ReadFile("/proc/sys/net/core/somaxconn"); err == nil {
		fmt.Sscan(string(b), &queue)
	}
	t.Logf("%d of %d connections established in %s (listen queue %d)", established.Load(), conns, time.Since(start).Round(time.Millisecond), queue)
	if want := min(conns, 1024+queue); established.Load() < int64(want) {
		t.Fatalf("only %d connections established, want %d", established.Load(), want)
	}

	// The job goes on checkpointing while they are open.
	first := newestCheckpoint(t, filepath.Join(dir, "ck"))
	for newestCheckpoint(t, filepath.Join(dir, "ck")) < first+20 {
		addLines(10)
		select {
		case err := <-exited:
			t.Fatalf("the job stopped while the connections were open: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("no 20 checkpoints after checkpoint %d within a minute:\n%s", first, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("weir run: %v\n%s", err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "too many open files") || strings.Contains(s, "failed") || !strings.Contains(s, "savepoint") {
		t.Errorf("standard error:\n%s", s)
	}
	t.Logf("checkpoints %d to %d with the connections open; %s in all", first, first+20, time.Since(start).Round(time.Millisecond))
}

// newestCheckpoint is the id of the newest checkpoint in dir (0: none).
func newestCheckpoint(t *testing.T, dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		var id int
		if _, err := fmt.Sscanf(e.Name(), "chk-%d", &id); err == nil && id > n {
			n = id
		}
	}
	return n
}
