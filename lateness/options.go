package lateness

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/window"
)

// Input formats, as named by Options.Format and --input-format.
const (
	FormatJSON    = "jsonl"
	FormatCSV     = "csv"
	FormatParquet = "parquet"
	// FormatAvro is an Avro object container file, read as weir run reads
	// one (package formats).
	FormatAvro = "avro"
)

// DefaultWeightField is the weight field used when Options.Weight is empty:
// the column of a weighted sample. A CSV or Parquet file uses it when it has
// the column; JSON lines use it on every line that has the field.
const DefaultWeightField = "sample_weight"

// DefaultDelays are the watermark delays of Table 1: none, 2 s,
// 5 min, 1 h, 3 h and 6 h.
var DefaultDelays = []time.Duration{0, 2 * time.Second, 5 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour}

// DefaultLateness are the allowed latenesses tried for the recommended delay.
var DefaultLateness = []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 6 * time.Hour}

// Defaults of the other options.
const (
	DefaultWindow  = time.Minute
	DefaultTarget  = 0.001 // 0.1% of the events too late
	DefaultMaxWait = time.Hour
	// MaxGroups is the number of distinct values of a --by field that get a
	// row of their own; the rest are reported together as "(other)".
	MaxGroups = 1000
)

// Options say how to read a recorded stream and what to measure. The zero
// value of every field but the input's is its default.
type Options struct {
	// Format is FormatJSON, FormatCSV or FormatParquet; empty: from the file
	// name (.jsonl, .json, .ndjson, .csv, .parquet; anything else is read
	// as JSON lines, like weir run does).
	Format string
	// TimeField and ArrivalField name the event time and the arrival time
	// (processing time) of each event, dotted for a nested JSON field
	// ("meta.ts"); defaults "ts" and "arrival". For CSV, the dotted name is
	// the header of the column.
	TimeField, ArrivalField string
	// SentField, when set, is the send time of each event on the device's
	// clock (a job's time.sent_field): the event time is corrected by it,
	// as weir run corrects it (package linedec).
	SentField string
	// PartitionField, when set, gives each input partition its own
	// watermark, combined by minimum, as weir run does with
	// time.partition_field; Idle is the watermark's idleness timeout.
	PartitionField string
	Idle           time.Duration
	// Idles are the idle timeouts to replay a stream with partitions with
	// (Report.Idle); default: derived from its quiet gaps.
	Idles []time.Duration
	// MaxFuture, when positive, rejects events more than this far ahead of
	// their arrival, as weir run's max_future does.
	MaxFuture time.Duration
	// WatermarkField, when set, names the field of a watermark line, as a
	// job's watermark.from_field does: a JSON line with it and no event
	// time only moves a scripted watermark, and is counted as a watermark
	// line (Report.WatermarkLines), neither an event nor rejected.
	WatermarkField string
	// Weight names a numeric field saying how many real events each line
	// stands for (a sample's weight); every line must have it. Empty:
	// DefaultWeightField when a CSV or Parquet file has that column (a row
	// whose cell is not a non-negative number is rejected as bad_weight),
	// and in JSON lines wherever a line has that field (a line without it
	// weighs 1; one whose field is not a non-negative number is rejected);
	// else every line weighs 1. Shares are sums of weights.
	Weight string
	// NoWeight ignores any weight column: every line weighs 1.
	NoWeight bool
	// By lists fields to group the travel times by (platform, event_name).
	By []string
	// Periods, two or more, compare spans of event time: the travel times
	// grouped by period (a grouping "period" of Report.By, in this order)
	// and Table 1 of each (Report.Periods). An event counts in every
	// period that holds its event time.
	Periods []Period
	// Latest, when positive, lists that many of the latest events: those
	// with the longest travel times, the latest first (Report.Latest).
	Latest int
	// Window is the size of the tumbling windows replayed (default 1 min).
	Window time.Duration
	// Delays are the watermark delays of Table 1 (default DefaultDelays);
	// 0 is "none".
	Delays []time.Duration
	// Lateness are the allowed latenesses tried for the recommendation
	// (default DefaultLateness).
	Lateness []time.Duration
	// Target is the largest share of too-late events acceptable, as a
	// fraction (default 0.001, 0.1%).
	Target float64
	// MaxWait is the longest a result may wait after its window ends:
	// delays above it are never recommended (default 1 h).
	MaxWait time.Duration
	// EstimateState asks for the state a job would keep (Report.State):
	// its distinct keys (the values of the Key fields, one global key
	// without them) times the open windows a key holds at most, times
	// BytesPerKeyWindow. FromJob sets it, with Key and the job's backend.
	EstimateState bool
	// Key are the fields of the job's key (several: a composite key).
	Key []string
	// StateBackend and MemoryBudget are the job's state: (memory or
	// pebble) and its memory_budget in bytes (0: not set).
	StateBackend string
	MemoryBudget int64
	// ID and DedupHorizon are the job's de-duplication: the id field and
	// how long an id is remembered. With EstimateState, the estimate adds
	// the ids the job holds at most (State.DedupIDsPeak).
	ID           string
	DedupHorizon time.Duration
}

