package bench

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/mtime"
)

// The jsonl group's events in the formats weir reads besides JSON lines:
// the whole job over the same 10M events as an Avro object container file
// and as a CSV file, beside jsonl-run, so that what a format costs is a
// ratio of one run.
func init() {
	register(Bench{
		Name: "jsonl-run-avro", Group: "jsonl",
		About: "jsonl-run's job over the same events in an Avro object container file (format: avro)",
		Setup: onFile(func() (string, error) { return formatFile("avro", jsonlRate) }, func(in string) (int64, map[string]float64, string, error) {
			return formatRun("avro", in)
		}),
	})
	register(Bench{
		Name: "jsonl-run-csv", Group: "jsonl",
		About: "jsonl-run's job over the same events in a CSV file with a header row (format: csv)",
		Setup: onFile(func() (string, error) { return formatFile("csv", jsonlRate) }, func(in string) (int64, map[string]float64, string, error) {
			return formatRun("csv", in)
		}),
	})
}

// eventAvroSchema is the Avro schema of the jsonl group's events.
const eventAvroSchema = `{"type":"record","name":"Order","namespace":"bench","fields":[
{"name":"id","type":"string"},{"name":"card","type":"string"},{"name":"amount","type":"double"},
{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
{"name":"arrival","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

// formatRun runs jsonlJob over the file in, of format.
func formatRun(format, in string) (int64, map[string]float64, string, error) {
	jobText := strings.Replace(jsonlJob, "source: {file: %s}", "source: {file: %s, format: "+format+"}", 1)
	return jsonlRunIn(jobText, in, false)
}

// formatFile is JSONLFile's events written as a file of format (avro or
// csv), written once and kept beside it.
func formatFile(format string, rate int) (string, error) {
	src, err := JSONLFile(rate)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(src, ".jsonl") + "." + format
	if st, err := os.Stat(path); err == nil && st.Size() > int64(JSONLines)*20 {
		return path, nil
	}
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var put func(v *fastjson.Value) error
	var finish func() error
	switch format {
	case "avro":
		ow, err := ocf.NewWriter(w, avro.MustParse(eventAvroSchema))
		if err != nil {
			return "", err
		}
		put = func(v *fastjson.Value) error {
			ts, err1 := mtime.Parse(v.GetStringBytes("ts"))
			arr, err2 := mtime.Parse(v.GetStringBytes("arrival"))
			if err1 != nil || err2 != nil {
				return fmt.Errorf("a line's times: %v %v", err1, err2)
			}
			return ow.Encode(map[string]any{"id": string(v.GetStringBytes("id")), "card": string(v.GetStringBytes("card")),
				"amount": v.GetFloat64("amount"), "ts": time.UnixMilli(int64(ts)).UTC(), "arrival": time.UnixMilli(int64(arr)).UTC()})
		}
		finish = ow.Close
	case "csv":
		w.WriteString("id,card,amount,ts,arrival\n")
		put = func(v *fastjson.Value) error {
			_, err := fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", v.GetStringBytes("id"), v.GetStringBytes("card"), v.Get("amount"),
				v.GetStringBytes("ts"), v.GetStringBytes("arrival"))
			return err
		}
		finish = func() error { return nil }
	default:
		return "", fmt.Errorf("no bench file of format %s", format)
	}
	var p fastjson.Parser
	sc := bufio.NewScanner(bufio.NewReaderSize(in, 1<<20))
	for sc.Scan() {
		v, err := p.ParseBytes(sc.Bytes())
		if err != nil {
			return "", err
		}
		if err := put(v); err != nil {
			return "", err
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if err := finish(); err != nil {
		return "", err
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
