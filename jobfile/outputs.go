package jobfile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"go.yaml.in/yaml/v3"
)

// Output is one place results, too-late events or rejected lines go.
type Output struct {
	// Field is the job-file field, for errors: "output", "output[1]",
	// "late_output", "quarantine".
	Field string
	Line  int
	// File is a path, or "-" for standard output; empty for the other
	// kinds.
	File  string
	Kafka *KafkaOutput
	// Table is an SQLite or PostgreSQL table (results only).
	Table *TableOutput
	// Custom is an output of a kind registered in package plan.
	Custom *CustomOutput
}

// TableOutput is a table results are upserted into.
type TableOutput struct {
	// Driver is "sqlite" or "postgres".
	Driver string
	// Path is the SQLite database file (absolute); DSN the PostgreSQL
	// connection string, as the job file gives it (a URL or key=value
	// settings), variables expanded and escaped, with the password given
	// apart (password:) put in. It holds a secret: show it only through
	// Job.Redact.
	Path, DSN string
	// Table is the table's name; KeyColumn the name of the key's column
	// (the key field's name, dots made underscores, when the file does not
	// say); KeyColumns those of a composite key's fields.
	Table, KeyColumn string
	KeyColumns       []string
}

// Kind names the output's kind in messages.
func (o *Output) Kind() string { return o.Destination().Writes() }

// KafkaConn is how a job reaches a Kafka cluster.
type KafkaConn = kafka.Config

// KafkaOutput writes to a topic.
type KafkaOutput struct {
	KafkaConn
	// Delivery is exactly_once (the default with checkpoints: a
	// transaction per checkpoint) or at_least_once.
	Delivery           connector.Guarantee
	DeliverySet        bool
	TransactionTimeout mtime.Time
	TimeoutSet         bool // transaction_timeout was given
	RestartBudget      mtime.Time
	// Create creates the topic when it does not exist (compacted when it
	// gets the results' revisions); without it a missing topic is refused.
	Create bool
	// Format is the records' format: "" for JSON; "json_schema": the
	// same JSON in the registry's framing (formats.JSONSchemaPanes);
	// "avro" or "protobuf": a pane's key and value as Avro records or
	// Protobuf messages in the framing of the schema registry Registry,
	// their schemas registered under the subjects Subjects names
	// (formats.AvroPanes, formats.ProtobufPanes).
	Format   string
	Registry *plan.Registry
	Subjects formats.SubjectStrategy
}

// KafkaInput reads a topic.
type KafkaInput struct {
	KafkaConn
	Start kafka.Start
	// Group, when set, makes the job one instance of a consumer group:
	// the instances share the topic's partitions, each partition a task
	// with its own state, kept in the Changelog topic.
	Group     string
	Changelog string
	// Repartition: the topic is not keyed by the job's key; the instances
	// first copy it into a repartition topic keyed by it.
	Repartition bool
	// Standby is how many other instances keep each task's changelog read
	// (0 or 1), so that a takeover reads only what came since.
	Standby int
	// Threads is how many threads (Kafka clients) an instance's tasks
	// share (0: as many as cores).
	Threads int
	// SessionTimeout is how long the group waits for an instance that
	// stopped answering before it moves its partitions.
	SessionTimeout mtime.Time
	// SkipGaps (on_gap: skip) goes on past records deleted before they
	// were read, counting them as lost, instead of stopping.
	SkipGaps bool
}

// Grouped reports whether the job is an instance of a consumer group.
func (j *Job) Grouped() bool { return j.Kafka != nil && j.Kafka.Group != "" }

// DefaultTransactionTimeout is a Kafka sink's transaction timeout when the
// job file does not say: 15 minutes, the brokers' default maximum
// (transaction.max.timeout.ms).
const DefaultTransactionTimeout mtime.Time = 15 * 60_000

// DefaultRestartBudget is how long a restart of an exactly-once Kafka job
// may take, when the job file does not say: the transaction a checkpoint
// recorded must outlive the checkpoint interval and the restart.
const DefaultRestartBudget mtime.Time = 5 * 60_000

// DefaultGroupTransactionTimeout is a consumer-group job's transaction
// timeout when the job file does not say: a minute. The partition's next
// owner aborts a dead owner's open transaction when it takes the partition
// over; the timeout only bounds how long read_committed readers wait when
// no instance is left to take it.
const DefaultGroupTransactionTimeout mtime.Time = 60_000

