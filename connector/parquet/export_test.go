package parquet

// The helpers of the tests of package parquet_test (a job file's runs,
// which import package job, which imports this one).
var (
	Files  = files
	Finals = finals
	Rows   = rows
)
