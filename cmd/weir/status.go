package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/mtime"
)

// cmdStatus prints the diagnosis of a running job, from its console.
func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir status", stderr)
	addr := fs.String("http", "", "the job's console at `host:port` (default: the job file's http)")
	asJSON := fs.Bool("json", false, "print /api/status as it is")
	addSetFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir status [flags] JOB.yaml\n\nAsks the running job (which serves its console: http in the job file, or weir run --http) where it stands:\nits watermark, every partition's diagnosis and which one holds the watermark back, the counts and the last checkpoint.\nAn instance of a consumer-group job says which partitions it owns, and each one's task.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	j, pos, code, ok := loadJobArg(fs, args, stderr)
	if !ok {
		return code
	}
	if *addr == "" {
		// A weir run --http of this file says where it listens.
		*addr = recordedAddress(pos[0])
	}
	if *addr == "" {
		*addr = j.HTTP
	}
	if *addr == "" {
		fmt.Fprintf(stderr, "weir: %s serves no status: add http: 127.0.0.1:8080 to it, or run it with weir run --http 127.0.0.1:8080\n", pos[0])
		return 2
	}
	cl := &http.Client{Timeout: 5 * time.Second}
	req, err := http.NewRequest("GET", "http://"+*addr+"/api/status", nil)
	if err != nil {
		fmt.Fprintf(stderr, "weir: --http %s: %v\n", *addr, err)
		return 2
	}
	if j.HTTPToken != "" {
		req.Header.Set("Authorization", "Bearer "+j.HTTPToken)
	}
	resp, err := cl.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "weir: no job answers on %s: %v\n", *addr, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "weir: %s answered %s\n", *addr, resp.Status)
		return 1
	}
	if *asJSON {
		stdout.Write(body)
		return 0
	}
	var g struct {
		Group *group.GroupStatus `json:"group"`
	}
	if json.Unmarshal(body, &g) == nil && g.Group != nil {
		fmt.Fprint(stdout, groupText(*g.Group))
		return 0
	}
	var r console.StatusReply
	if err := json.Unmarshal(body, &r); err != nil {
		fmt.Fprintf(stderr, "weir: %s did not answer with a status: %v\n", *addr, err)
		return 1
	}
	fmt.Fprint(stdout, statusText(r.Status))
	return 0
}

func showTime(t mtime.Time) string {
	switch {
	case t <= mtime.MinTime:
		return "none"
	case t >= mtime.MaxTime:
		return "the end of time"
	}
	return t.String()
}

