package examples

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// parquetLake runs the recipe and reads its part files as the page's
// DuckDB query does (bench/duckdb TestParquetRecipe runs that query in
// DuckDB on the recipe's files and finds these rows): the day from the
// folder, the shop, the window's start, the sales and the exact takings, by
// window and shop, as DuckDB writes CSV.
func parquetLake(t *testing.T, r *recipe, root string) map[string][]byte {
	r.weir(t, root, "run", "examples/parquet-lake/job.yaml")
	type row struct {
		Key          string    `parquet:"key"`
		WindowStart  time.Time `parquet:"window_start,timestamp(millisecond)"`
		Sales        *int64    `parquet:"sales,optional"`
		TakingsExact *string   `parquet:"takings_exact,optional"`
	}
	parts, err := filepath.Glob(filepath.Join(r.dir(root), "out", "lake", "date=*", "*.parquet"))
	if err != nil || len(parts) == 0 {
		t.Fatalf("no part files: %v", err)
	}
	var lines []string
	for _, p := range parts {
		rows, err := parquet.ReadFile[row](p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		date := strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "date=")
		for _, x := range rows {
			if x.Sales == nil || x.TakingsExact == nil {
				t.Fatalf("%s: a pane without its aggregates: %+v", p, x)
			}
			start := x.WindowStart.UTC().Format("2006-01-02T15:04:05Z")
			// Sorted by window, then shop: the query's order.
			lines = append(lines, fmt.Sprintf("%s\t%s,%s,%s,%d,%s", start, x.Key, date, x.Key, *x.Sales, *x.TakingsExact))
		}
	}
	slices.Sort(lines)
	var b strings.Builder
	b.WriteString("date,shop,window_start,sales,takings\n")
	for _, l := range lines {
		start, rest, _ := strings.Cut(l, "\t")
		_, rest, _ = strings.Cut(rest, ",")
		date, rest, _ := strings.Cut(rest, ",")
		shop, rest, _ := strings.Cut(rest, ",")
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", date, shop, start, rest)
	}
	return map[string][]byte{"rows.csv": []byte(b.String())}
}
