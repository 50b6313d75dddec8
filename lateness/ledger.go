package lateness

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/weirstream/weir/mtime"
)

// DefaultWaits are the waits after a ledger entry at which a ledger join
// reports the share of entries whose event has arrived: 1 min, 5 min, 1 h,
// 6 h and 24 h.
var DefaultWaits = []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour}

// FlatShare is the share of the arrived events that must have come within a
// wait for a ledger join to call its curve flat from that wait on: 99.9%.
const FlatShare = 0.999

// The verdicts of a ledger join, one per group (LedgerGroup.Verdict).
const (
	// VerdictComplete: every ledger entry has its event.
	VerdictComplete = "complete"
	// VerdictLost: some entries have no event, and the arrivals stopped
	// (FlatShare of them had come) at a wait shorter than the longest:
	// the missing events are not late, they are lost.
	VerdictLost = "lost"
	// VerdictMaybeLate: some entries have no event, and events were still
	// arriving near or after the longest wait: some of the missing may be
	// late.
	VerdictMaybeLate = "maybe_late"
	// VerdictTooRecent: the arrivals stopped, but more than a tenth of the
	// entries without an event were made less than the longest wait before
	// the last arrival of the events: record the events for longer.
	VerdictTooRecent = "too_recent"
)

// LedgerOptions say which ledger to join a recorded stream to. A ledger is a
// record of what must have happened (the orders of the order database), one
// entry per line, each with an id and a time; the stream should hold one
// event per entry, with the same id.
type LedgerOptions struct {
	// Path is the ledger's file: JSON lines, CSV with a header row or
	// Parquet ("-": standard input, when the events are not read from it).
	Path string
	// Format is the ledger's format, as Options.Format; empty: from the
	// file name.
	Format string
	// Match names the id field, in both the ledger and the events (dotted
	// for nested JSON). Ids are compared as text: a string as is, a number
	// as written. An empty, null or missing id is no id.
	Match string
	// Time names the time of an entry in the ledger; empty: the events'
	// Options.TimeField ("ts" by default).
	Time string
	// Waits are the waits after an entry's time at which to report the
	// share arrived (default DefaultWaits).
	Waits []time.Duration
	// Seen, when set, is a file of other events of the same users or
	// devices (the checkout_start moments before each order), read with
	// weir run's rules as the events are, in SeenFormat (as Format). It
	// tells whether the devices of the entries that never arrived were
	// online: such an entry was seen online when Seen holds an event with
	// its SeenBy value (read from the entry) that happened at most
	// SeenWithin before the entry's time, not after it, and arrived at
	// most SeenWithin after it happened.
	Seen       string
	SeenFormat string
	// SeenBy names the user or device field, in the ledger and in Seen
	// (default "user_id").
	SeenBy string
	// SeenWithin is the window of Seen (default 2 s).
	SeenWithin time.Duration
}

// DefaultSeenWithin is the default LedgerOptions.SeenWithin: 2 s.
const DefaultSeenWithin = 2 * time.Second