// kafkaConn reads the connection settings of a kafka mapping.
func (p *parser) kafkaConn(k *node, field string, c *KafkaConn) error {
	bn := k.get("brokers")
	switch {
	case bn == nil:
		return k.errf(nil, field+".brokers", "missing: the brokers to start from, e.g. brokers: [localhost:9092]")
	case bn.Kind == yaml.ScalarNode && bn.Value != "":
		c.Brokers = strings.Split(bn.Value, ",")
	case bn.Kind == yaml.SequenceNode:
		for _, b := range bn.Content {
			if b.Kind != yaml.ScalarNode || b.Value == "" {
				return k.errf(b, field+".brokers", "expected host:port")
			}
			c.Brokers = append(c.Brokers, b.Value)
		}
	}
	if len(c.Brokers) == 0 {
		return k.errf(bn, field+".brokers", "expected a list of host:port")
	}
	strs := []struct {
		name string
		dst  *string
	}{
		{"topic", &c.Topic}, {"client.id", &c.ClientID}, {"security.protocol", &c.SecurityProtocol},
		{"sasl.mechanism", &c.SASLMechanism}, {"sasl.username", &c.SASLUsername}, {"sasl.password", &c.SASLPassword},
		{"ssl.ca.location", &c.SSLCALocation}, {"ssl.certificate.location", &c.SSLCertificateLocation}, {"ssl.key.location", &c.SSLKeyLocation},
	}
	for _, s := range strs {
		v, _, err := k.str(s.name)
		if err != nil {
			return err
		}
		*s.dst = v
	}
	for _, f := range []*string{&c.SSLCALocation, &c.SSLCertificateLocation, &c.SSLKeyLocation} {
		if *f != "" {
			*f = p.resolve(*f)
		}
	}
	if c.Topic == "" {
		return k.errf(k.get("topic"), field+".topic", "missing: the topic")
	}
	if err := c.Validate(); err != nil {
		name, msg, _ := strings.Cut(err.Error(), ": ")
		return k.errf(k.get(name), field+"."+name, "%s", msg)
	}
	return nil
}

