package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A running job's console address, for weir status: weir run --http
// records where the console of a job file listens, in a file of the user's
// own named by the job file's absolute path, and removes it when it ends.

// addressFile is where the console address of the job file is recorded.
func addressFile(jobFile string) (string, error) {
	abs, err := filepath.Abs(jobFile)
	if err != nil {
		return "", err
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, fmt.Sprintf("weir-%d", os.Getuid()))
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".http"), nil
}

// recordAddress records that the job file's console is on addr, and
// returns the function that removes the record (if it is still this
// process's).
func recordAddress(jobFile string, addr net.Addr) func() {
	path, err := addressFile(jobFile)
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return func() {}
	}
	mine := fmt.Sprintf("%s %d\n", addr, os.Getpid())
	if os.WriteFile(path, []byte(mine), 0o600) != nil {
		return func() {}
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && string(b) == mine {
			os.Remove(path)
		}
	}
}

// recordedAddress is the console address a running weir run recorded for
// the job file, or "".
func recordedAddress(jobFile string) string {
	path, err := addressFile(jobFile)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	addr, pid, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if _, err := strconv.Atoi(pid); !ok || err != nil {
		return ""
	}
	return addr
}
