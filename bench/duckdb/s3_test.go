package main

import (
	"context"
	"database/sql"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestParquetS3OutputKilled is TestParquetOutputKilled with the Parquet
// output in object storage: an S3 server runs in this test's process
// (gofakes3, in memory: no real object store can run here), and outlives
// the weir commands it kills. The objects, downloaded, are what DuckDB
// reads: exactly the panes of an uninterrupted run written to a local
// directory, each once, and no upload is left in progress.
func TestParquetS3OutputKilled(t *testing.T) {
	tmp := t.TempDir()
	bin := buildWeir(t, tmp)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	want, took := uninterrupted(t, bin, db, tmp)

	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	defer srv.Close()
	dir := filepath.Join(tmp, "killed")
	os.Mkdir(dir, 0o755)
	writeEvents(t, dir, 150_000)
	job := strings.Replace(killJob, "parquet: {dir: lake, partition_by: [date, hour]}",
		`parquet: {dir: s3://lake/spend, staging: staging, partition_by: [date, hour], s3: {endpoint: "`+srv.URL+`", path_style: true, access_key_id: weir, secret_access_key: "${S3_SECRET}"}}`, 1)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	kills, resumed := killSixTimes(t, bin, dir, took, []string{"S3_SECRET=secret"})

	c, err := minio.NewCore(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4("weir", "secret", ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objects := 0
	for o := range c.Client.ListObjects(ctx, "lake", minio.ListObjectsOptions{Prefix: "spend/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		dst := filepath.Join(dir, "lake", filepath.FromSlash(strings.TrimPrefix(o.Key, "spend/")))
		if err := c.Client.FGetObject(ctx, "lake", o.Key, dst, minio.GetObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		objects++
	}
	got := readLake(t, db, dir)
	if !slices.Equal(got, want) {
		t.Fatalf("killed after %v: DuckDB reads %d panes from the objects, the uninterrupted run's files %d:\n%s\nwant\n%s", kills, len(got), len(want), head(got), head(want))
	}
	up, err := c.ListMultipartUploads(ctx, "lake", "", "", "", "", 1000)
	if err != nil && minio.ToErrorResponse(err).Code != "NoSuchUpload" { // gofakes3's answer for a bucket that never had one
		t.Fatal(err)
	}
	if len(up.Uploads) != 0 {
		t.Errorf("%d uploads left in progress (%s first)", len(up.Uploads), up.Uploads[0].Key)
	}
	if resumed == 0 {
		t.Errorf("no run resumed from a checkpoint (killed after %v)", kills)
	}
	t.Logf("killed with SIGKILL after %v, %d runs resumed from a checkpoint: DuckDB reads the %d panes of the uninterrupted run from %d objects, each once", kills, resumed, len(got), objects)
}
