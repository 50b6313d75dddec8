package jobfile

// The kinds the weir command links (package job imports them), so that the
// job files and the schema tested here are the ones users have.
import (
	_ "github.com/weirstream/weir/connector/mqtt"
	_ "github.com/weirstream/weir/connector/parquet"
	_ "github.com/weirstream/weir/connector/webhook"
)
