package main

import (
	"strings"
	"testing"
	"time"
)

// The events of a run with a package that passed, one whose test failed,
// one without tests and a line that is not an event.
const run = `go: downloading example.com/m v1.0.0
{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestOK"}
{"Action":"output","Package":"a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"a","Test":"TestOK","Elapsed":0}
{"Action":"output","Package":"a","Output":"ok  \ta\t12.5s\n"}
{"Action":"pass","Package":"a","Elapsed":12.5}
{"Action":"run","Package":"b","Test":"TestBad"}
{"Action":"output","Package":"b","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"b","Test":"TestBad","Output":"    b_test.go:9: wrong\n"}
{"Action":"output","Package":"b","Test":"TestBad","Output":"--- FAIL: TestBad (0.10s)\n"}
{"Action":"fail","Package":"b","Test":"TestBad","Elapsed":0.1}
{"Action":"output","Package":"b","Output":"FAIL\n"}
{"Action":"output","Package":"b","Output":"FAIL\tb\t400.2s\n"}
{"Action":"fail","Package":"b","Elapsed":400.2}
{"Action":"output","Package":"c","Output":"?   \tc\t[no test files]\n"}
{"Action":"skip","Package":"c"}
`

func TestReport(t *testing.T) {
	var out strings.Builder
	code := report(strings.NewReader(run), &out, 6*time.Minute)
	want := `go: downloading example.com/m v1.0.0
ok  	a	12.5s
=== RUN   TestBad
    b_test.go:9: wrong
--- FAIL: TestBad (0.10s)
FAIL
FAIL	b	400.2s
?   	c	[no test files]

Test time per package (the limit is 6m0s):
   400.2s  b  over the limit
    12.5s  a
testtimes: 1 packages took longer than 6m0s
`
	if code != 1 || out.String() != want {
		t.Errorf("exit %d, printed\n%s\nwant\n%s", code, out.String(), want)
	}
	// Within the limit, a failed test still fails the run.
	out.Reset()
	if code := report(strings.NewReader(run), &out, 10*time.Minute); code != 1 || !strings.Contains(out.String(), "   400.2s  b  FAIL\n") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
	// All passed, within the limit.
	out.Reset()
	ok := strings.Split(run, `{"Action":"run","Package":"b"`)[0]
	if code := report(strings.NewReader(ok), &out, 6*time.Minute); code != 0 {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
}

// A package that timed out: the test that was running says where.
func TestReportTimeout(t *testing.T) {
	const timeout = `{"Action":"run","Package":"a","Test":"TestSlow"}
{"Action":"output","Package":"a","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"a","Output":"panic: test timed out after 10m0s\n"}
{"Action":"output","Package":"a","Output":"FAIL\ta\t600.1s\n"}
{"Action":"fail","Package":"a","Elapsed":600.1}
`
	var out strings.Builder
	code := report(strings.NewReader(timeout), &out, 6*time.Minute)
	if code != 1 || !strings.Contains(out.String(), "panic: test timed out after 10m0s\nFAIL\ta\t600.1s\n=== RUN   TestSlow\n") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
}

// A subtest that failed: its own lines are printed, which go test -json
// gives to the subtest alone, not to its parent.
func TestReportSubtest(t *testing.T) {
	const sub = `{"Action":"run","Package":"a","Test":"TestBook"}
{"Action":"output","Package":"a","Test":"TestBook","Output":"=== RUN   TestBook\n"}
{"Action":"run","Package":"a","Test":"TestBook/one"}
{"Action":"output","Package":"a","Test":"TestBook/one","Output":"=== RUN   TestBook/one\n"}
{"Action":"output","Package":"a","Test":"TestBook/one","Output":"    a_test.go:7: one: out.jsonl differs\n"}
{"Action":"output","Package":"a","Test":"TestBook/one","Output":"--- FAIL: TestBook/one (0.20s)\n"}
{"Action":"fail","Package":"a","Test":"TestBook/one","Elapsed":0.2}
{"Action":"output","Package":"a","Test":"TestBook","Output":"--- FAIL: TestBook (0.30s)\n"}
{"Action":"fail","Package":"a","Test":"TestBook","Elapsed":0.3}
{"Action":"output","Package":"a","Output":"FAIL\ta\t0.4s\n"}
{"Action":"fail","Package":"a","Elapsed":0.4}
`
	var out strings.Builder
	code := report(strings.NewReader(sub), &out, 6*time.Minute)
	want := "=== RUN   TestBook/one\n    a_test.go:7: one: out.jsonl differs\n--- FAIL: TestBook/one (0.20s)\n=== RUN   TestBook\n--- FAIL: TestBook (0.30s)\nFAIL\ta\t0.4s\n"
	if code != 1 || !strings.HasPrefix(out.String(), want) {
		t.Errorf("exit %d, printed\n%s\nwant first\n%s", code, out.String(), want)
	}
}