// LedgerReport is what AnalyzeLedger measured: for each group (Options.By,
// read from the ledger entry, else from its event) the ledger entries, the
// share of them whose event had arrived within each wait after the entry's
// time (the event's arrival minus the entry's time), and the share whose
// event never arrived (no event with that id in the file at all). Shares
// are percentages of the group's entries; weights are not used. Its JSON
// field names are stable.
type LedgerReport struct {
	// The inputs and their fields: the events' file and format, the
	// ledger's, the id field of both, the ledger's time field, the events'
	// event time and arrival fields, the --by field (empty: none) and the
	// waits, shortest first.
	EventsFile      string  `json:"events_file"`
	EventsFormat    string  `json:"events_format"`
	LedgerFile      string  `json:"ledger_file"`
	LedgerFormat    string  `json:"ledger_format"`
	MatchField      string  `json:"match_field"`
	LedgerTimeField string  `json:"ledger_time_field"`
	TimeField       string  `json:"time_field"`
	ArrivalField    string  `json:"arrival_field"`
	ByField         string  `json:"by_field,omitempty"`
	WaitsMS         []int64 `json:"waits_ms"`

	// With LedgerOptions.Seen: its file and format, the user field and the
	// window; its lines (SeenLines = SeenEvents + SeenRejected, rejected
	// with weir run's rules), and of its events those without the user
	// field.
	SeenFile         string           `json:"seen_file,omitempty"`
	SeenFormat       string           `json:"seen_format,omitempty"`
	SeenBy           string           `json:"seen_by,omitempty"`
	SeenWithinMS     int64            `json:"seen_within_ms,omitempty"`
	SeenLines        int64            `json:"seen_lines,omitempty"`
	SeenEvents       int64            `json:"seen_events,omitempty"`
	SeenRejected     int64            `json:"seen_rejected,omitempty"`
	SeenRejectReason map[string]int64 `json:"seen_reject_reasons,omitempty"`
	SeenWithoutBy    int64            `json:"seen_events_without_by,omitempty"`

	// LedgerLines = LedgerEntries + LedgerRejected + LedgerDuplicates;
	// blank lines are not counted. A rejected line has no usable time or no
	// id (no_match_field); a duplicate repeats the id of an earlier entry,
	// and the first entry is kept.
	LedgerLines         int64            `json:"ledger_lines"`
	LedgerBlankLines    int64            `json:"ledger_blank_lines"`
	LedgerEntries       int64            `json:"ledger_entries"`
	LedgerRejected      int64            `json:"ledger_rejected"`
	LedgerRejectReasons map[string]int64 `json:"ledger_reject_reasons"`
	LedgerDuplicates    int64            `json:"ledger_duplicates"`

	// EventLines = Events + EventsRejected; lines are rejected with weir
	// run's rules (and do not count as arrived). Events = MatchedEvents +
	// UnmatchedEvents + EventsWithoutMatch.
	EventLines      int64 `json:"event_lines"`
	EventBlankLines int64 `json:"event_blank_lines"`
	// EventWatermarkLines only move a job's scripted watermark
	// (Options.WatermarkField): not counted in EventLines.
	EventWatermarkLines int64            `json:"event_watermark_lines,omitempty"`
	Events              int64            `json:"events"`
	EventsRejected      int64            `json:"events_rejected"`
	EventRejectReasons  map[string]int64 `json:"event_reject_reasons"`
	// MatchedEvents have the id of a ledger entry (duplicates included);
	// DuplicateEvents are matched events whose id had another event (the
	// first arrival counts); UnmatchedEvents have an id the ledger does not
	// hold; EventsWithoutMatch have no id.
	MatchedEvents      int64 `json:"matched_events"`
	DuplicateEvents    int64 `json:"duplicate_events"`
	UnmatchedEvents    int64 `json:"unmatched_events"`
	EventsWithoutMatch int64 `json:"events_without_match_field"`
	// LastArrival is the latest arrival among the event lines: how long
	// the events were recorded. An entry made less than the longest wait
	// before it was not watched for that long.
	LastArrival string `json:"last_arrival"`

	// All is every entry; Groups the entries by ByField, the largest first
	// (only with ByField).
	All    LedgerGroup   `json:"all"`
	Groups []LedgerGroup `json:"groups,omitempty"`

	lastArrival mtime.Time
	waits       [][]int64 // sorted waits of the arrived entries: All, then Groups
}

