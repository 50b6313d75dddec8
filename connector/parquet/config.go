// Package parquet is weir's Parquet output: the registered sink kind
// "parquet", which writes a job's panes as Parquet part files in a local
// directory, in Hive-style partition folders, exactly once with
// checkpoints, the way Flink's FileSink writes bulk formats.
//
//	output: {parquet: {dir: results/, partition_by: [date, hour], roll: {size: 128MB, interval: 1h}}}
//
// # Files
//
// Rows go into in-progress part files that are weir's own: hidden, and
// named after the output (a task token: 8 hex digits of a hash of the job's
// name and the directory) and a counter,
//
//	DIR/date=2026-12-05/hour=13/.part-1a2b3c4d-7.parquet.inprogress
//
// A part file is closed (its footer written and synced) when it rolls
// (roll.size, roll.interval) and at every checkpoint barrier (PreCommit),
// whose pre-commit names it. It gets its final name,
//
//	DIR/date=2026-12-05/hour=13/part-1a2b3c4d-7.parquet
//
// only when the checkpoint that holds it commits (Commit): a hard link to
// the final name, which the file system refuses if that name exists, then
// the in-progress name removed. So a reader that lists *.parquet sees whole
// files of complete checkpoints only, and every row once.
//
// # Guarantee
//
// With checkpoints: exactly once. Commit is idempotent: a restore commits
// again the pre-commits its checkpoint holds (Resume.Pending), and a file
// committed already (its final name is the in-progress file itself, or the
// in-progress file is gone and the final one is there) is not an error. On
// restore, an in-progress file of this output that no pending pre-commit
// names and whose number is at least the checkpoint's counter was written
// after the checkpoint: it is removed. Nothing else is ever removed: a
// final file is never appended to, truncated, overwritten or deleted, and
// a file that does not match the output's in-progress naming is never
// touched. A final name that exists already (a file weir did not write, or
// a final file of a later checkpoint when an older savepoint is restored)
// is skipped when a part file is numbered, and a commit that would replace
// one fails instead. Restoring an older checkpoint or savepoint leaves the
// final files the later checkpoints committed, and the panes they hold are
// written again into new files (logged at start).
//
// Without checkpoints: at least once. A part file gets its final name when
// it rolls and when the job ends (Close). A crash (kill -9) leaves the part
// files it was writing as in-progress files, which no reader of *.parquet
// sees, and which a later run leaves where they are (no checkpoint proves
// they are weir's): remove them by hand.
//
// # Object storage
//
// With dir: s3://bucket/prefix the part files go to an S3-compatible object
// store (AWS S3, MinIO, Ceph, R2...), in S3's REST API: the seven requests
// the output makes (start, upload a part, complete and abort an upload,
// list objects and uploads, look for an object), each signed with AWS
// Signature Version 4 by AWS's own signer (github.com/aws/smithy-go/
// aws-http-auth, Apache-2.0). A client library was measured and left: MinIO's
// Go client adds 2.5 MB to the release binary, AWS's SDK 6 MB, this 0.08 MB,
// and the binary has a budget of 50 MiB.
//
//	output: {parquet: {dir: s3://lake/orders, partition_by: [date], s3: {endpoint: https://minio.internal:9000,
//	         access_key_id: ${S3_KEY}, secret_access_key: ${S3_SECRET}}}}
//
// A part file is written in the local staging directory as above, then, at
// the checkpoint barrier, uploaded as the parts (UploadPartBytes each) of a
// multipart upload that is not completed: no reader of the bucket sees it.
// The local file is removed; the pre-commit names the upload and its parts.
// When the checkpoint commits, the upload is completed, and the object
// appears whole at its final name, PREFIX/FOLDERS/part-TASK-N.parquet.
// Completing is idempotent: an upload the store no longer knows whose
// object is there was completed already; one gone without its object (a
// lifecycle rule aborted it) is a permanent error that says so. On restore,
// the uploads in progress of this output's naming that no pending
// pre-commit holds and whose numbers are at least the checkpoint's counter
// (a killed run's, started after its last checkpoint) are aborted; other
// uploads are left and logged (no checkpoint proves them weir's). An
// object is never written over: numbers whose final object exists (listed
// at start) are skipped. Without checkpoints a part file is uploaded and
// completed when it rolls and when the job ends: at least once.
//
// The staging directory holds at most the open part files and those closed
// since the last barrier; an upload sends a part straight from its file,
// hashed first (its SHA-256 signed with the request, which the store
// checks), so memory does not grow with the part size.
//
// # Partitions and columns
//
// partition_by names Hive-style folders, in order: date (the window's start,
// UTC, 2026-12-05), hour (its hour, 00 to 23), or a key field, as the
// pane names it (key for a key of one field, each field of a composite
// key, a.b as a_b). A key field's values are escaped as Hive escapes them
// (/ as %2F). A key field that partitions is not a column of the files, as
// Hive's layout wants: a reader that reads the folders (DuckDB's
// hive_partitioning, Spark, pandas) has it from the path.
//
// The columns, in order: the key's fields (strings: their text, as a
// table's key columns hold them), window_start and window_end (timestamps
// in milliseconds, UTC; none for the global window), revision (int64),
// timing (EARLY, ON_TIME, LATE), final, retract (booleans), status,
// version (int64), watermark and emitted_at (timestamps, null before the
// first watermark), then each aggregate: a count an int64; any other
// number a double NAME and a string NAME_exact with its exact text as the
// JSON output writes it (an exact decimal sum's digits, 12.50 as 12.5);
// first, last, histogram and top their JSON text; and partial (the JSON
// array of the aggregates that cover only part of their window, null
// otherwise).
//
// The schema comes from the job's pane shape (plan.Env.Shape), known before
// the first pane. A front door that gives none (a Go program's SinkToKind)
// gets it from the first pane: its key columns are then key (one field) or
// key_1, key_2, ... and every aggregate that is not JSON text is a number
// (double and _exact).
//
// # Memory
//
// A part file's rows are buffered by the library, one row group at a time:
// once the buffered row group passes RowGroupBytes (1 MiB as the library
// estimates it: its encoded pages and the values not yet encoded) it is
// written to the file. At most MaxOpenFiles (32) part files are open at
// once, one per partition folder written since the last roll or
// checkpoint: a pane of a 33rd folder finishes the part file written least
// recently (which then waits, closed, for the checkpoint). Measured with
// 1,000,000 panes of a key, a window and three aggregates: about 4 MiB of
// heap with one part file open, about 85 MiB with 32 (the floor of a part
// file is its columns' page buffers).
//
// # Refused
//
// Only panes go to Parquet: a parquet late_output, quarantine or
// dead_letter is refused when the job starts (the registry's Parse does not
// know which field it reads), and an item that is not a pane is a permanent
// error of Write.
package parquet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// Kind is the name of the sink kind: output: {parquet: {...}}.
const Kind = "parquet"