// output reads one output: a path or a mapping of its kind.
func (p *parser) output(n *yaml.Node, field string, o *Output) error {
	o.Field, o.Line = field, n.Line
	if n.Kind == yaml.ScalarNode {
		if n.Value == "" || n.Tag == "!!null" {
			return &Error{File: p.file, Line: n.Line, Field: field, Msg: "missing: a file, - for standard output, or {kafka: {...}}"}
		}
		o.File = p.resolve(n.Value)
		return nil
	}
	m, err := asMapping(p.file, field, n)
	if err != nil {
		return err
	}
	if err := m.strict(outputKindNames()...); err != nil {
		return err
	}
	kinds := 0
	names := []string{"file", "kafka", "sqlite", "postgres"}
	for _, k := range plan.SinkKinds() {
		if m.get(k.Name) != nil {
			names = append(names, k.Name) // named here: said too
		}
	}
	for _, k := range names {
		if m.get(k) != nil {
			kinds++
		}
	}
	if kinds > 1 {
		return m.errf(nil, field, "choose one of %s and %s", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	}
	if m.get("kafka") == nil {
		// Only a Kafka output writes a format other than its kind's own.
		if err := p.outputFormat(m, field, o); err != nil {
			return err
		}
	}
	if name, k, ok := registeredKind(m, plan.LookupSink); ok {
		return p.customOutput(m, field, name, k, o)
	}
	for _, driver := range []string{"sqlite", "postgres"} {
		if m.get(driver) != nil {
			return p.tableOutput(m, field, driver, o)
		}
	}
	if f, fn, err := m.str("file"); err != nil {
		return err
	} else if fn != nil {
		if f == "" {
			return m.errf(fn, field+".file", "missing: the file")
		}
		o.File = p.resolve(f)
	}
	if m.get("kafka") != nil {
		k, err := m.sub("kafka")
		if err != nil {
			return err
		}
		if err := k.strict(kafkaOutputShape.names()...); err != nil {
			return err
		}
		ko := &KafkaOutput{TransactionTimeout: DefaultTransactionTimeout, RestartBudget: DefaultRestartBudget}
		if err := p.kafkaConn(k, field+".kafka", &ko.KafkaConn); err != nil {
			return err
		}
		d, dn, err := k.str("delivery")
		if err != nil {
			return err
		}
		switch d {
		case "":
		case "exactly_once":
			ko.Delivery, ko.DeliverySet = connector.ExactlyOnce, true
		case "at_least_once":
			ko.Delivery, ko.DeliverySet = connector.AtLeastOnce, true
		default:
			return k.errf(dn, field+".kafka.delivery", "expected exactly_once or at_least_once, got %q", d)
		}
		for _, f := range []struct {
			name string
			dst  *mtime.Time
		}{{"transaction_timeout", &ko.TransactionTimeout}, {"restart_budget", &ko.RestartBudget}} {
			if v, ok, err := k.duration(f.name); err != nil {
				return err
			} else if ok {
				if v <= 0 {
					return k.errf(k.get(f.name), field+".kafka."+f.name, "must be a positive duration")
				}
				*f.dst = v
				ko.TimeoutSet = ko.TimeoutSet || f.name == "transaction_timeout"
			}
		}
		if ko.Create, err = k.boolean("create"); err != nil {
			return err
		}
		o.Kafka = ko
	}
	if o.Kafka != nil {
		if err := p.outputFormat(m, field, o); err != nil {
			return err
		}
	}
	if o.File == "" && o.Kafka == nil {
		return m.errf(nil, field, "missing: say where it goes, e.g. {file: results.jsonl}, {sqlite: {path: results.db, table: results}} or {kafka: {brokers: [localhost:9092], topic: alerts}}")
	}
	return nil
}

// outputFormat reads the format of an output's records (format, registry,
// subject_name_strategy): JSON unless a Kafka output of results says avro.
func (p *parser) outputFormat(m *node, field string, o *Output) error {
	name, n, err := m.str("format")
	if err != nil {
		return err
	}
	if name == "" || name == "json" {
		for _, f := range []string{"registry", "subject_name_strategy"} {
			if m.get(f) != nil {
				return m.errf(m.get(f), field+"."+f, "belongs to the format of a Kafka output: give format: avro, protobuf or json_schema")
			}
		}
		return nil
	}
	switch {
	case name != "avro" && name != "protobuf" && name != "json_schema":
		return m.errf(n, field+".format", "unknown format %q; an output writes json, avro, protobuf or json_schema", name)
	case o.Kafka == nil:
		return m.errf(n, field+".format", "format %s is for a Kafka output; a file holds JSON lines, a table columns", name)
	case field != "output" && !strings.HasPrefix(field, "output["):
		return m.errf(n, field+".format", "format %s is for the results' outputs; %s is written as JSON", name, field)
	}
	reg, err := registrySettings(m, field, []string{"url", "username", "password", "token"})
	if err != nil {
		return err
	}
	if reg == nil {
		return m.errf(nil, field+".registry", "missing: the schema registry the %s schemas are registered in, e.g. registry: {url: http://127.0.0.1:8081}", map[string]string{"avro": "Avro", "protobuf": "Protobuf", "json_schema": "JSON"}[name])
	}
	strategy, sn, err := m.str("subject_name_strategy")
	if err != nil {
		return err
	}
	switch s := formats.SubjectStrategy(strategy); s {
	case "", formats.TopicName, formats.RecordName, formats.TopicRecordName:
		o.Kafka.Subjects = s
	default:
		return m.errf(sn, field+".subject_name_strategy", "expected topic_name, record_name or topic_record_name, got %q", strategy)
	}
	o.Kafka.Format, o.Kafka.Registry = name, reg
	return nil
}

// outputs reads output (one or a list), late_output, quarantine and
// summary, and checks that no two of them are one file or standard output
// twice.
func (p *parser) outputs(root *node, j *Job) error {
	n := root.get("output")
	if n == nil || (n.Kind == yaml.ScalarNode && (n.Value == "" || n.Tag == "!!null")) {
		return root.errf(n, "output", "missing: where results go, a file or - for standard output")
	}
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			return root.errf(n, "output", "an empty list: say where results go")
		}
		for i, c := range n.Content {
			var o Output
			if err := p.output(c, fmt.Sprintf("output[%d]", i), &o); err != nil {
				return err
			}
			j.Outputs = append(j.Outputs, o)
		}
	} else {
		var o Output
		if err := p.output(n, "output", &o); err != nil {
			return err
		}
		j.Outputs = []Output{o}
	}
	for _, f := range []struct {
		name string
		dst  **Output
	}{{"late_output", &j.Late}, {"quarantine", &j.Rejects}, {"dead_letter", &j.DeadLetter}} {
		v := root.get(f.name)
		if v == nil || v.Kind == yaml.ScalarNode && v.Value == "" {
			continue
		}
		o := &Output{}
		if err := p.output(v, f.name, o); err != nil {
			return err
		}
		*f.dst = o
	}
	if s, sn, err := root.str("acceptance"); err != nil {
		return err
	} else if s != "" {
		if !strings.HasSuffix(s, ".json") {
			return root.errf(sn, "acceptance", "expected a .json file (the Markdown goes beside it), got %q", s)
		}
		j.Acceptance = p.resolve(s)
		j.lines["acceptance"] = sn.Line
	}
	if s, sn, err := root.str("summary"); err != nil {
		return err
	} else if s != "" {
		j.Summary = p.resolve(s)
		j.lines["summary"] = sn.Line
	}
	if j.Late != nil && j.Late.Table != nil || j.Rejects != nil && j.Rejects.Table != nil {
		o := j.Late
		if o == nil || o.Table == nil {
			o = j.Rejects
		}
		return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: "a table holds results only: give it a file or a Kafka topic"}
	}
	return p.distinct(j)
}