// LedgerGroup is the ledger entries of one group ("(all)": every entry;
// "(none)": neither the entry nor its event has the --by field; "(other)":
// the values beyond the first MaxGroups).
type LedgerGroup struct {
	Value          string  `json:"value"`
	Entries        int64   `json:"entries"`
	Arrived        int64   `json:"arrived"`
	ArrivedPercent float64 `json:"arrived_percent"`
	// Within is, for each wait, the entries whose event arrived at most
	// that long after the entry's time (an event that arrived before its
	// entry's time counts within every wait).
	Within []Within `json:"within"`
	// Later arrived, but after the longest wait.
	Later        int64   `json:"arrived_later"`
	LaterPercent float64 `json:"arrived_later_percent"`
	// NeverArrived have no event at all.
	NeverArrived        int64   `json:"never_arrived"`
	NeverArrivedPercent float64 `json:"never_arrived_percent"`
	// WatchedLess are the entries made less than the longest wait before
	// LastArrival; NeverArrivedWatchedLess those of them without an event,
	// which may still come.
	WatchedLess             int64 `json:"entries_watched_less"`
	NeverArrivedWatchedLess int64 `json:"never_arrived_watched_less"`
	// ArrivedBeforeEntry are the arrived entries whose event arrived before
	// the entry's time (clocks apart, or the entry written late).
	ArrivedBeforeEntry int64 `json:"arrived_before_entry"`
	// The wait of the arrived entries: median, 99th percentile, longest;
	// nil when none arrived.
	WaitP50MS *int64 `json:"wait_p50_ms"`
	WaitP99MS *int64 `json:"wait_p99_ms"`
	WaitMaxMS *int64 `json:"wait_max_ms"`
	// DuplicateEvents of the group's entries; UnmatchedEvents with the
	// group's value (read from the event), which count in no share.
	DuplicateEvents int64 `json:"duplicate_events"`
	UnmatchedEvents int64 `json:"unmatched_events"`
	// FlatWithinMS is the shortest wait of the list within which FlatShare
	// of the arrived entries had arrived; nil if none.
	FlatWithinMS *int64 `json:"flat_within_ms"`
	// With LedgerOptions.Seen: of the entries that never arrived, those
	// seen online (an event of the same user in Seen moments before, that
	// arrived promptly), their share of the never arrived, and those whose
	// entry has no user to look for.
	NeverArrivedSeenOnline        int64   `json:"never_arrived_seen_online,omitempty"`
	NeverArrivedSeenOnlinePercent float64 `json:"never_arrived_seen_online_percent,omitempty"`
	NeverArrivedWithoutBy         int64   `json:"never_arrived_without_by,omitempty"`
	// Online says it in a sentence; empty without Seen or without an entry
	// that never arrived.
	Online string `json:"online,omitempty"`
	// Verdict is one of the Verdict constants, empty without entries;
	// Conclusion says it in a sentence.
	Verdict    string `json:"verdict"`
	Conclusion string `json:"conclusion"`
}

// Within is the entries whose event arrived within one wait.
type Within struct {
	Label   string `json:"label"`
	WaitMS  int64  `json:"wait_ms"`
	Arrived int64  `json:"arrived"`
	// Percent is of the entries, PercentOfArrived of those that arrived.
	Percent          float64 `json:"percent"`
	PercentOfArrived float64 `json:"percent_of_arrived"`
}

// AnalyzeLedger joins the recorded stream at events ("-": standard input) to
// a ledger by id, and measures, for each entry, when its event arrived, if
// ever. Of o it uses the input format, the time, arrival and max_future
// fields (the events are read with weir run's rules, as Analyze reads them),
// and at most one By field; weights are not used. The ledger is held in
// memory (an id, a time and a group per entry); the events are streamed.
// Problems with the options or the inputs are *UsageError.
func AnalyzeLedger(events string, o Options, l LedgerOptions) (*LedgerReport, error) {
	return AnalyzeLedgerFrom(events, os.Stdin, o, l)
}

// AnalyzeLedgerFrom is AnalyzeLedger reading "-" from stdin.
func AnalyzeLedgerFrom(events string, stdin io.Reader, o Options, l LedgerOptions) (*LedgerReport, error) {
	j, err := newLedgerJoin(events, o, l)
	if err != nil {
		return nil, err
	}
	if err := j.read(j.lc, stdin, j.addEntries); err != nil {
		return nil, err
	}
	if len(j.entries) == 0 {
		if j.ledgerNoID > 0 {
			return nil, usagef("no line of %s has an id in field %q (choose it with --match)", j.lc.path, j.lc.Match)
		}
		return nil, noLines(j.lc, j.ledgerLines, &j.ledgerRejected)
	}
	if err := j.read(j.ec, stdin, j.addEvents); err != nil {
		return nil, err
	}
	if j.events == 0 {
		return nil, noLines(j.ec, j.eventLines, &j.eventRejected)
	}
	if j.eventNoID == j.events {
		return nil, usagef("no event of %s has an id in field %q (choose it with --match)", j.ec.path, j.ec.Match)
	}
	if j.sc != nil {
		by := j.sc.By[0]
		if len(j.users) == 0 {
			return nil, usagef("no entry of %s has a user in field %q (choose it with --seen-by)", j.lc.path, by)
		}
		j.watchMissing()
		if err := j.read(j.sc, stdin, j.addSeen); err != nil {
			return nil, err
		}
		if j.seenEvs > 0 && j.seenNoBy == j.seenEvs {
			return nil, usagef("no event of %s has a user in field %q (choose it with --seen-by)", j.sc.path, by)
		}
	}
	return j.report(), nil
}