// DefaultRollSize is the size at which a part file rolls unless roll.size
// says otherwise.
const DefaultRollSize = 128 << 20

// RowGroupBytes is the size of the row group a part file buffers before it
// writes it, as the library estimates it (encoded pages, and the values not
// yet encoded).
const RowGroupBytes = 1 << 20

// MaxOpenFiles is how many part files are open at once: a pane of another
// partition folder finishes the one written least recently first.
const MaxOpenFiles = 32

// Fields are the kind's settings.
var Fields = []plan.Field{
	{Name: "dir", Type: plan.Path, Required: true, Doc: "the directory the part files and their partition folders go to (made if missing), or s3://bucket/prefix for an S3-compatible object store"},
	{Name: "partition_by", Type: plan.Strings, Doc: "Hive-style partition folders, in order: date (the window's start, UTC), hour, or a key field (key, or a composite key's field)"},
	{Name: "roll", Type: plan.StringMap, Doc: "when a part file is closed before the next checkpoint: size (128MB default; KB, MB, GB, KiB, MiB, GiB) and interval (a duration: 10m, 1h; default none)"},
	{Name: "s3", Type: plan.StringMap, Doc: "with dir s3://...: endpoint (a host, or an http(s) URL of one; AWS's of the region by default), region (AWS_REGION, else us-east-1), path_style (true: http://host/bucket/key, which an endpoint other than AWS's gets anyway), access_key_id, secret_access_key, session_token (${VAR}; without them AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN)"},
	{Name: "staging", Type: plan.Path, Doc: "with dir s3://...: the local directory part files are written in before they are uploaded (default: weir-parquet-TOKEN in the system's temporary directory)"},
}

func init() {
	plan.RegisterSink(plan.SinkKind{
		Name:   Kind,
		Doc:    "Parquet part files of panes in a directory or S3-compatible object storage, Hive-style partitions, exactly once with checkpoints (renamed to their final names, or their multipart uploads completed, when the checkpoint commits).",
		Fields: Fields,
		Parse:  func(s plan.Settings) (plan.SinkConfig, error) { return Parse(s) },
		// Its columns are a pane's.
		PanesOnly: true,
	})
}

