//go:build unix

package job

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/weirstream/weir/jobfile"
)

// modes lists every file and directory under dir with its permissions.
func modes(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "state/db/") || rel == "job.yaml" || rel == "input.jsonl" {
			return nil // Pebble's own files, and the test's
		}
		st, _ := os.Lstat(p)
		out = append(out, rel+" "+(st.Mode()&(fs.ModeDir|fs.ModePerm)).String())
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// What weir creates is its owner's alone, whatever the umask: outputs and
// their owner records, the SQLite database, the summary, the acceptance
// record, checkpoints (the
// state directory: package state's test). file_mode widens the outputs,
// not the working storage.
func TestFilesAreTheOwnersAlone(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	job := `name: t
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: k
window: {tumbling: 1m}
aggregates: {n: count}
output: [results.jsonl, {sqlite: {path: results.db, table: t}}]
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
acceptance: acceptance.json
checkpoint: {dir: ck, keep: 1}
state: {backend: pebble, dir: state}
`
	input := lines(`{"k":"a","ts":"2026-01-01T00:00:01Z","at":"2026-01-01T00:00:01Z"}`,
		`{"k":"a","ts":"2026-01-01T00:02:00Z","at":"2026-01-01T00:02:00Z"}`,
		`{"k":"a","ts":"2026-01-01T00:00:02Z","at":"2026-01-01T00:02:01Z"}`, `oops`)
	dir, _ := runJob(t, job, input)
	want := `.acceptance.json.weir -rw-------
.acceptance.md.weir -rw-------
.late.jsonl.weir -rw-------
.quarantine.jsonl.weir -rw-------
.results.jsonl.weir -rw-------
.summary.json.weir -rw-------
acceptance.json -rw-------
acceptance.md -rw-------
ck drwx------
ck/LOCK -rw-------
ck/WEIR-CHECKPOINTS -rw-------
ck/chk-00000001 drwx------
ck/chk-00000001/MANIFEST -rw-------
ck/chk-00000001/WEIR-WROTE -rw-------
late.jsonl -rw-------
quarantine.jsonl -rw-------
results.db -rw-------
results.jsonl -rw-------
summary.json -rw-------`
	got := modes(t, dir)
	// The checkpoint that records the end (its number follows the job's
	// layout), written as chk-00000001 here.
	if cks, _ := filepath.Glob(filepath.Join(dir, "ck", "chk-*")); len(cks) == 1 {
		got = strings.ReplaceAll(got, "ck/"+filepath.Base(cks[0]), "ck/chk-00000001")
	}
	var kept []string
	for _, l := range strings.Split(got, "\n") {
		// Only the checkpoint's manifest and mark are named: its other
		// files follow the job's layout.
		if !strings.HasPrefix(l, "ck/chk-00000001/") || strings.Contains(l, "MANIFEST") || strings.Contains(l, "WEIR-WROTE") {
			kept = append(kept, l)
		} else if !strings.HasSuffix(l, " -rw-------") && !strings.HasSuffix(l, " drwx------") {
			t.Errorf("%s", l)
		}
	}
	if strings.Join(kept, "\n") != want {
		t.Errorf("modes:\n%s\nwant\n%s", strings.Join(kept, "\n"), want)
	}

	// file_mode: the outputs as asked, the working storage still private.
	dir, _ = runJob(t, job+"file_mode: \"0640\"\n", input)
	got = modes(t, dir)
	for _, f := range []string{"results.jsonl", "results.db", "late.jsonl", "quarantine.jsonl", "summary.json", "acceptance.json", "acceptance.md"} {
		if !strings.Contains(got, "\n"+f+" -rw-r-----") && !strings.HasPrefix(got, f+" -rw-r-----") {
			t.Errorf("%s is not 0640:\n%s", f, got)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "ck") && !strings.HasSuffix(l, " -rw-------") && !strings.HasSuffix(l, " drwx------") {
			t.Errorf("file_mode widened the checkpoints: %s", l)
		}
	}
}

func TestFileModeIsChecked(t *testing.T) {
	for _, m := range []string{`"0400"`, `"0644x"`, `"1777"`, `"9"`, `rw-r--r--`} {
		_, err := jobfile.Parse([]byte(minimal+"file_mode: "+m+"\n"), "job.yaml", "/jobs")
		want := `job.yaml:7: file_mode: expected an octal mode from 0600 to 0777 such as "0640" (the owner reads and writes; group and others as you choose), got "` + strings.Trim(m, `"`) + `"`
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v", m, err)
		}
	}
	for m, want := range map[string]os.FileMode{`"0640"`: 0o640, `0660`: 0o660, `"0o644"`: 0o644, `"600"`: 0o600} {
		j, err := jobfile.Parse([]byte(minimal+"file_mode: "+m+"\n"), "job.yaml", "/jobs")
		if err != nil || j.FileMode != want {
			t.Errorf("%s: %v %v", m, err, j)
		}
	}
}

// trigger: {late: {count: 2}} fires a late pane every two late events of a
// window; the one left over is in the closing pane. The event at 1m40s
// passes the on-time and the closing instants of [10s, 20s) at once: one
// pane, on time and final.
func TestLateCountJob(t *testing.T) {
	dir, sum := runJob(t, `
source: {file: input.jsonl}
time: {field: ts}
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 1m
trigger: {late: {count: 2}}
aggregates: {n: count}
output: out.jsonl
`, lines(
		`{"ts":"2026-09-01T00:00:01Z"}`, `{"ts":"2026-09-01T00:00:12Z"}`,
		`{"ts":"2026-09-01T00:00:02Z"}`, `{"ts":"2026-09-01T00:00:03Z"}`, `{"ts":"2026-09-01T00:00:04Z"}`,
		`{"ts":"2026-09-01T00:01:40Z"}`,
	))
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "out.jsonl")), "\n") {
		var p struct {
			Start  string `json:"window_start"`
			Rev    int    `json:"revision"`
			Timing string `json:"timing"`
			Final  bool   `json:"final"`
			N      int    `json:"n"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s #%d %s n=%d final=%v", p.Start[11:19], p.Rev, p.Timing, p.N, p.Final))
	}
	want := []string{
		"00:00:00 #1 ON_TIME n=1 final=false",
		"00:00:00 #2 LATE n=3 final=false",
		"00:00:10 #1 ON_TIME n=1 final=true",
		"00:00:00 #3 LATE n=4 final=true",
		"00:01:40 #1 ON_TIME n=1 final=true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || sum.LateAccepted != 3 {
		t.Errorf("panes:\n%s\nwant\n%s\nlate accepted %d", strings.Join(got, "\n"), strings.Join(want, "\n"), sum.LateAccepted)
	}
}