// ledgerEntry is one entry of the ledger and what arrived for it.
type ledgerEntry struct {
	t, arr  mtime.Time // the entry's time; the first arrival of its event
	group   int32      // the entry's --by value; -1: none
	evGroup int32      // the --by value of the event that arrived first; -1: none
	events  int32      // events with its id
	user    int32      // its SeenBy value (ledgerJoin.users); -1: none
	online  bool       // seen online (LedgerOptions.Seen)
}

// valueSet numbers the values of the --by field, up to MaxGroups of them.
type valueSet struct {
	index  map[string]int32
	values []string
	other  int32
}

func (s *valueSet) of(v []byte) int32 {
	if i, ok := s.index[string(v)]; ok {
		return i
	}
	if len(s.values) >= MaxGroups {
		if s.other < 0 {
			s.other = int32(len(s.values))
			s.values = append(s.values, "(other)")
		}
		return s.other
	}
	i := int32(len(s.values))
	s.index[string(v)] = i
	s.values = append(s.values, string(v))
	return i
}

type ledgerJoin struct {
	lc, ec *config
	waits  []mtime.Time
	nby    int // 0 or 1

	// With LedgerOptions.Seen: its config, the window, the users of the
	// entries (interned), and the entries that never arrived by user.
	sc                 *config
	seenWithin         mtime.Time
	users              map[string]int32
	missing            map[int32][]int32
	seenLines, seenEvs int64
	seenNoBy           int64
	seenRejected       [nReasons]int64

	ids     map[string]int32
	entries []ledgerEntry
	groups  valueSet

	ledgerLines, ledgerBlank, ledgerNoID, ledgerDup int64
	ledgerRejected                                  [nReasons]int64

	eventLines, eventBlank, events, eventNoID, matched int64
	eventWatermarks                                    int64
	eventRejected                                      [nReasons]int64
	unmatched                                          []int64 // by group
	lastArr                                            mtime.Time
	hasArr                                             bool
}

func newLedgerJoin(events string, o Options, l LedgerOptions) (*ledgerJoin, error) {
	if l.Path == "" {
		return nil, usagef("no ledger file")
	}
	if l.Match == "" {
		return nil, usagef("a ledger join needs --match: the id field of the ledger and the events")
	}
	if l.Path == "-" && events == "-" {
		return nil, usagef("the ledger and the events cannot both be read from standard input")
	}
	if len(o.By) > 1 {
		return nil, usagef("a ledger join groups by one --by field, not %d", len(o.By))
	}
	if o.TimeField == "" {
		o.TimeField = "ts"
	}
	// The events: weir run's rules, no weights, no partitions.
	eo := o
	eo.Weight, eo.NoWeight, eo.PartitionField, eo.Idle, eo.EstimateState = "", true, "", 0, false
	ec, err := eo.resolve(events)
	if err != nil {
		return nil, err
	}
	// The ledger: its time is read as both times, so that a line is an
	// entry when it has a plausible time.
	lt := l.Time
	if lt == "" {
		lt = o.TimeField
	}
	lo := Options{Format: l.Format, TimeField: lt, ArrivalField: lt, NoWeight: true, By: o.By}
	var sc *config
	within := l.SeenWithin
	if l.Seen != "" {
		if l.Seen == "-" && (events == "-" || l.Path == "-") {
			return nil, usagef("only one of the ledger, the events and --seen can be read from standard input")
		}
		by := l.SeenBy
		if by == "" {
			by = "user_id"
		}
		if within == 0 {
			within = DefaultSeenWithin
		}
		if within < 0 {
			return nil, usagef("--seen-within must be positive, got %v", within)
		}
		// The entry's user is read after its --by field.
		lo.By = append(slices.Clip(o.By), by)
		so := eo
		so.Format, so.By = l.SeenFormat, []string{by}
		if sc, err = so.resolve(l.Seen); err != nil {
			return nil, err
		}
	} else if l.SeenBy != "" || l.SeenWithin != 0 || l.SeenFormat != "" {
		return nil, usagef("--seen-by, --seen-within and the format of --seen need --seen: the file of the users' other events")
	}
	lc, err := lo.resolve(l.Path)
	if err != nil {
		return nil, err
	}
	lc.ledger = true
	for _, c := range []*config{ec, lc} {
		c.Match, c.matchP = l.Match, splitPath(l.Match)
	}
	ws := l.Waits
	if len(ws) == 0 {
		ws = DefaultWaits
	}
	var waits []mtime.Time
	for _, w := range ws {
		if w <= 0 {
			return nil, usagef("a wait must be positive, got %v", w)
		}
		waits = append(waits, mtime.Millis(w))
	}
	slices.Sort(waits)
	waits = slices.Compact(waits)
	return &ledgerJoin{
		lc: lc, ec: ec, waits: waits, nby: len(o.By),
		ids:    map[string]int32{},
		groups: valueSet{index: map[string]int32{}, other: -1},
		sc:     sc, seenWithin: mtime.Millis(within), users: map[string]int32{},
	}, nil
}