// statusText is a status for a person.
func statusText(s engine.Status) string {
	var b strings.Builder
	stale := ""
	if s.Stale {
		stale = " (stale: the job did not answer in time)"
	}
	fmt.Fprintf(&b, "job %s, %s%s\n", s.Job, s.State, stale)
	if s.Watermark == mtime.MaxTime {
		fmt.Fprintf(&b, "watermark at the end of the input: every window has fired; %d open windows, %d keys\n", s.OpenWindows, s.Keys)
	} else {
		fmt.Fprintf(&b, "watermark %s, %.1f s behind processing time; %d open windows, %d keys\n", showTime(s.Watermark), float64(s.WatermarkGap)/1000, s.OpenWindows, s.Keys)
	}
	// A partition holds the watermark back when it is behind the others by
	// more than the delay (and a second), as the console says it.
	held := s.HeldBy != "" && s.EventTimeSkew >= max(s.WatermarkDelay, 1000)
	if held {
		fmt.Fprintf(&b, "held back by %s since %s\n", s.HeldBy, showTime(s.HeldBySince))
	}
	fmt.Fprintf(&b, "%-24s %-22s %-26s %10s %s\n", "partition", "diagnosis", "watermark", "backlog", "last event")
	for _, p := range s.Partitions {
		back := "-"
		if p.Backlog >= 0 {
			back = fmt.Sprint(p.Backlog)
		}
		mark := ""
		if p.HoldsBack && held {
			mark = "  <- holds the watermark back"
		}
		if p.Err != "" {
			mark += "  (" + p.Err + ")"
		}
		fmt.Fprintf(&b, "%-24s %-22s %-26s %10s %s%s\n", p.Name, p.Diagnosis, showTime(p.Watermark), back, showTime(p.LastEvent), mark)
	}
	if len(s.Aggregations) == 0 && len(s.Inputs) == 0 {
		b.WriteString(countsLine(s.Counts))
	}
	for _, in := range s.Inputs {
		// A job with a join: each input's accounting.
		fmt.Fprintf(&b, "input %s: %s", in.Name, countsLine(in.Counts))
	}
	for _, j := range s.Joins {
		fmt.Fprintf(&b, "join %s: %d pairs, %d unmatched; %d keys holding %d and %d records\n", j.Name, j.Pairs, j.Unmatched, j.Keys, j.Left, j.Right)
	}
	for _, p := range s.Processes {
		fmt.Fprintf(&b, "process %s: %d elements, %d and %d timers fired (event, processing time); %d keys holding %d and %d timers\n",
			p.Name, p.Elements, p.FiredEventTimers, p.FiredProcessingTimers, p.Keys, p.EventTimers, p.ProcessingTimers)
	}
	for _, l := range s.Lookups {
		fmt.Fprintf(&b, "lookup %s: %d records (%d from the cache), %d calls (%d retries), %d failed to the dead letters\n",
			l.Name, l.Records, l.CacheHits, l.Calls, l.Retries, l.Failed)
	}
	for _, a := range s.Aggregations {
		// A job of several aggregations: each one's, its windows' share
		// after the input's accounting every one has.
		fmt.Fprintf(&b, "aggregation %s, watermark %s: %s", a.Name, showTime(a.Watermark), countsLine(a.Counts))
	}
	for _, k := range s.Sinks {
		// Committed counts every run's, written this run's: after a
		// resume the first may be the larger.
		fmt.Fprintf(&b, "sink %s (%s): %d committed in all, %d written by this run\n", k.Name, k.Guarantee, k.Committed, k.Written)
	}
	if ck := s.Checkpoint; !ck.At.IsZero() {
		fmt.Fprintf(&b, "last checkpoint %d at %s (%s ago, took %s, %d bytes); %d failed\n", ck.ID, ck.At.UTC().Format(time.RFC3339), s.At.Sub(ck.At).Round(time.Millisecond), ck.Duration.Round(time.Millisecond), ck.Bytes, ck.Failed)
	}
	return b.String()
}

// countsLine is the accounting of a job's input, as the summary says it.
func countsLine(c engine.Counts) string {
	partly := ""
	if c.LateForSomeWindows > 0 {
		partly = fmt.Sprintf(", %d too late for some of their windows", c.LateForSomeWindows)
	}
	if c.Revisions > 0 {
		partly += fmt.Sprintf(", %d revisions replacing an earlier version", c.Revisions)
	}
	// Every part of the read the summary has: the parts that are not
	// there when nothing was counted in them.
	filtered, beyond := "", ""
	if c.Filtered > 0 {
		filtered = fmt.Sprintf(", %d filtered out by where", c.Filtered)
	}
	if c.BeyondDedupHorizon > 0 {
		beyond = fmt.Sprintf(", %d beyond the de-duplication horizon", c.BeyondDedupHorizon)
	}
	if c.Superseded > 0 || c.RevisionsTooLate > 0 {
		beyond += fmt.Sprintf(", %d superseded, %d revisions too late", c.Superseded, c.RevisionsTooLate)
	}
	return fmt.Sprintf("read %d: %d accepted (%d late within allowed lateness%s), %d duplicates%s, %d too late%s%s, %d quarantined\n", c.Read, c.Accepted, c.LateAccepted, partly, c.Duplicates, filtered, c.TooLate, job.TriggerFinishedNote(c.TriggerFinished, c.LateForSomeWindows), beyond, c.Quarantined)
}

// partNames names partitions of topic as "topic/0, topic/1".
func partNames(topic string, ps []int32) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%s/%d", topic, p)
	}
	return strings.Join(names, ", ")
}

