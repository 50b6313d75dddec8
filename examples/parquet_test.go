package examples

import (
	"cmp"
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
	type shown struct {
		date string
		row
	}
	var rows []shown
	for _, p := range parts {
		read, err := parquet.ReadFile[row](p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		date := strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "date=")
		for _, x := range read {
			if x.Sales == nil || x.TakingsExact == nil {
				t.Fatalf("%s: a pane without its aggregates: %+v", p, x)
			}
			rows = append(rows, shown{date, x})
		}
	}
	// By window, then shop: the query's order.
	slices.SortFunc(rows, func(a, b shown) int {
		return cmp.Or(a.WindowStart.Compare(b.WindowStart), strings.Compare(a.Key, b.Key))
	})
	var b strings.Builder
	b.WriteString("date,shop,window_start,sales,takings\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%s,%d,%s\n", r.date, r.Key, r.WindowStart.UTC().Format("2006-01-02T15:04:05Z"), *r.Sales, *r.TakingsExact)
	}
	return map[string][]byte{"rows.csv": []byte(b.String())}
}