// read streams one input through add.
func (j *ledgerJoin) read(c *config, stdin io.Reader, add func(*batch)) error {
	prod, closer, err := openInput(c, stdin)
	if err != nil {
		return err
	}
	defer closer.Close()
	p := newPool()
	err = prod(p, func(b *batch) bool {
		add(b)
		b.refs.Store(1)
		p.done(b)
		return true
	})
	if err != nil && !errors.Is(err, errStopped) {
		return err
	}
	return nil
}

// group is the group of a --by value read from a line; -1: none.
func (j *ledgerJoin) group(b *batch, g []span) int32 {
	if j.nby == 0 {
		return -1
	}
	v := b.get(g[0])
	if string(v) == missing {
		return -1
	}
	return j.groups.of(v)
}

func (j *ledgerJoin) addEntries(b *batch) {
	j.ledgerBlank += b.blank
	stride := len(j.lc.By) + 1
	gi := 0
	for i := range b.recs {
		r := &b.recs[i]
		j.ledgerLines++
		if r.why != rOK {
			j.ledgerRejected[r.why]++
			continue
		}
		g := b.groups[gi : gi+stride]
		gi += stride
		id, ok := b.value(g[stride-1])
		if !ok {
			j.ledgerNoID++
			continue
		}
		if _, dup := j.ids[string(id)]; dup {
			j.ledgerDup++
			continue
		}
		user := int32(-1)
		if j.sc != nil {
			if u := b.get(g[j.nby]); string(u) != missing {
				var known bool
				if user, known = j.users[string(u)]; !known {
					user = int32(len(j.users))
					j.users[string(u)] = user
				}
			}
		}
		j.ids[string(id)] = int32(len(j.entries))
		j.entries = append(j.entries, ledgerEntry{t: r.ts, group: j.group(b, g), evGroup: -1, user: user})
	}
}

// watchMissing lists the entries that never arrived by user, for addSeen.
func (j *ledgerJoin) watchMissing() {
	j.missing = map[int32][]int32{}
	for i := range j.entries {
		if e := &j.entries[i]; e.events == 0 && e.user >= 0 {
			j.missing[e.user] = append(j.missing[e.user], int32(i))
		}
	}
}

// addSeen marks online the entries that never arrived whose user has an
// event in the batch (of LedgerOptions.Seen) moments before the entry that
// arrived promptly.
func (j *ledgerJoin) addSeen(b *batch) {
	gi := 0
	for i := range b.recs {
		r := &b.recs[i]
		if r.why == rWatermarkLine {
			continue
		}
		j.seenLines++
		if r.why != rOK {
			j.seenRejected[r.why]++
			continue
		}
		j.seenEvs++
		g := b.groups[gi : gi+1]
		gi++
		u := b.get(g[0])
		if string(u) == missing {
			j.seenNoBy++
			continue
		}
		user, ok := j.users[string(u)]
		if !ok || r.arr-r.ts > j.seenWithin {
			continue
		}
		for _, k := range j.missing[user] {
			if e := &j.entries[k]; r.ts <= e.t && e.t-r.ts <= j.seenWithin {
				e.online = true
			}
		}
	}
}

