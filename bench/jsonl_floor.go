package bench

import (
	"bytes"
	"os"
	"runtime"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// The floors and variants of benchmark (2) beside jsonl-parse-only: what the
// machine does with the same lines when nothing general stands between it
// and the job's four fields, and weir run on one core.

func init() {
	register(Bench{
		Name: "jsonl-scanner-floor", Group: "jsonl",
		About: "the CPU floor for jsonl-run: a hand-written scanner that finds the job's four fields in each line of the same file and reads them (times, key, amount), nothing else",
		Setup: onFile(jsonlInput(jsonlRate), jsonlScanner),
	})
	register(Bench{
		Name: "jsonl-run-1core", Group: "jsonl",
		About: "jsonl-run on one core (GOMAXPROCS=1): what the second core adds",
		Setup: onFile(jsonlInput(jsonlRate), func(in string) (int64, map[string]float64, string, error) {
			runtime.GOMAXPROCS(1)
			return jsonlRun(in)
		}),
	})
}

// jsonlScanner reads every line and, by hand, the four fields the job
// reads: event time and arrival (parsed), the key (its bytes) and the
// amount (a decimal, parsed to an integer and a scale). It knows the lines'
// shape (flat objects, no escapes, the four names) and checks nothing else:
// the least a program must do to compute the job.
func jsonlScanner(in string) (int64, map[string]float64, string, error) {
	f, err := os.Open(in)
	if err != nil {
		return 0, nil, "", err
	}
	defer f.Close()
	lines := source.NewLines(f, 0, 0, 0)
	var n, keyBytes, cents int64
	var last mtime.Time
	for {
		ln, ok := lines.Next()
		if !ok {
			break
		}
		var ts, arr mtime.Time
		for b := ln.Text; ; {
			q := bytes.IndexByte(b, '"')
			if q < 0 {
				break
			}
			e := bytes.IndexByte(b[q+1:], '"')
			if e < 0 {
				break
			}
			name := b[q+1 : q+1+e]
			b = b[q+e+3:] // past the closing quote and the colon
			var val []byte
			if len(b) > 0 && b[0] == '"' {
				end := bytes.IndexByte(b[1:], '"')
				val, b = b[1:1+end], b[end+2:]
			} else {
				end := bytes.IndexAny(b, ",}")
				val, b = b[:end], b[end:]
			}
			switch string(name) {
			case "card":
				keyBytes += int64(len(val))
			case "ts":
				ts, _ = mtime.Parse(val)
			case "arrival":
				arr, _ = mtime.Parse(val)
			case "amount":
				d, _, _ := scanDecimal(val)
				cents += d
			}
		}
		last = max(last, ts, arr)
		n++
	}
	return n, map[string]float64{"key_bytes": float64(keyBytes)}, "", lines.Err()
}

// scanDecimal reads "12.34" as 1234 and a scale of 2.
func scanDecimal(b []byte) (d int64, scale int, ok bool) {
	point := false
	for _, c := range b {
		switch {
		case c == '.':
			point = true
		case c >= '0' && c <= '9':
			d = d*10 + int64(c-'0')
			if point {
				scale++
			}
		default:
			return 0, 0, false
		}
	}
	return d, scale, true
}
