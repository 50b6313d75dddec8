package parquet

import "testing"

// The helpers of the tests of package parquet_test (a job file's runs,
// which import package job, which imports this one).
var (
	Files  = files
	Finals = finals
	Rows   = rows
	// NewFakeS3 starts an S3 server in the test's process.
	NewFakeS3 = newFakeS3
)

// Download copies the bucket's objects under prefix into dir.
func (f *fakeS3) Download(t testing.TB, prefix, dir string) { f.download(t, prefix, dir) }

// Uploads are the bucket's uploads in progress.
func (f *fakeS3) Uploads(t testing.TB) []string { return f.uploads(t) }