func (j *ledgerJoin) addEvents(b *batch) {
	j.eventBlank += b.blank
	stride := j.nby + 1
	gi := 0
	for i := range b.recs {
		r := &b.recs[i]
		if r.hasArrival && (!j.hasArr || r.arr > j.lastArr) {
			j.lastArr, j.hasArr = r.arr, true
		}
		if r.why == rWatermarkLine {
			j.eventWatermarks++
			continue
		}
		j.eventLines++
		if r.why != rOK {
			j.eventRejected[r.why]++
			continue
		}
		j.events++
		g := b.groups[gi : gi+stride]
		gi += stride
		id, ok := b.value(g[j.nby])
		if !ok {
			j.eventNoID++
			continue
		}
		evg := j.group(b, g)
		k, ok := j.ids[string(id)]
		if !ok {
			if evg < 0 {
				evg = j.groups.of(missingText)
			}
			j.unmatched = growCount(j.unmatched, evg)
			j.unmatched[evg]++
			continue
		}
		j.matched++
		e := &j.entries[k]
		e.events++
		if e.events == 1 || r.arr < e.arr {
			e.arr, e.evGroup = r.arr, evg
		}
	}
}

func growCount(s []int64, i int32) []int64 {
	for int(i) >= len(s) {
		s = append(s, 0)
	}
	return s
}

// groupStats gathers one group's entries.
type groupStats struct {
	entries, never, neverYoung, young, dups, before int64
	neverOnline, neverNoUser                        int64
	waits                                           []int64
}

func (j *ledgerJoin) report() *LedgerReport {
	lc, ec := j.lc, j.ec
	r := &LedgerReport{
		EventsFile: ec.path, EventsFormat: ec.format, LedgerFile: lc.path, LedgerFormat: lc.format,
		MatchField: ec.Match, LedgerTimeField: lc.TimeField, TimeField: ec.TimeField, ArrivalField: ec.ArrivalField,
		LedgerLines: j.ledgerLines, LedgerBlankLines: j.ledgerBlank, LedgerEntries: int64(len(j.entries)),
		LedgerDuplicates: j.ledgerDup,
		EventLines:       j.eventLines, EventBlankLines: j.eventBlank, EventWatermarkLines: j.eventWatermarks, Events: j.events,
		MatchedEvents: j.matched, EventsWithoutMatch: j.eventNoID,
		lastArrival: j.lastArr, LastArrival: j.lastArr.String(),
	}
	if j.nby > 0 {
		r.ByField = ec.By[0]
	}
	if sc := j.sc; sc != nil {
		r.SeenFile, r.SeenFormat, r.SeenBy, r.SeenWithinMS = sc.path, sc.format, sc.By[0], int64(j.seenWithin)
		r.SeenLines, r.SeenEvents, r.SeenWithoutBy = j.seenLines, j.seenEvs, j.seenNoBy
		r.SeenRejected, r.SeenRejectReason = rejections(&j.seenRejected, &reasonNames)
	}
	for _, w := range j.waits {
		r.WaitsMS = append(r.WaitsMS, int64(w))
	}
	r.LedgerRejected, r.LedgerRejectReasons = rejections(&j.ledgerRejected, &ledgerReasonNames)
	if j.ledgerNoID > 0 {
		r.LedgerRejected += j.ledgerNoID
		r.LedgerRejectReasons["no_match_field"] = j.ledgerNoID
	}
	r.EventsRejected, r.EventRejectReasons = rejections(&j.eventRejected, &reasonNames)
	for _, n := range j.unmatched {
		r.UnmatchedEvents += n
	}

	// Every entry's group, and the waits.
	longest := j.waits[len(j.waits)-1]
	all := &groupStats{}
	var by []*groupStats
	none := int32(-1)
	for i := range j.entries {
		e := &j.entries[i]
		g := e.group
		if g < 0 {
			g = e.evGroup
		}
		if g < 0 && j.nby > 0 {
			if none < 0 {
				none = j.groups.of(missingText)
			}
			g = none
		}
		stats := []*groupStats{all}
		if g >= 0 {
			for int(g) >= len(by) {
				by = append(by, &groupStats{})
			}
			stats = append(stats, by[g])
		}
		young := j.lastArr-e.t < longest
		for _, s := range stats {
			s.entries++
			if young {
				s.young++
			}
			if e.events == 0 {
				s.never++
				if young {
					s.neverYoung++
				}
				if e.online {
					s.neverOnline++
				}
				if e.user < 0 {
					s.neverNoUser++
				}
				continue
			}
			s.dups += int64(e.events - 1)
			w := int64(e.arr - e.t)
			if w < 0 {
				s.before++
			}
			s.waits = append(s.waits, w)
		}
	}
	r.DuplicateEvents = all.dups
	r.All = j.groupOf("(all)", all, r.UnmatchedEvents)
	r.waits = [][]int64{all.waits}
	if j.nby > 0 {
		type pair struct {
			g LedgerGroup
			w []int64
		}
		var ps []pair
		for i, v := range j.groups.values {
			s := &groupStats{}
			if i < len(by) {
				s = by[i]
			}
			var un int64
			if i < len(j.unmatched) {
				un = j.unmatched[i]
			}
			if s.entries == 0 && un == 0 {
				continue // a value seen only on events that matched an entry with its own value
			}
			ps = append(ps, pair{j.groupOf(v, s, un), s.waits})
		}
		sort.SliceStable(ps, func(a, b int) bool {
			x, y := ps[a].g, ps[b].g
			if (x.Value == "(other)") != (y.Value == "(other)") {
				return y.Value == "(other)"
			}
			if x.Entries != y.Entries {
				return x.Entries > y.Entries
			}
			return x.Value < y.Value
		})
		for _, p := range ps {
			r.Groups = append(r.Groups, p.g)
			r.waits = append(r.waits, p.w)
		}
	}
	return r
}