// UsageError is a problem with the options or the input that is the caller's
// to fix (a missing file, an unknown column, a bad flag value): the command
// exits 2 for it. Its message is one line.
type UsageError struct{ Msg string }

// Error returns the message.
func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// IsUsage reports whether err is a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// FromJob fills in what a job file says about its input: the event-time,
// arrival and partition fields, the field of its watermark lines, the
// idleness of the watermark, max_future, and the window size when the job's
// windows are tumbling. Fields already set in o are kept, except the time
// fields, which the job always names.
func FromJob(o Options, j *jobfile.Job) (Options, error) {
	if len(j.ArrivalField) == 0 {
		return o, usagef("%s has no time.arrival_field: weir lateness needs the arrival time of every event", j.File)
	}
	if j.Ingestion || j.RecordTime {
		return o, usagef("%s takes its events' time from their arrival or their record (time.ingestion, time.record_timestamp): weir lateness measures an event-time field against the arrival; name it with --time", j.File)
	}
	o.TimeField = j.TimeField.String()
	o.ArrivalField = j.ArrivalField.String()
	o.SentField = j.SentField.String()
	if j.WMField != nil {
		o.WatermarkField = j.WMField.String()
	}
	if o.PartitionField == "" {
		o.PartitionField = j.PartitionField.String()
	}
	if o.Idle == 0 {
		o.Idle = time.Duration(j.Watermark.Idle) * time.Millisecond
	}
	if o.MaxFuture == 0 {
		o.MaxFuture = time.Duration(j.MaxFuture) * time.Millisecond
	}
	o.EstimateState = true
	o.Key = nil
	if j.KeyParts != nil {
		for _, k := range j.KeyParts {
			o.Key = append(o.Key, k.String())
		}
	} else if j.Key != nil {
		o.Key = []string{j.Key.String()}
	}
	o.StateBackend, o.MemoryBudget = j.State.Backend, j.State.MemoryBudget
	o.ID, o.DedupHorizon = "", 0
	if j.ID != nil {
		o.ID, o.DedupHorizon = j.ID.String(), time.Duration(j.DedupHorizon)*time.Millisecond
	}
	if t, ok := j.Window.Assigner.(window.Tumbling); ok && o.Window == 0 && t.Offset == 0 {
		o.Window = time.Duration(t.Size) * time.Millisecond
	}
	return o, nil
}

// config is Options resolved against an input.
type config struct {
	Options
	path   string
	format string
	timeP  []string
	arrP   []string
	// times are weir run's rules for the times of a line (package
	// linedec), with the fields above.
	times   linedec.Rules
	partP   []string
	weightP []string // nil: no weight field required
	// defWeight: JSON lines with no weight named read DefaultWeightField
	// where a line has it.
	defWeight bool
	// Match and matchP name the id of a ledger join, read after the
	// partition; ledger says the input is the ledger (TimeField is the
	// entry time, and ArrivalField the same field).
	Match    string
	matchP   []string
	ledger   bool
	byP      [][]string // the --by fields, then the key fields, then the id
	nBy      int        // the --by fields of byP
	idAt     int        // the index of the id field in byP; -1: none
	periods  []timeSpan
	window   window.Tumbling
	delays   []mtime.Time
	lateness []mtime.Time
	maxWait  mtime.Time
	idle     mtime.Time
	future   mtime.Time
}

// groupFields are the fields read like groups, in the order of byP: the
// --by fields, then the key's; what names each in a message.
func (c *config) groupFields() (names, what []string) {
	for i, p := range c.byP {
		names = append(names, strings.Join(p, "."))
		what = append(what, "--by")
		if i == c.idAt {
			what[i] = "the id"
		} else if i >= c.nBy {
			what[i] = "the key"
		}
	}
	return names, what
}

// timeWhat names the time field in messages.
func (c *config) timeWhat() string {
	if c.ledger {
		return "the entry time (--ledger-time)"
	}
	return "the event time"
}

