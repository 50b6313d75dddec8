package formats

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// A container file's records are read one after the other (through the
// library, when they are resolved to a reader's schema, into the map of the
// one before, which it reuses): each record's JSON is its own, a union's
// null after a string, a shorter array after a longer one, a nested
// record's optional field after it was set, and a map's keys, whether the
// records are written straight from their binary or resolved.
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
		{"id": "a", "note": &note, "tags": []int64{1, 2, 3}, "m": map[string]string{"k": "v"}, "in": map[string]any{"x": &x}},
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
	for _, c := range []struct{ reader, extra string }{
		{"", ""},
		{strings.Replace(schema.String(), `"fields": [`, `"fields": [{"name": "extra", "type": "long", "default": 0},`, 1), `"extra":0,`},
	} {
		rows, err := OpenAvroFile(path, c.reader)
		if err != nil {
			t.Fatal(err)
		}
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
		rows.Close()
		want := []string{
			`{` + c.extra + `"id":"a","note":"hello","tags":[1,2,3],"m":{"k":"v"},"in":{"x":7}}`,
			`{` + c.extra + `"id":"b","note":null,"tags":[],"m":{},"in":{"x":null}}`,
			`{` + c.extra + `"id":"c","note":null,"tags":[4],"m":{"z":"y"},"in":{"x":null}}`,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("reader %q: got\n%s\nwant\n%s", c.reader, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// A container file of each codec is read block by block as the library
// reads it, record for record; one cut anywhere, or with a byte changed,
// gives the records before the damage, then an error.
func TestContainerBlocksAsTheLibraryReads(t *testing.T) {
	schema := avro.MustParse(`{"type": "record", "name": "R", "fields": [
		{"name": "id", "type": "string"}, {"name": "n", "type": ["null", "long", "double"]},
		{"name": "tags", "type": {"type": "array", "items": "string"}}, {"name": "ok", "type": "boolean"}]}`)
	for _, codec := range []ocf.Codec{nil, ocf.DeflateCodec(6), ocf.SnappyCodec(), ocf.MustZstdCodec(nil, nil)} {
		name := "null"
		if codec != nil {
			name = codec.Name()
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.avro")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			opts := []ocf.WriterOpt{ocf.WithBlockCount(97)}
			if codec != nil {
				opts = append(opts, ocf.WithCodec(codec))
			}
			w, err := ocf.NewWriter(f, schema, opts...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 1000 {
				var n any
				switch i % 3 {
				case 1:
					n = int64(-i)
				case 2:
					n = float64(i) / 8
				}
				if err := w.Encode(map[string]any{"id": fmt.Sprint("r", i), "n": n, "tags": []string{"a", strings.Repeat("b", i%7)}, "ok": i%2 == 0}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			read := func(open func(string, *avro.Schema) (RowReader, error), path string) ([]string, error) {
				rows, err := open(path, nil)
				if err != nil {
					return nil, err
				}
				defer rows.Close()
				var out []string
				for {
					line, _, err := rows.Next(nil)
					if errors.Is(err, io.EOF) {
						return out, nil
					}
					if err != nil {
						return out, err
					}
					out = append(out, string(line))
				}
			}
			direct := func(path string, reader *avro.Schema) (RowReader, error) {
				rows, err := openBlockRows(path, reader)
				if rows == nil && err == nil {
					t.Fatal("the file is left to the library")
				}
				return rows, err
			}
			got, err := read(direct, path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := read(libraryRows, path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1000 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%d records, the library %d; first: %v / %v", len(got), len(want), got[:1], want[:1])
			}
			b, _ := os.ReadFile(path)
			rng := rand.New(rand.NewPCG(1, uint64(len(b))))
			for range 200 {
				c := slices.Clone(b)
				if rng.IntN(2) == 0 {
					c = c[:rng.IntN(len(c))]
				} else {
					c[rng.IntN(len(c))] ^= byte(1 + rng.IntN(255))
				}
				bad := filepath.Join(t.TempDir(), "bad.avro")
				os.WriteFile(bad, c, 0o644)
				part, err := read(func(p string, r *avro.Schema) (RowReader, error) {
					rows, err := openBlockRows(p, r)
					if rows == nil && err == nil {
						return libraryRows(p, r) // the header changed: the codec's name, the schema
					}
					return rows, err
				}, bad)
				if err == nil && len(part) == 1000 && strings.Join(part, "\n") == strings.Join(want, "\n") {
					continue // a byte changed where it changed nothing read (metadata, a string's letter)
				}
				if err == nil && len(part) < 1000 && len(c) == len(b) {
					t.Fatalf("a changed byte ended the file at record %d without an error", len(part))
				}
				for i, l := range part {
					if i >= len(want) || l != want[i] && len(c) < len(b) {
						t.Fatalf("a cut file: record %d is %s, not %s", i+1, l, want[i])
					}
				}
			}
		})
	}
}