// distinct refuses two of the job's places (of every aggregation, in a job
// of several) that are one: a file, a table, a topic, standard output; and
// a place that is the job's input.
func (p *parser) distinct(j *Job) error {
	stdout := ""
	seenFile := map[string]string{}
	seenTable := map[string]string{}
	seenTopic := map[string]string{}
	for _, o := range j.places() {
		switch {
		case o.File == "-":
			if stdout != "" {
				return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: fmt.Sprintf("%s already goes to standard output (-); give one of them a file", stdout)}
			}
			stdout = o.Field
		case o.File != "":
			for _, in := range j.inputFiles() {
				if in.path == o.File {
					return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: in.is() + "; it would be overwritten"}
				}
			}
			if prev, ok := seenFile[o.File]; ok {
				return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: "is the same file as " + prev}
			}
			seenFile[o.File] = o.Field
		case o.Table != nil:
			where := o.Table.Driver + ":" + o.Table.Path + o.Table.DSN + "/" + o.Table.Table
			if prev, ok := seenTable[where]; ok {
				return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: "is the same table as " + prev}
			}
			seenTable[where] = o.Field
			if o.Table.Path == "" {
				break
			}
			for _, in := range j.inputFiles() {
				if in.path == o.Table.Path {
					return &Error{File: p.file, Line: o.Line, Field: o.Field + ".sqlite.path", Msg: in.is() + "; it would be overwritten"}
				}
			}
			if prev, ok := seenFile[o.Table.Path]; ok && !strings.HasSuffix(prev, ".sqlite.path") {
				return &Error{File: p.file, Line: o.Line, Field: o.Field + ".sqlite.path", Msg: "is the same file as " + prev}
			}
			seenFile[o.Table.Path] = o.Field + ".sqlite.path"
		case o.Kafka != nil:
			t := strings.Join(o.Kafka.Brokers, ",") + "/" + o.Kafka.Topic
			if prev, ok := seenTopic[t]; ok {
				return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: "is the same topic as " + prev}
			}
			for i, in := range []*Job{j, j.joinWith()} {
				if in != nil && in.Kafka != nil && o.Kafka.Topic == in.Kafka.Topic && strings.Join(o.Kafka.Brokers, ",") == strings.Join(in.Kafka.Brokers, ",") {
					return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: []string{"is the input topic", "is the input topic of join.with"}[i] + "; weir would read its own output"}
				}
			}
			seenTopic[t] = o.Field
		}
	}
	return nil
}

// places are every place the job writes to: every output of every
// aggregation (EveryOutput), then each aggregation's summary and
// acceptance record (JSON and Markdown), as outputs of their field.
func (j *Job) places() []*Output {
	var all []*Output
	for _, o := range j.EveryOutput() {
		all = append(all, o)
	}
	for _, a := range j.Aggregations() {
		if a.Summary != "" {
			all = append(all, &Output{Field: a.FieldName("summary"), Line: a.lines["summary"], File: a.Summary})
		}
		if a.Acceptance != "" {
			field, line := a.FieldName("acceptance"), a.lines["acceptance"]
			all = append(all, &Output{Field: field, Line: line, File: a.Acceptance}, &Output{Field: field, Line: line, File: AcceptanceMarkdown(a.Acceptance)})
		}
	}
	return all
}

