// Command testtimes reads the events of go test -json on standard input and
// prints what go test prints without -json (each package's ok or FAIL line,
// and the output of the tests that failed), then every package's test time,
// the slowest first. It exits 1 when a test or a build failed, or when a
// package's tests took longer than -limit: a package that close to go
// test's own ten-minute limit on a quiet machine fails it on a busy one.
//
//	go test -json ./... | go run ./.ci/testtimes -limit 6m
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of go test -json (see go doc test2json).
type event struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

func main() {
	limit := flag.Duration("limit", 6*time.Minute, "the longest a package's tests may take")
	flag.Parse()
	os.Exit(report(os.Stdin, os.Stdout, *limit))
}

type pkgTime struct {
	name    string
	elapsed float64
	result  string
}

// report reads the events from r and writes the report to w; it returns the
// exit status.
func report(r io.Reader, w io.Writer, limit time.Duration) int {
	out := map[[2]string][]string{} // the output of a running test, by package and test
	var times []pkgTime
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not an event: go's own message
			continue
		}
		id := [2]string{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Test != "" && e.Action == "output":
			out[id] = append(out[id], e.Output)
		case e.Test != "" && e.Action == "fail":
			// Each test's own output, a subtest's too: go test -json gives
			// a subtest's lines to the subtest alone, and its parent's
			// output holds only the parent's lines.
			fmt.Fprint(w, strings.Join(out[id], ""))
			delete(out, id)
		case e.Test != "" && (e.Action == "pass" || e.Action == "skip"):
			delete(out, id)
		case e.Test == "" && e.Action == "output":
			// go test without -json prints neither the tests' progress
			// nor a passing package's PASS.
			if strings.HasPrefix(e.Output, "=== ") || strings.HasPrefix(e.Output, "--- ") || e.Output == "PASS\n" {
				break
			}
			fmt.Fprint(w, e.Output)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			if e.Action == "fail" {
				failed = true
				// A package that panicked or timed out: its tests that
				// had not ended say what they were doing.
				for k, lines := range out {
					if k[0] == e.Package {
						fmt.Fprint(w, strings.Join(lines, ""))
						delete(out, k)
					}
				}
			}
			if e.Action != "skip" { // skip: no test files
				times = append(times, pkgTime{e.Package, e.Elapsed, e.Action})
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "testtimes:", err)
		return 1
	}
	sort.SliceStable(times, func(a, b int) bool { return times[a].elapsed > times[b].elapsed })
	fmt.Fprintf(w, "\nTest time per package (the limit is %s):\n", limit)
	over := 0
	for _, p := range times {
		mark := ""
		if time.Duration(p.elapsed*float64(time.Second)) > limit {
			mark = "  over the limit"
			over++
		} else if p.result == "fail" {
			mark = "  FAIL"
		}
		fmt.Fprintf(w, "%8.1fs  %s%s\n", p.elapsed, p.name, mark)
	}
	if over > 0 {
		fmt.Fprintf(w, "testtimes: %d packages took longer than %s\n", over, limit)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}