// groupText is the status of an instance of a consumer-group job: which
// partitions it owns, and each task's state.
func groupText(g group.GroupStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group %s: member %s (generation %d) owns %d of the %d partitions of %s; state in %s\n",
		g.Group, g.Member, g.Generation, len(g.Owned), g.Partitions, g.Topic, g.Changelog)
	if len(g.Members) > 0 || g.MembersErr != "" {
		fmt.Fprintf(&b, "the group's instances:\n")
		// This one first, the others by name: in the same order
		// whichever order the coordinator says them in.
		members := slices.Clone(g.Members)
		slices.SortStableFunc(members, func(x, y group.GroupMember) int {
			return cmp.Or(-cmp.Compare(btoi(x.ID == g.Member), btoi(y.ID == g.Member)), cmp.Compare(x.Client, y.Client), cmp.Compare(x.Host, y.Host))
		})
		for _, m := range members {
			me := ""
			if m.ID == g.Member {
				me = "  <- this one"
			}
			fmt.Fprintf(&b, "  %s on %s: %s%s\n", m.Client, strings.TrimPrefix(m.Host, "/"), partNames(g.Topic, m.Partitions), me)
		}
		if g.MembersErr != "" {
			fmt.Fprintf(&b, "  (the group's coordinator did not say: %s)\n", g.MembersErr)
		}
	}
	for i, th := range g.Threads {
		tasks := partNames(g.Topic, th.Tasks)
		if tasks == "" {
			tasks = "no task"
		}
		down := ""
		if th.Unreachable {
			down = " (cannot reach the brokers)"
		}
		fmt.Fprintf(&b, "thread %d: %s; %d transactions committed, %d aborted%s\n", i, tasks, th.Committed, th.Aborted, down)
	}
	if g.Watermarks != "" {
		w := "none (no task heard of)"
		if g.GroupWatermark != nil {
			w = showTime(*g.GroupWatermark)
		}
		fmt.Fprintf(&b, "group watermark %s (the minimum over the tasks not idle, shared in %s): idle tasks follow it\n", w, g.Watermarks)
	}
	if len(g.Standby) > 0 {
		fmt.Fprintf(&b, "standby of %s: their changelog kept read, for a quick takeover\n", partNames(g.Topic, g.Standby))
	}
	if r := g.Repartition; r != nil {
		fmt.Fprintf(&b, "repartition: copies %d partitions of %s into %s (%d records so far)\n", len(r.Owned), r.From, r.To, r.Copied)
	}
	fmt.Fprintf(&b, "%-12s %-10s %-26s %10s %8s %s\n", "partition", "task", "watermark", "read", "windows", "restored")
	for _, t := range g.Tasks {
		restored := "afresh"
		if r := t.Restored; r.Checkpoint != 0 {
			restored = fmt.Sprintf("checkpoint %d (%d keys, %d bytes) in %d ms", r.Checkpoint, r.Keys, r.Bytes, r.Millis)
			if r.Standby > 0 {
				restored += ", its standby here before"
			}
		}
		if t.Starts > 1 {
			restored += fmt.Sprintf("; started %d times", t.Starts)
		}
		if t.Err != "" {
			restored += " (" + t.Err + ")"
		}
		fmt.Fprintf(&b, "%-12s %-10s %-26s %10d %8d %s\n", fmt.Sprintf("%s/%d", g.Topic, t.Partition), t.State,
			showTime(t.Status.Watermark), t.Status.Counts.Read, t.Status.OpenWindows, restored)
	}
	return b.String()
}

// cmdSimulator serves the watermark simulator alone.
func cmdSimulator(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir simulator", stderr)
	addr := fs.String("http", "127.0.0.1:8080", "serve on `host:port`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir simulator [flags]\n\nServes the watermark simulator on /simulator: the taps of a toy stream replayed\nthrough weir's engine (windows, watermark delay, phones in a tunnel, late policy, periodic\nwatermarks, partitions with an idle one). Ctrl-C stops it.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := console.Listen(ctx, *addr, &console.Server{})
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	fmt.Fprintf(stderr, "weir: the simulator is on http://%s/simulator\n", a)
	<-ctx.Done()
	return 0
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