// groupOf measures one group.
func (j *ledgerJoin) groupOf(value string, s *groupStats, unmatched int64) LedgerGroup {
	slices.Sort(s.waits)
	arrived := int64(len(s.waits))
	g := LedgerGroup{
		Value: value, Entries: s.entries, Arrived: arrived, ArrivedPercent: pct(float64(arrived), float64(s.entries)),
		NeverArrived: s.never, NeverArrivedPercent: pct(float64(s.never), float64(s.entries)),
		WatchedLess: s.young, NeverArrivedWatchedLess: s.neverYoung, ArrivedBeforeEntry: s.before,
		DuplicateEvents: s.dups, UnmatchedEvents: unmatched,
	}
	for _, w := range j.waits {
		n := int64(sort.Search(len(s.waits), func(i int) bool { return s.waits[i] > int64(w) }))
		g.Within = append(g.Within, Within{
			Label: durLabel(w), WaitMS: int64(w), Arrived: n,
			Percent: pct(float64(n), float64(s.entries)), PercentOfArrived: pct(float64(n), float64(arrived)),
		})
		if g.FlatWithinMS == nil && arrived > 0 && n*1000 >= arrived*999 {
			g.FlatWithinMS = ptr(int64(w))
		}
	}
	g.Later = arrived - g.Within[len(g.Within)-1].Arrived
	g.LaterPercent = pct(float64(g.Later), float64(s.entries))
	if arrived > 0 {
		g.WaitP50MS, g.WaitP99MS, g.WaitMaxMS = ptr(rank(s.waits, 0.5)), ptr(rank(s.waits, 0.99)), ptr(s.waits[arrived-1])
	}
	g.Verdict, g.Conclusion = j.verdict(&g)
	if j.sc != nil && s.never > 0 {
		g.NeverArrivedSeenOnline, g.NeverArrivedWithoutBy = s.neverOnline, s.neverNoUser
		g.NeverArrivedSeenOnlinePercent = pct(float64(s.neverOnline), float64(s.never))
		g.Online = j.online(&g)
	}
	return g
}

// online says whether the devices of a group's entries that never arrived
// were online moments before.
func (j *ledgerJoin) online(g *LedgerGroup) string {
	name := g.Value
	if name == "(all)" {
		name = "All entries"
	}
	within := durLabel(j.seenWithin)
	s := fmt.Sprintf("%s: of the %s entries that never arrived, %s (%s) had an event of the same %s in %s at most %s before the entry, which arrived within %s of happening",
		name, fmtInt(g.NeverArrived), fmtInt(g.NeverArrivedSeenOnline), fmtPct(g.NeverArrivedSeenOnlinePercent), j.sc.By[0], j.sc.path, within, within)
	switch {
	case g.NeverArrivedSeenOnline == 0:
		s += "."
	case g.NeverArrivedSeenOnline*2 >= g.NeverArrived:
		s += ": those devices were online moments before, so their events were not held back by a lost connection: they were never sent, or lost on the way."
	default:
		s += ": those devices were online moments before; the others may have been offline."
	}
	if g.NeverArrivedWithoutBy > 0 {
		s += fmt.Sprintf(" (%s of the entries have no %s.)", fmtInt(g.NeverArrivedWithoutBy), j.sc.By[0])
	}
	return s
}