// AllOutputs is every output of the job: the results', then the late
// events' and the rejected lines', when they have one.
func (j *Job) AllOutputs() []*Output {
	var all []*Output
	for i := range j.Outputs {
		all = append(all, &j.Outputs[i])
	}
	for _, o := range []*Output{j.Late, j.Rejects, j.DeadLetter} {
		if o != nil {
			all = append(all, o)
		}
	}
	return all
}

// checkAvroNames checks that every field of the panes an avro or
// protobuf output writes can be a field of its records: the aggregates'
// names and a composite key's fields (dots made underscores), and, for
// Protobuf, the NAME_exact field of a number beside the others.
func (p *parser) checkAvroNames(j *Job) error {
	for _, o := range j.AllOutputs() {
		if o.Kafka == nil || o.Kafka.Format != "avro" && o.Kafka.Format != "protobuf" {
			continue
		}
		format, what := o.Kafka.Format, map[string]string{"avro": "an Avro field", "protobuf": "a Protobuf field"}[o.Kafka.Format]
		shape := j.PaneShape()
		for _, k := range shape.Keys {
			if !formats.AvroName(k) {
				return &Error{File: p.file, Line: o.Line, Field: "key",
					Msg: fmt.Sprintf("%s writes %s, and the key's field %q is not a name %s can have (letters, digits and _, not beginning with a digit): rename it with fields:", o.Field, format, k, what)}
			}
		}
		for _, a := range shape.Aggregates {
			if !formats.AvroName(a.Name) {
				return &Error{File: p.file, Line: o.Line, Field: "aggregates." + a.Name,
					Msg: fmt.Sprintf("%s writes %s, and %q is not a name %s can have (letters, digits and _, not beginning with a digit): rename it", o.Field, format, a.Name, what)}
			}
			if format != "protobuf" || a.Type != plan.Number {
				continue
			}
			for _, b := range shape.Aggregates {
				if b.Name == a.Name+"_exact" {
					return &Error{File: p.file, Line: o.Line, Field: "aggregates." + b.Name,
						Msg: fmt.Sprintf("%s writes protobuf, where %s's exact text is the field %s: rename the aggregate %s", o.Field, a.Name, b.Name, b.Name)}
				}
			}
		}
	}
	return nil
}

// checkDelivery applies the rules of exactly-once Kafka output, once the
// checkpoint settings are known: a transaction needs checkpoints to commit
// at, and must outlive the checkpoint interval and a restart.
func (p *parser) checkDelivery(j *Job) error {
	for _, o := range j.AllOutputs() {
		k := o.Kafka
		if k == nil {
			continue
		}
		if j.Grouped() {
			if k.DeliverySet && k.Delivery != connector.ExactlyOnce {
				return &Error{File: p.file, Line: o.Line, Field: o.Field + ".kafka.delivery",
					Msg: "a job in a consumer group writes exactly once: a task's output, state and input positions are one transaction"}
			}
			if !slices.Equal(k.Brokers, j.Kafka.Brokers) {
				return &Error{File: p.file, Line: o.Line, Field: o.Field + ".kafka.brokers",
					Msg: "a job in a consumer group writes to the cluster it reads (source.kafka.brokers): a transaction spans one cluster"}
			}
			k.Delivery = connector.ExactlyOnce
			if !k.TimeoutSet {
				k.TransactionTimeout = DefaultGroupTransactionTimeout
			}
			if k.TransactionTimeout <= 2*j.Checkpoint.Interval {
				return &Error{File: p.file, Line: o.Line, Field: o.Field + ".kafka.transaction_timeout",
					Msg: fmt.Sprintf("%s must exceed twice checkpoint.interval (%s): a transaction stays open until its checkpoint commits",
						mtime.FormatDuration(k.TransactionTimeout), mtime.FormatDuration(j.Checkpoint.Interval))}
			}
			continue
		}
		if !k.DeliverySet {
			k.Delivery = connector.AtLeastOnce
			if j.Checkpoint.Dir != "" {
				k.Delivery = connector.ExactlyOnce
			}
		}
		if k.Delivery != connector.ExactlyOnce {
			continue
		}
		if j.Checkpoint.Dir == "" {
			return &Error{File: p.file, Line: o.Line, Field: o.Field + ".kafka.delivery",
				Msg: "exactly_once needs checkpoint.dir: the records of a checkpoint are committed in one transaction when it is durable"}
		}
		if k.TransactionTimeout <= j.Checkpoint.Interval+k.RestartBudget {
			return &Error{File: p.file, Line: o.Line, Field: o.Field + ".kafka.transaction_timeout",
				Msg: fmt.Sprintf("%s must exceed checkpoint.interval (%s) plus the restart budget (%s): otherwise a transaction can expire before its checkpoint commits it, and its output is lost",
					mtime.FormatDuration(k.TransactionTimeout), mtime.FormatDuration(j.Checkpoint.Interval), mtime.FormatDuration(k.RestartBudget))}
		}
	}
	return nil
}