// Config is a Parquet output's settings, read and checked.
type Config struct {
	// Dir is the output's directory; for an output to object storage,
	// the local directory of the part files before their upload (empty:
	// one in the system's temporary directory, named after the output).
	Dir string
	// S3, when set, is the object store the part files go to.
	S3 *S3
	// PartitionBy are the partition folders' names, in order.
	PartitionBy []string
	// RollSize is the size at which a part file is closed; RollInterval
	// how long one stays open (0: until the next checkpoint, or the job's
	// end).
	RollSize     int64
	RollInterval time.Duration
}

var (
	_ plan.SinkConfig = (*Config)(nil)
	_ plan.Secreter   = (*Config)(nil)
	_ plan.Prober     = (*Config)(nil)
)

// Parse reads and checks a Parquet output's settings.
func Parse(s plan.Settings) (*Config, error) {
	c := &Config{RollSize: DefaultRollSize}
	if err := c.parseDir(s); err != nil {
		return nil, err
	}
	parts, _, err := s.Strings("partition_by")
	if err != nil {
		return nil, err
	}
	for i, p := range parts {
		if p == "" {
			return nil, s.Errorf("partition_by", "an empty name")
		}
		if slices.Contains(parts[:i], p) {
			return nil, s.Errorf("partition_by", "%s is named twice", p)
		}
	}
	c.PartitionBy = parts
	roll, _, err := s.StringMap("roll")
	if err != nil {
		return nil, err
	}
	for k, v := range roll {
		switch k {
		case "size":
			n, err := parseSize(v)
			if err != nil || n < 1<<10 {
				return nil, s.Errorf("roll", "size: expected a size of 1KiB or more (128MB, 1GiB), got %q", v)
			}
			c.RollSize = n
		case "interval":
			d, err := mtime.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, s.Errorf("roll", "interval: expected a duration (10m, 1h), got %q", v)
			}
			c.RollInterval = time.Duration(d) * time.Millisecond
		default:
			return nil, s.Errorf("roll", "unknown setting %q; expected size or interval", k)
		}
	}
	return c, nil
}

// parseDir reads where the part files go: dir, and for object storage
// its s3 and staging settings.
func (c *Config) parseDir(s plan.Settings) error {
	raw, _, err := s.String("dir")
	if err != nil {
		return err
	}
	s3set, gave, err := s.StringMap("s3")
	if err != nil {
		return err
	}
	staging, gaveStaging, err := s.Path("staging")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(raw, "s3://") {
		switch {
		case gave:
			return s.Errorf("s3", "only for a dir of s3://bucket/prefix")
		case gaveStaging:
			return s.Errorf("staging", "only for a dir of s3://bucket/prefix")
		}
		dir, _, err := s.Path("dir")
		if err != nil {
			return err
		}
		if dir == "" {
			return s.Errorf("dir", "missing: the directory the part files go to")
		}
		c.Dir = filepath.Clean(dir)
		return nil
	}
	if c.S3, err = parseS3URL(raw); err != nil {
		return s.Errorf("dir", "%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(s3set)) {
		if err := c.S3.set(k, s3set[k]); err != nil {
			return s.Errorf("s3", "%v", err)
		}
	}
	if err := c.S3.check(); err != nil {
		return s.Errorf("s3", "%v", err)
	}
	if gaveStaging {
		c.Dir = filepath.Clean(staging)
	}
	return nil
}

// Secrets implements plan.Secreter: an S3 output's access key id, secret
// key and session token.
func (c *Config) Secrets() []string {
	if c.S3 == nil {
		return nil
	}
	return c.S3.secrets()
}

// parseSize reads a size: 128MB, 1GiB, 65536.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("bad size %q", s)
			}
			return int64(v * u.mult), nil
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// Writes implements plan.SinkConfig.
func (c *Config) Writes() string {
	if c.S3 != nil {
		return "parquet " + c.S3.URL()
	}
	return "parquet " + c.Dir
}

// Target implements plan.SinkConfig: the directory, absolute, or the
// object store's URL.
func (c *Config) Target() string {
	if c.S3 != nil {
		return c.S3.URL()
	}
	if abs, err := filepath.Abs(c.Dir); err == nil {
		return abs
	}
	return c.Dir
}

// task is the output's token in its files' names: a hash of the job's name
// and the directory, the same in every run of the job.
func (c *Config) task(job string) string {
	sum := sha256.Sum256([]byte(job + "\x00" + c.Target()))
	return hex.EncodeToString(sum[:4])
}

// New implements plan.SinkConfig.
func (c *Config) New(env plan.Env) (connector.Sink[plan.Item], error) {
	switch env.Field {
	case "late_output", "quarantine", "dead_letter":
		return nil, fmt.Errorf("a Parquet output holds panes only: give %s a file or a topic", env.Field)
	}
	return newSink(c, env)
}