// rank is the nearest-rank quantile q of sorted values.
func rank(sorted []int64, q float64) int64 {
	i := int(float64(len(sorted))*q+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// verdict says whether a group's missing events are late or lost.
func (j *ledgerJoin) verdict(g *LedgerGroup) (string, string) {
	if g.Entries == 0 {
		return "", ""
	}
	g = ptrCopy(g)
	if g.Value == "(all)" {
		g.Value = "All entries"
	}
	longest := j.waits[len(j.waits)-1]
	flat := -1 // the index of the wait the curve is flat from
	if g.FlatWithinMS != nil {
		flat = slices.Index(j.waits, mtime.Time(*g.FlatWithinMS))
	}
	never := fmtPct(g.NeverArrivedPercent)
	if g.NeverArrived == 0 {
		if flat >= 0 {
			return VerdictComplete, fmt.Sprintf("%s: every ledger entry has its event; %s of them arrived within %s.",
				g.Value, fmtPctFloor(g.Within[flat].PercentOfArrived), g.Within[flat].Label)
		}
		last := g.Within[len(g.Within)-1]
		return VerdictComplete, fmt.Sprintf("%s: every ledger entry has its event, but %s of them arrived later than %s.",
			g.Value, fmtPct(100-last.PercentOfArrived), last.Label)
	}
	if g.Arrived == 0 {
		return VerdictLost, fmt.Sprintf("%s: no event arrived for any of its ledger entries (%s): are the ids written the same way in both files?",
			g.Value, fmtInt(g.Entries))
	}
	if flat < 0 || flat == len(j.waits)-1 {
		i := max(len(j.waits)-2, 0)
		w := g.Within[i]
		return VerdictMaybeLate, fmt.Sprintf("%s: %s of ledger entries have no event yet, and events were still arriving late: %s of those that arrived came after %s. Some of the missing may be late rather than lost: try longer --waits, or record the events for longer.",
			g.Value, never, fmtPct(100-w.PercentOfArrived), w.Label)
	}
	w := g.Within[flat]
	if g.NeverArrivedWatchedLess*10 > g.NeverArrived {
		return VerdictTooRecent, fmt.Sprintf("%s: %s of ledger entries never arrived, and of those that arrived, %s arrived within %s; but %s of the entries without an event were made less than %s before the last event arrived: record the events for longer before concluding.",
			g.Value, never, fmtPctFloor(w.PercentOfArrived), w.Label, fmtInt(g.NeverArrivedWatchedLess), durLabel(longest))
	}
	s := fmt.Sprintf("%s: %s of ledger entries never arrived; of those that arrived, %s arrived within %s: the missing events are not late, they are lost.",
		g.Value, never, fmtPctFloor(w.PercentOfArrived), w.Label)
	if g.NeverArrivedWatchedLess > 0 {
		s += fmt.Sprintf(" (%s of them were made less than %s before the last event arrived.)", fmtInt(g.NeverArrivedWatchedLess), durLabel(longest))
	}
	return VerdictLost, s
}

// ptrCopy is a copy of g, to rename.
func ptrCopy(g *LedgerGroup) *LedgerGroup {
	c := *g
	return &c
}

// ledgerReasonNames are the rejection reasons of ledger lines: the time
// read is the entry's.
var ledgerReasonNames = func() [nReasons]string {
	n := reasonNames
	n[rNoEventTime] = "no_entry_time"
	n[rBadEventTime] = "bad_entry_time"
	n[rImplausible] = "implausible_entry_time"
	return n
}()

// fmtPctFloor writes a share like fmtPct, rounded down: 99.999% is
// "99.99%", never "100.00%".
func fmtPctFloor(p float64) string { return fmtPct(math.Floor(p*100+1e-7) / 100) }
