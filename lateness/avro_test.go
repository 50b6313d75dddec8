package lateness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// An Avro object container file is read as weir run reads it (package
// formats): the same events as their JSON lines give the same tables.
func TestAvroContainerFile(t *testing.T) {
	schema := avro.MustParse(`{"type":"record","name":"E","fields":[
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"arrival","type":["null",{"type":"long","logicalType":"timestamp-millis"}]},
 {"name":"platform","type":"string"}]}`)
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "events.avro"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ocf.NewWriter(f, schema, ocf.WithCodec(ocf.DeflateCodec(-1)))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range 500 {
		ts := int64(1_780_000_000_000 + i*1000)
		arr := ts + int64(i%13)*700
		plat := []string{"web", "iOS", "Android"}[i%3]
		rec := map[string]any{"ts": time.UnixMilli(ts), "arrival": time.UnixMilli(arr), "platform": plat}
		line := fmt.Sprintf(`{"ts":%d,"arrival":%d,"platform":%q}`, ts, arr, plat)
		if i%50 == 7 {
			rec["arrival"] = nil // no arrival time
			line = fmt.Sprintf(`{"ts":%d,"arrival":null,"platform":%q}`, ts, plat)
		}
		if err := w.Encode(rec); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	o := Options{By: []string{"platform"}, Delays: []time.Duration{0, 2 * time.Second, 5 * time.Second}}
	table := func(path string) map[string]any {
		r, err := Analyze(path, o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		var m map[string]any
		json.Unmarshal(b, &m)
		delete(m, "input")
		delete(m, "format")
		return m
	}
	a, j := table(filepath.Join(dir, "events.avro")), table(filepath.Join(dir, "events.jsonl"))
	ab, _ := json.Marshal(a)
	jb, _ := json.Marshal(j)
	if string(ab) != string(jb) || !strings.Contains(string(ab), `"events":490`) {
		t.Errorf("Avro:\n%s\nJSON lines:\n%s", ab, jb)
	}
}