// Destination is what an output's kind says of where it writes. Each kind
// (a file, standard output, a Kafka topic, a table, a kind registered in
// package plan) answers in one place, so that no rule of the job's outputs
// lists the kinds: a new kind is a new implementation.
type Destination interface {
	// Connector names the kind as a plan shows it: file, stdout, kafka,
	// sqlite, postgres, or a registered kind's name.
	Connector() string
	// Writes says where the output writes, as messages name it.
	Writes() string
	// Target names where it writes, in the name of its commit record in
	// checkpoints; rel makes a path relative to the job file's directory
	// when it can.
	Target(rel func(path string) string) string
}

// Role is what the output writes: "results" (the panes, output:), or its
// field, late_output, quarantine or dead_letter.
func (o *Output) Role() string {
	// An aggregation's late output is aggregations.NAME.late_output.
	f := o.Field[strings.LastIndexByte(o.Field, '.')+1:]
	switch f {
	case "late_output", "quarantine", "dead_letter":
		return f
	}
	return "results"
}

// Destination is the output's kind: the one place that reads which of its
// settings' fields is set.
func (o *Output) Destination() Destination {
	switch {
	case o.Custom != nil:
		return o.Custom
	case o.Kafka != nil:
		return o.Kafka
	case o.Table != nil:
		return o.Table
	case o.File == "-":
		return StdoutDestination{}
	}
	return FileDestination(o.File)
}

// FileDestination is an output to a file, by its path.
type FileDestination string

// Connector implements Destination.
func (f FileDestination) Connector() string { return "file" }

// Writes implements Destination.
func (f FileDestination) Writes() string { return string(f) }

// Target implements Destination.
func (f FileDestination) Target(rel func(string) string) string { return "file:" + rel(string(f)) }

// StdoutDestination is an output to standard output.
type StdoutDestination struct{}

// Connector implements Destination.
func (StdoutDestination) Connector() string { return "stdout" }

// Writes implements Destination.
func (StdoutDestination) Writes() string { return "standard output" }

// Target implements Destination.
func (StdoutDestination) Target(func(string) string) string { return "stdout" }

// Connector implements Destination.
func (k *KafkaOutput) Connector() string { return "kafka" }

// Writes implements Destination.
func (k *KafkaOutput) Writes() string {
	if k.Format != "" {
		return "kafka topic " + k.Topic + " (" + k.Format + ")"
	}
	return "kafka topic " + k.Topic
}

// Target implements Destination.
func (k *KafkaOutput) Target(func(string) string) string { return "kafka:" + k.Topic }

// Connector implements Destination.
func (t *TableOutput) Connector() string { return t.Driver }

// Writes implements Destination.
func (t *TableOutput) Writes() string {
	if t.Driver == "sqlite" {
		return "table " + t.Table + " in " + t.Path
	}
	return "postgres table " + t.Table
}

// Target implements Destination.
func (t *TableOutput) Target(rel func(string) string) string {
	if t.Driver == "sqlite" {
		return "sqlite:" + rel(t.Path) + "#" + t.Table
	}
	return "postgres:" + t.Table
}

// Connector implements Destination.
func (c *CustomOutput) Connector() string { return c.Kind }

// Writes implements Destination.
func (c *CustomOutput) Writes() string { return c.Config.Writes() }

// Target implements Destination.
func (c *CustomOutput) Target(func(string) string) string { return c.Kind + ":" + c.Config.Target() }
