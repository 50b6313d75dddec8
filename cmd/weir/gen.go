package main

import (
	"fmt"
	"io"
	"os"

	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/mtime"
)

const genUsage = `Usage: weir gen steep|orders|nexmark|ledger|ledger-events|ledger-checkouts [flags]

Writes a deterministic stream of JSON lines (the same flags give the same
bytes):

  steep    Steep's app events in arrival order: 99.1% arrive within 2 s,
           0.9% 5 minutes to 6 hours late (phones offline, never web),
           12.1% after a later event, 0.1% delivered twice
  orders   the orders topic of the fraud job: never late, with a few stolen
           cards an hour paying 5 to 30 times in a minute or two
  nexmark  the Nexmark benchmark's persons, auctions and bids (1:3:46), in
           event-time order at --rate events a second (--days is not used)
  ledger   the order database: --events orders (order_id, user_id,
           platform, amount, ts), for weir lateness --ledger
  ledger-events
           the order_completed events the app sent for the ledger's orders
           (the same flags), in arrival order: never sent for 1% of the iOS
           orders and 4% of the Android ones (none on the web), 1.1% of the
           phones' 5 minutes to 6 hours late, 0.1% twice; then a day of
           orders the ledger does not hold (about 2 x --events lines)
  ledger-checkouts
           the checkout_start events of the same users moments before the
           ledger's orders (the same flags), in arrival order: within 2 s
           for 98.8% of the orders whose order_completed is never sent (the
           phones were online), for weir lateness --ledger --seen

Flags:
`

// cmdGen runs "weir gen": exit status 0 done, 1 the output could not be
// written, 2 bad arguments.
func cmdGen(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir gen", stderr)
	events := fs.Int("events", gen.DefaultEvents, "number of lines to write (ledger, ledger-events, ledger-checkouts: of orders in the ledger)")
	seed := fs.Uint64("seed", 1, "random seed")
	days := fs.Int("days", 1, "days of event time the lines cover (steep, orders, ledger)")
	start := fs.String("start", gen.DefaultStart.String(), "event time of the start of the stream, RFC 3339")
	rate := fs.Int("rate", 10000, "events per second of event time (nexmark)")
	output := fs.String("o", "", "write to `FILE` instead of standard output")
	fs.Usage = func() {
		fmt.Fprint(stderr, genUsage)
		fs.PrintDefaults()
	}
	// The kind may come before or after the flags.
	kinds, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "weir gen: "+format+"\n\n", a...)
		fs.Usage()
		return 2
	}
	if len(kinds) != 1 {
		return usageErr("want one of steep, orders, nexmark, ledger, ledger-events or ledger-checkouts")
	}
	if *events < 0 {
		return usageErr("--events must not be negative")
	}
	if *days < 1 {
		return usageErr("--days must be at least 1")
	}
	if *rate < 1 {
		return usageErr("--rate must be at least 1")
	}
	t0, err := mtime.Parse([]byte(*start))
	if err != nil {
		return usageErr("--start %q is not an RFC 3339 time", *start)
	}
	if t0 == 0 {
		// The library reads a zero start as its default.
		return usageErr("--start cannot be 1970-01-01T00:00:00Z")
	}
	o := gen.Options{Events: *events, Seed: *seed, Days: *days, Start: t0}
	var write func(io.Writer) error
	switch kinds[0] {
	case "steep":
		write = func(w io.Writer) error { return gen.Steep(w, o) }
	case "orders":
		write = func(w io.Writer) error { return gen.Orders(w, o) }
	case "nexmark":
		cfg := gen.NexmarkConfig{Events: int64(*events), Seed: *seed, BaseTime: t0, Rate: *rate}
		write = func(w io.Writer) error { return gen.NewNexmark(cfg).WriteJSON(w) }
	case "ledger":
		write = func(w io.Writer) error { return gen.Ledger(w, o) }
	case "ledger-events":
		write = func(w io.Writer) error { return gen.LedgerEvents(w, o) }
	case "ledger-checkouts":
		write = func(w io.Writer) error { return gen.LedgerCheckouts(w, o) }
	default:
		return usageErr("unknown stream %q: want steep, orders, nexmark, ledger, ledger-events or ledger-checkouts", kinds[0])
	}
	if *events == 0 {
		// The library reads 0 as its default; the command writes nothing.
		write = func(io.Writer) error { return nil }
	}

	w := stdout
	var f *os.File
	if *output != "" && *output != "-" {
		f, err = os.Create(*output)
		if err != nil {
			fmt.Fprintln(stderr, "weir gen:", err)
			return 1
		}
		w = f
	}
	err = write(w)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir gen:", err)
		return 1
	}
	return 0
}