// weightName is the weight field read: the one named, or the default.
func (c *config) weightName() string {
	if c.Weight != "" {
		return c.Weight
	}
	return DefaultWeightField
}

func splitPath(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

// FormatOf is the input format of a file name: by its extension, JSON lines
// when it says nothing.
func FormatOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return FormatCSV
	case ".parquet", ".parq", ".pq":
		return FormatParquet
	case ".avro":
		return FormatAvro
	}
	return FormatJSON
}

func (o Options) resolve(path string) (*config, error) {
	c := &config{Options: o, path: path}
	c.format = o.Format
	if c.format == "" {
		c.format = FormatOf(path)
	}
	switch c.format {
	case FormatJSON, "json", "ndjson":
		c.format = FormatJSON
	case FormatCSV, FormatParquet, FormatAvro:
	default:
		return nil, usagef("unknown input format %q: want jsonl, csv, parquet or avro", o.Format)
	}
	if (c.format == FormatParquet || c.format == FormatAvro) && path == "-" {
		return nil, usagef("a %s file cannot be read from standard input", formatNames[c.format])
	}
	if c.TimeField == "" {
		c.TimeField = "ts"
	}
	if c.ArrivalField == "" {
		c.ArrivalField = "arrival"
	}
	c.timeP, c.arrP, c.partP = splitPath(c.TimeField), splitPath(c.ArrivalField), splitPath(c.PartitionField)
	if o.Weight != "" && o.NoWeight {
		return nil, usagef("choose one of a weight field and no weight")
	}
	c.weightP = splitPath(o.Weight)
	c.defWeight = c.format == FormatJSON && o.Weight == "" && !o.NoWeight
	for _, b := range o.By {
		if b == "" {
			return nil, usagef("an empty --by field")
		}
		c.byP = append(c.byP, splitPath(b))
	}
	// The key fields are read after the --by fields, as more of them, and
	// counted rather than reported.
	c.nBy = len(c.byP)
	c.idAt = -1
	if o.EstimateState {
		for _, k := range o.Key {
			if k == "" {
				return nil, usagef("an empty key field")
			}
			c.byP = append(c.byP, splitPath(k))
		}
		if o.ID != "" {
			if o.DedupHorizon <= 0 {
				return nil, usagef("a de-duplication horizon must be positive, got %v", o.DedupHorizon)
			}
			c.idAt = len(c.byP)
			c.byP = append(c.byP, splitPath(o.ID))
		}
	}
	if err := c.resolvePeriods(); err != nil {
		return nil, err
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Window < time.Millisecond {
		return nil, usagef("the window must be at least 1ms, got %v", c.Window)
	}
	c.window = window.TumblingWindows(c.Window)
	ds := o.Delays
	if len(ds) == 0 {
		ds = DefaultDelays
	}
	for _, d := range ds {
		if d < 0 {
			return nil, usagef("a watermark delay must not be negative, got %v", d)
		}
		c.delays = append(c.delays, mtime.Millis(d))
	}
	slices.Sort(c.delays)
	c.delays = slices.Compact(c.delays)
	ls := o.Lateness
	if ls == nil {
		ls = DefaultLateness
	}
	for _, l := range ls {
		if l <= 0 {
			return nil, usagef("an allowed lateness must be positive, got %v", l)
		}
		c.lateness = append(c.lateness, mtime.Millis(l))
	}
	slices.Sort(c.lateness)
	c.lateness = slices.Compact(c.lateness)
	if c.Target == 0 {
		c.Target = DefaultTarget
	}
	if c.Target < 0 || c.Target >= 1 {
		return nil, usagef("the target must be a share between 0 and 1 (0.001 is 0.1%%), got %v", c.Target)
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.MaxWait < 0 {
		return nil, usagef("the longest wait must not be negative")
	}
	for _, d := range c.Idles {
		if d <= 0 {
			return nil, usagef("an idle timeout must be positive, got %v", d)
		}
	}
	if c.Idle < 0 || c.MaxFuture < 0 {
		return nil, usagef("idleness and max_future must not be negative")
	}
	c.maxWait, c.idle, c.future = mtime.Millis(c.MaxWait), mtime.Millis(c.Idle), mtime.Millis(c.MaxFuture)
	c.times = linedec.Rules{Time: c.timeP, Arrival: c.arrP, Sent: splitPath(c.SentField), MaxFuture: c.future}
	if c.format == FormatJSON {
		c.times.Watermark = splitPath(c.WatermarkField)
	}
	return c, nil
}
