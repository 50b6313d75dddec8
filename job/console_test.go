package job

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The console's recent panes are the panes the outputs get: after having,
// not every pane the windows fire.
func TestConsolePanesAreTheOutputs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"job.yaml", "orders.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../examples/fraud", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	j, err := LoadWith(filepath.Join(dir, "job.yaml"), LoadOptions{Set: []string{`output=["-"]`}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rn, err := Build(j, Options{Console: true, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rn.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	written := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if sum.PanesFired < 1000 || int64(len(written)) != sum.PanesWritten || len(written) > 50 {
		t.Fatalf("%d panes fired, %d written: not what the test needs", sum.PanesFired, len(written))
	}
	rec := httptest.NewRecorder()
	rn.Console().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/panes", nil))
	var panes []json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &panes); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range panes {
		got = append(got, string(p))
	}
	if strings.Join(got, "\n") != strings.Join(written, "\n") {
		t.Errorf("/api/panes (%d):\n%s\nwant the output's %d:\n%s", len(got), strings.Join(got, "\n"), len(written), strings.Join(written, "\n"))
	}
}
