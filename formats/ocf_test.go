package formats

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// A container file's records are read one after the other into the map of
// the one before (the library reuses it): each record's JSON is its own,
// a union's null after a string, a shorter array after a longer one, a
// nested record's optional field after it was set, and a map's keys.
func TestContainerRecordsDoNotInheritTheirPredecessors(t *testing.T) {
	schema := avro.MustParse(`{"type": "record", "name": "R", "fields": [
		{"name": "id", "type": "string"},
		{"name": "note", "type": ["null", "string"], "default": null},
		{"name": "tags", "type": {"type": "array", "items": "long"}},
		{"name": "m", "type": {"type": "map", "values": "string"}},
		{"name": "in", "type": {"type": "record", "name": "In", "fields": [{"name": "x", "type": ["null", "long"], "default": null}]}}]}`)
	path := filepath.Join(t.TempDir(), "r.avro")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ocf.NewWriter(f, schema)
	if err != nil {
		t.Fatal(err)
	}
	x := int64(7)
	note := "hello"
	for _, r := range []map[string]any{
		{"id": "a", "note": &note, "tags": []int64{1, 2, 3}, "m": map[string]string{"k": "v", "j": "w"}, "in": map[string]any{"x": &x}},
		{"id": "b", "note": nil, "tags": []int64{}, "m": map[string]string{}, "in": map[string]any{"x": nil}},
		{"id": "c", "note": nil, "tags": []int64{4}, "m": map[string]string{"z": "y"}, "in": map[string]any{"x": nil}},
	} {
		if err := w.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rows, err := OpenAvroFile(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for {
		line, _, err := rows.Next(nil)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	want := []string{
		`{"id":"a","note":"hello","tags":[1,2,3],"m":{"j":"w","k":"v"},"in":{"x":7}}`,
		`{"id":"b","note":null,"tags":[],"m":{},"in":{"x":null}}`,
		`{"id":"c","note":null,"tags":[4],"m":{"z":"y"},"in":{"x":null}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
