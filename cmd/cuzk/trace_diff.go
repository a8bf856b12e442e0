package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/atomicfile"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/urfave/cli/v2"
)

// exitRegressed is cuzk trace diff's exit status when --fail-over trips
// (1 stays for errors: bad input, unreadable files).
const exitRegressed = 2

func traceDiffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "compare two runs layer by layer: where did the time move",
		ArgsUsage: "A B",
		Description: `Compares two traces, or two sets of traces, span path by span path, and says
which layers moved. A and B are each:

   FILE                    an OTLP JSON lines trace file: its last proof (the
                           last trace with an engine.job), or the trace
                           --trace-id names, or a set of its jobs
                           (engine.job traces; a file without any: its
                           traces): --last N (the N that start last) or --all
   TRACE_ID                with --jaeger URL or --tempo URL

--circuit NAME and --constraints N pick the jobs of one circuit and size in
each FILE (its last such job, or with --last/--all the set of them): a
daemon's file holding several sizes is a set only with a filter. Sides of
different sizes are refused unless --normalize, which scales every trace's
times to A's size (B × A's constraints / B's: a cost per constraint).

Spans are matched by their path of names from the job's engine.job span
(engine.job/pipeline.prove/groth16.prove/msm.g1.a, kernel spans included),
so a daemon's job (under its server span) and a cuzk prove run compare path
for path; a trace without engine.job is taken from its root. Spans that
repeat a name under one parent are summed (their count is shown as ×A/B):
numbering them would pair unrelated launches when the counts differ. For a
set, each path's time is the median over the set's traces (a trace without
the path counts 0).

The output is the tree of paths with A, B, the change in ms and % and the
untraced time of each side, the largest moves first at every level, paths
on one side only marked [only A] or [only B], and "*" at the end of each
row that moved: by --threshold-ms and by --threshold-pct of A or more (a
path on one side only: by --threshold-ms; each finite and 0 or more, 0
taken as 0: every change moves by that measure). Then one verdict line per layer
(a span with children) that moved or holds a path that moved, and per root
that moved, naming the children that moved, e.g.
"pipeline.prove +2.0 s: buffer.release +2.0 s (only on B, cuzk.release.mode:
sync), untraced +0.0 ms", an attribute that differs named with both values
("keys.load −23.6 s (cuzk.key.cache_hit: false → true)"); "no span moved"
when no row has a "*". A change on a baseline under 1 ms is shown in ms, not
as a percentage.

A row also moves only beyond the run-to-run spread: with several traces on a
side, when the ranges of its time over A's and B's traces do not overlap;
with one trace a side there is no spread to measure, so it must change by
more than --noise-pct (default 25, the spread of identical CPU proofs in
bench/trace-noise.md; 0: no floor) % of A. A row within it ends in "~".

The header says what each side ran: circuit, size, backend, release mode,
host and build (service.version). A side whose job did not succeed
(cancelled, failed) is flagged with the verdicts; a set leaves such jobs out
and says how many.

--fail-over PCT exits with status 2 when the layer --fail-layer names (a
path or a span name, its shallowest occurrence; default: the root span, i.e.
the whole job) is more than PCT % slower on B than on A; PCT is a finite
number, 0 or more (not given: no gate), and --fail-layer needs it. Errors,
bad flags included, exit 1.

--trace-id ID picks a trace by id: given twice, the first is A's trace and
the second B's (A and B may be the same file); given once, it names the
trace of both sides (the same trace in two files, for example exported to
two places), and is refused when A and B are the same file, which would
compare the trace with itself. --trace-id-a ID and --trace-id-b ID name one
side's trace only (the other side: its last proof). However the sides are
chosen, a diff whose A and B come to the same traces of one file (A.jsonl
A.jsonl: its last proof twice; --last N or --all of one file) or the same
remote trace is refused: pick two traces with --trace-id twice.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "jaeger", Usage: "Jaeger query `URL`; A and B that are not files are trace ids"},
			&cli.StringFlag{Name: "tempo", Usage: "Tempo HTTP `URL`; A and B that are not files are trace ids"},
			&cli.StringSliceFlag{Name: "trace-id", Usage: "the trace of this `ID` in each FILE; twice: A's, then B's"},
			&cli.StringFlag{Name: "trace-id-a", Usage: "with a FILE as A, its trace of this `ID`"},
			&cli.StringFlag{Name: "trace-id-b", Usage: "with a FILE as B, its trace of this `ID`"},
			&cli.IntFlag{Name: "last", DefaultText: "off", Usage: "compare the medians of the last `N` engine.job traces of each FILE"},
			&cli.BoolFlag{Name: "all", Usage: "compare the medians of every engine.job trace of each FILE"},
			&cli.StringFlag{Name: "circuit", Usage: "only the jobs of the circuit `NAME` (cuzk.circuit.id) in each FILE"},
			&cli.Int64Flag{Name: "constraints", DefaultText: "any", Usage: "only the jobs of `N` constraints (cuzk.circuit.constraints) in each FILE"},
			&cli.BoolFlag{Name: "normalize", Usage: "compare different sizes per constraint: every time scaled to A's size"},
			&cli.Float64Flag{Name: "noise-pct", Value: tracefile.DefaultNoiseFloorPct, Usage: "with one trace a side, a span moved only by more than `PCT` % of A (0: no floor)"},
			&cli.Float64Flag{Name: "threshold-ms", Value: 10, Usage: "a span moved (marked *) when it changed by at least `MS` ms ..."},
			&cli.Float64Flag{Name: "threshold-pct", Value: 5, Usage: "... and by at least `PCT` % of A"},
			&cli.BoolFlag{Name: "json", Usage: "print the diff as JSON"},
			&cli.Float64Flag{Name: "fail-over", DefaultText: "off", Usage: "exit 2 when --fail-layer is more than `PCT` % slower on B"},
			&cli.StringFlag{Name: "fail-layer", Usage: "the layer --fail-over checks: a path or span `NAME` (default: the root)"},
			&cli.StringFlag{Name: "html", Usage: "also write both waterfalls on one time axis, moved spans marked, to `FILE`"},
			&cli.IntFlag{Name: "depth", Usage: "print tree levels down to `N` (0: all)"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "limit for reading from Jaeger or Tempo"},
		},
		OnUsageError: usageError,
		Action:       runTraceDiff,
	}
}

func runTraceDiff(c *cli.Context) error {
	defer limitMemory()()
	flags, args, err := interspersed(c, "trace diff")
	if err != nil {
		return err
	}
	if len(args) != 2 {
		return fmt.Errorf("trace diff: want two arguments, A and B (files, or trace ids with --jaeger/--tempo), got %d", len(args))
	}
	if flags.String("jaeger") != "" && flags.String("tempo") != "" {
		return errors.New("trace diff: give --jaeger or --tempo, not both")
	}
	// --last 0 is not "unset": a set of no traces has nothing to compare.
	if n := flags.Int("last"); n < 0 || n == 0 && flags.IsSet("last") {
		return fmt.Errorf("trace diff: --last %d: want a positive count of traces (or --all)", n)
	}
	if flags.Int("last") > 0 && flags.Bool("all") {
		return errors.New("trace diff: give --last N or --all, not both")
	}
	for _, name := range []string{"threshold-ms", "threshold-pct", "noise-pct"} {
		// NaN would mark nothing (or, for the ms, every path on one side).
		if v := flags.Float64(name); !(v >= 0 && !math.IsInf(v, 1)) {
			return fmt.Errorf("trace diff: --%s %g: want a finite number of 0 or more", name, v)
		}
	}
	if n := flags.Int("depth"); n < 0 {
		return fmt.Errorf("trace diff: --depth %d: want 0 (all levels) or more", n)
	}
	failOver := flags.IsSet("fail-over")
	if pct := flags.Float64("fail-over"); failOver && !(pct >= 0 && !math.IsInf(pct, 1)) {
		// NaN, negative and infinite values would turn the gate off
		// (nothing is more than NaN or +Inf % slower) while it looks set.
		return fmt.Errorf("trace diff: --fail-over %g: want a finite percentage of 0 or more", pct)
	}
	if flags.String("fail-layer") != "" && !failOver {
		return fmt.Errorf("trace diff: --fail-layer %s checks nothing without --fail-over PCT", flags.String("fail-layer"))
	}
	errOut := c.App.ErrWriter
	if errOut == nil {
		errOut = os.Stderr
	}
	out := c.App.Writer
	if out == nil {
		out = os.Stdout
	}
	if n := flags.Int64("constraints"); flags.IsSet("constraints") && n <= 0 {
		return fmt.Errorf("trace diff: --constraints %d: want a positive constraint count", n)
	}
	src := diffSource{
		warn: errOut, jaeger: flags.String("jaeger"), tempo: flags.String("tempo"),
		last: flags.Int("last"), all: flags.Bool("all"), timeout: flags.Duration("timeout"),
		circuit: flags.String("circuit"), constraints: flags.Int64("constraints"), normalize: flags.Bool("normalize"),
	}
	if page := flags.String("html"); page != "" && (sameFile(page, args[0]) || sameFile(page, args[1])) {
		return fmt.Errorf("trace diff: --html %s: is a trace file this diff reads; name another file for the page", page)
	}
	if page := flags.String("html"); page != "" {
		if err := atomicfile.Check(page); err != nil { // before reading both sides
			return fmt.Errorf("trace diff: --html %s: %w", page, err)
		}
	}
	pickA, pickB, err := tracePicks(flags, args[0], args[1])
	if err != nil {
		return err
	}
	// A side that is no file is a trace id to fetch: a mistyped file name
	// is said to be one, before anything is fetched.
	for i, label := range []string{"A", "B"} {
		if !src.remote(args[i]) {
			continue
		}
		if _, err := tracefile.NormalizeTraceID(args[i]); err != nil {
			why := "a directory"
			if _, statErr := os.Stat(args[i]); statErr != nil {
				why = strings.TrimPrefix(statErr.Error(), "stat "+args[i]+": ")
			}
			return fmt.Errorf("trace diff: %s: %s is neither a file (%s) nor a trace id (up to 32 hex digits) to fetch from %s", label, args[i], why, src.remoteFlag())
		}
	}
	if src.remote(args[0]) && src.remote(args[1]) {
		// The same remote trace twice: refused before it is fetched.
		ia, errA := tracefile.NormalizeTraceID(args[0])
		ib, errB := tracefile.NormalizeTraceID(args[1])
		if errA == nil && errB == nil && ia == ib {
			return sameTraces(&diffSide{ids: []string{ia}}, &diffSide{ids: []string{ib}})
		}
	}
	a, err := src.load(c.Context, "A", args[0], pickA)
	if err != nil {
		return err
	}
	if src.normalize {
		src.normalizeTo = a.size // B's times scaled to A's size
	}
	b, err := src.load(c.Context, "B", args[1], pickB)
	if err != nil {
		return err
	}
	if err := sameTraces(a, b); err != nil {
		return err
	}
	d, err := tracefile.DiffSets(a.set, b.set, tracefile.DiffOptions{
		ThresholdMS: flags.Float64("threshold-ms"), ThresholdPct: flags.Float64("threshold-pct"), Exact: true,
		NoiseFloorPct: flags.Float64("noise-pct"), Normalize: src.normalize,
	})
	if err != nil {
		return fmt.Errorf("trace diff: %w", err)
	}
	if flags.Bool("json") {
		err = tracefile.WriteDiffJSON(out, d)
	} else {
		fmt.Fprintf(out, "A: %s\nB: %s\n", a.source, b.source)
		err = tracefile.WriteDiff(out, d, flags.Int("depth"))
	}
	if err != nil {
		return fmt.Errorf("trace diff: %w", err)
	}
	if path := flags.String("html"); path != "" {
		if err := writeFileAtomic(path, func(w io.Writer) error { return tracefile.WriteDiffHTML(w, d, a.spans, b.spans) }); err != nil {
			return fmt.Errorf("trace diff: --html: %w", err)
		}
		if !flags.Bool("json") {
			fmt.Fprintf(out, "\nHTML diff: %s\n", path)
		}
	}
	if pct := flags.Float64("fail-over"); failOver {
		return checkRegression(d, flags.String("fail-layer"), pct)
	}
	return nil
}

// checkRegression returns an exit status 2 error when the layer named
// (default: the first root on both sides) is more than pct % slower on B.
func checkRegression(d *tracefile.Diff, layer string, pct float64) error {
	var n *tracefile.DiffNode
	if layer != "" {
		if n = d.Find(layer); n == nil {
			return fmt.Errorf("trace diff: --fail-layer %s: no such span path or name in either side", layer)
		}
	} else {
		for _, r := range d.Roots {
			if !r.OnlyA() && !r.OnlyB() {
				n = r
				break
			}
		}
	}
	if p := n.Pct(); p > pct {
		by := fmt.Sprintf("%.1f %%", p)
		switch {
		case math.IsInf(p, 1):
			by = "new on B"
		case !n.PctShown():
			by = fmt.Sprintf("on a baseline of %.3f ms", float64(n.A)/float64(time.Millisecond))
		}
		return cli.Exit(fmt.Sprintf("trace diff: %s regressed: %s (%s), over --fail-over %g %%", n.Path, tracefile.FormatDelta(n.Delta()), by, pct), exitRegressed)
	}
	return nil
}

// tracePick is the trace one side names by id, and the flag that named it
// (for errors); id "" is none.
type tracePick struct{ id, flag string }

// tracePicks returns each side's trace id from --trace-id (twice: A's then
// B's; once: both sides', refused when A and B are the same file) or
// --trace-id-a/--trace-id-b, which it does not combine with --trace-id.
func tracePicks(flags *cli.Context, fileA, fileB string) (a, b tracePick, err error) {
	ids := flags.StringSlice("trace-id")
	oneSide := flags.String("trace-id-a") != "" || flags.String("trace-id-b") != ""
	switch {
	case len(ids) > 2:
		return a, b, fmt.Errorf("trace diff: --trace-id given %d times: at most twice, A's trace then B's", len(ids))
	case len(ids) > 0 && oneSide:
		return a, b, errors.New("trace diff: give --trace-id, or --trace-id-a/--trace-id-b, not both")
	case len(ids) == 2:
		return tracePick{ids[0], "--trace-id (A's)"}, tracePick{ids[1], "--trace-id (B's)"}, nil
	case len(ids) == 1:
		if sameFile(fileA, fileB) {
			return a, b, fmt.Errorf("trace diff: one --trace-id with A and B the same file would compare trace %s with itself; give --trace-id twice, A's trace then B's", ids[0])
		}
		return tracePick{ids[0], "--trace-id"}, tracePick{ids[0], "--trace-id"}, nil
	}
	return tracePick{flags.String("trace-id-a"), "--trace-id-a"}, tracePick{flags.String("trace-id-b"), "--trace-id-b"}, nil
}

// sameFile reports whether paths a and b are one existing file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// diffSource reads one side of a diff.
type diffSource struct {
	warn          io.Writer
	jaeger, tempo string
	last          int
	all           bool
	timeout       time.Duration
	// circuit and constraints ("", 0: any) pick the jobs of a FILE;
	// normalize scales each trace's times to normalizeTo constraints (0:
	// the side's first trace's size, which B then takes from A).
	circuit     string
	constraints int64
	normalize   bool
	normalizeTo int64
}

// picks says whether p is a job the filters keep.
func (s diffSource) picks(p tracefile.Profile) bool {
	return (s.circuit == "" || p.Run.CircuitID == s.circuit) && (s.constraints == 0 || p.Run.Constraints == s.constraints)
}

// filtered says whether any filter is set.
func (s diffSource) filtered() bool { return s.circuit != "" || s.constraints != 0 }

// filterText names the filters, for messages: "--circuit merkle --constraints 65536".
func (s diffSource) filterText() string {
	var parts []string
	if s.circuit != "" {
		parts = append(parts, "--circuit "+s.circuit)
	}
	if s.constraints != 0 {
		parts = append(parts, fmt.Sprintf("--constraints %d", s.constraints))
	}
	return strings.Join(parts, " ")
}

// diffSide is one side, reduced: the profiles of its traces and the
// spans of one kept trace whose duration is the median (for the HTML).
type diffSide struct {
	source string
	set    *tracefile.ProfileSet
	spans  []tracefile.Span
	file   string   // the FILE read; "" for a trace from Jaeger or Tempo
	ids    []string // the ids of set's traces, sorted
	size   int64    // with --normalize: the constraints its times are scaled to
}

// sameTraces refuses a diff whose sides resolved to the same traces of
// the same file (or the same remote trace), however they were chosen:
// it would compare a run with itself and find nothing.
func sameTraces(a, b *diffSide) error {
	if !slices.Equal(a.ids, b.ids) || (a.file == "") != (b.file == "") || a.file != "" && !sameFile(a.file, b.file) {
		return nil
	}
	what := fmt.Sprintf("the same %d trace%s of %s", len(a.ids), human.Plural(len(a.ids)), a.file)
	switch {
	case len(a.ids) == 1 && a.file != "":
		what = fmt.Sprintf("trace %s of %s", a.ids[0], a.file)
	case a.file == "":
		what = "trace " + strings.Join(a.ids, ", ")
	}
	return fmt.Errorf("trace diff: A and B are both %s: a run compared with itself; pick two traces with --trace-id twice, A's trace then B's", what)
}

// maxSetValues bounds the memory of one side's ProfileSet (about 24 bytes
// a value): 2,000,000 is 10,000 traces of 200 distinct span paths.
const maxSetValues = 2_000_000

func (s diffSource) load(ctx context.Context, label, arg string, pick tracePick) (*diffSide, error) {
	traceID := pick.id
	if traceID != "" {
		id, err := tracefile.NormalizeTraceID(traceID)
		if err != nil {
			return nil, fmt.Errorf("trace diff: %s %s: not a trace id (want up to 32 hex digits)", pick.flag, traceID)
		}
		traceID = id
	}
	if s.remote(arg) {
		return s.loadRemote(ctx, label, arg, pick)
	}
	jobs, others := &tracefile.ProfileSet{}, &tracefile.ProfileSet{}
	tooMany := false
	// For --last N: the latest N profiles of jobs and of other traces (at
	// most 2N of each held), chosen when the file is read.
	var recentJobs, recentOthers []tracefile.Profile
	keepRecent := func(list *[]tracefile.Profile, p tracefile.Profile) {
		*list = append(*list, p)
		if len(*list) > 2*s.last {
			*list = latestProfiles(*list, s.last)
		}
	}
	var jobIDs, otherIDs []string // of the profiles in jobs and others
	put := func(p tracefile.Profile) {
		if p.Jobs > 0 {
			jobs.Add(p)
			jobIDs = append(jobIDs, p.TraceID)
		} else {
			others.Add(p)
			otherIDs = append(otherIDs, p.TraceID)
		}
	}
	set := s.all || s.last > 0
	ref := s.normalizeTo
	held := map[string]int{}     // "circuit size" of the jobs read, for a filter that matches none
	var failed, unsized []string // jobs left out of a set: not succeeded; not scalable
	add := func(t tracefile.Trace) {
		p := tracefile.ProfileOf(t)
		isJob := p.Jobs > 0
		if isJob && traceID == "" {
			held[strings.TrimSpace(fmt.Sprintf("%s %d", p.Run.CircuitID, p.Run.Constraints))]++
			if !s.picks(p) {
				return
			}
			if set && p.Run.Failed() {
				failed = append(failed, p.Run.Outcome)
				return
			}
		}
		if s.normalize {
			if p.Run.Constraints <= 0 {
				unsized = append(unsized, p.TraceID)
				return
			}
			if ref == 0 {
				ref = p.Run.Constraints
			}
			p = p.Scale(float64(ref) / float64(p.Run.Constraints))
		}
		switch {
		case s.last > 0 && traceID == "" && isJob:
			keepRecent(&recentJobs, p)
		case s.last > 0 && traceID == "":
			keepRecent(&recentOthers, p)
		case jobs.Values()+others.Values() >= maxSetValues:
			tooMany = true
		default:
			put(p)
		}
	}
	opts := tracefile.CollectOptions{MaxKeptBytes: tracefile.DefaultMaxKeptBytes / 2}
	if set && traceID == "" {
		// Traces let go to bound memory are profiled first: --all and
		// --last read a file of any number of traces (a daemon's holds
		// status polls between its jobs).
		opts.OnEvict = func(spans []tracefile.Span) {
			for _, t := range tracefile.BuildTraces(spans) {
				add(t)
			}
		}
	}
	// One --trace-id names both sides: say so where one side lacks it.
	hint := ""
	if pick.flag == "--trace-id" {
		hint = " (one --trace-id names both sides' trace; give it twice, A's then B's)"
	}
	col, err := readTraceFile(s.warn, arg, 0, traceID, opts)
	if err != nil {
		if traceID == "" || !strings.Contains(err.Error(), "not found in") {
			hint = ""
		}
		return nil, fmt.Errorf("trace diff: %s: %w%s", label, err, hint)
	}
	chosen := col.Kept()
	switch {
	case traceID != "":
		if len(chosen) == 0 {
			return nil, fmt.Errorf("trace diff: %s: trace %s: not found in %s%s", label, traceID, arg, hint)
		}
	case set:
	case s.filtered():
		// The last job the filters pick.
		kept := col.Kept()
		chosen = nil
		for i := len(kept) - 1; i >= 0 && chosen == nil; i-- {
			for _, t := range tracefile.BuildTraces(col.Spans[kept[i].ID]) {
				if p := tracefile.ProfileOf(t); t.ID == kept[i].ID && p.Jobs > 0 && s.picks(p) {
					chosen = []tracefile.TraceSummary{kept[i]}
				}
			}
		}
		if chosen == nil {
			return nil, fmt.Errorf("trace diff: %s: %s holds no job of %s%s", label, arg, s.filterText(), heldText(col, held))
		}
	default:
		latest, _ := col.Latest()
		chosen = []tracefile.TraceSummary{latest}
		if n := len(col.Summaries); n > 1 {
			fmt.Fprintf(s.warn, "cuzk: %s: %s holds %d traces; comparing the last (%s); --trace-id (A's, then B's), --last N or --all for others\n", label, arg, n, latest.ID)
		}
	}
	var reps []tracefile.Trace // the kept ones, for the HTML waterfall
	for _, sum := range chosen {
		for _, t := range tracefile.BuildTraces(col.Spans[sum.ID]) {
			if t.ID == sum.ID {
				add(t)
				reps = append(reps, t)
			}
		}
	}
	if s.last > 0 && traceID == "" {
		for _, p := range latestProfiles(recentJobs, s.last) {
			put(p)
		}
		for _, p := range latestProfiles(recentOthers, s.last) {
			put(p)
		}
		ids := map[string]bool{}
		for _, p := range append(latestProfiles(recentJobs, s.last), latestProfiles(recentOthers, s.last)...) {
			ids[p.TraceID] = true
		}
		reps = slices.DeleteFunc(reps, func(t tracefile.Trace) bool { return !ids[t.ID] })
	}
	if tooMany {
		return nil, fmt.Errorf("trace diff: %s: %s holds more than %d span path values (%d trace%s read); use --last N", label, arg, maxSetValues, jobs.Len()+others.Len(), human.Plural(jobs.Len()+others.Len()))
	}
	late := 0
	for _, sum := range col.Summaries {
		late += sum.Late
	}
	if late > 0 {
		fmt.Fprintf(s.warn, "cuzk: %s: %s: %d span%s arrived after their trace was compared (its spans were let go to bound memory) and are left out\n", label, arg, late, human.Plural(late))
	}
	if len(failed) > 0 {
		fmt.Fprintf(s.warn, "cuzk: %s: %s: %d job%s that did not succeed (%s) left out of the set\n", label, arg, len(failed), human.Plural(len(failed)), outcomeCounts(failed))
	}
	if len(unsized) > 0 {
		fmt.Fprintf(s.warn, "cuzk: %s: %s: %d trace%s without cuzk.circuit.constraints left out (--normalize needs the size)\n", label, arg, len(unsized), human.Plural(len(unsized)))
	}
	if set && s.filtered() && jobs.Len() == 0 {
		return nil, fmt.Errorf("trace diff: %s: %s holds no job of %s that succeeded%s", label, arg, s.filterText(), heldText(col, held))
	}
	if set && jobs.Len() == 0 && len(failed) > 0 {
		what := fmt.Sprintf("none of its %d jobs succeeded", len(failed))
		if len(failed) == 1 {
			what = "its one job did not succeed"
		}
		return nil, fmt.Errorf("trace diff: %s: %s: %s (%s); nothing to compare", label, arg, what, outcomeCounts(failed))
	}
	// A set is the file's jobs (engine.job roots); a file without any
	// is a set of whatever runs it holds.
	side := &diffSide{set: jobs, file: arg, ids: jobIDs, size: ref}
	if jobs.Len() == 0 {
		side.set, side.ids = others, otherIDs
	}
	slices.Sort(side.ids)
	reps = slices.DeleteFunc(reps, func(t tracefile.Trace) bool {
		return (tracefile.ProfileOf(t).Jobs > 0) != (side.set == jobs)
	})
	med := medianTrace(reps)
	side.spans = col.Spans[med]
	if !set {
		side.source = fmt.Sprintf("%s, trace %s", arg, med)
	} else {
		side.source = fmt.Sprintf("%s, %d trace%s (median per path; waterfall of %s)", arg, side.set.Len(), human.Plural(side.set.Len()), med)
	}
	return side, nil
}

// heldText lists the jobs a file holds by circuit and size, for a filter
// that picks none: " (it holds merkle 65536 ×3, porep 1024 ×1)".
func heldText(col *tracefile.Collection, held map[string]int) string {
	if len(held) == 0 {
		for _, sum := range col.Kept() {
			for _, t := range tracefile.BuildTraces(col.Spans[sum.ID]) {
				if p := tracefile.ProfileOf(t); t.ID == sum.ID && p.Jobs > 0 {
					held[strings.TrimSpace(fmt.Sprintf("%s %d", p.Run.CircuitID, p.Run.Constraints))]++
				}
			}
		}
	}
	if len(held) == 0 {
		return " (it holds no job)"
	}
	var parts []string
	for k, n := range held {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.Sort(parts)
	return " (it holds " + strings.Join(parts, ", ") + ")"
}

// outcomeCounts writes outcomes (error.type values) counted, in a job's
// words (tracefile.OutcomeText): "CANCELLED ×2, FAILED (device_fault) ×1".
func outcomeCounts(outcomes []string) string {
	n := map[string]int{}
	for _, o := range outcomes {
		n[tracefile.OutcomeText(o)]++
	}
	var parts []string
	for k, c := range n {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, c))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// remote says whether arg is a trace id to fetch: not a file, with
// --jaeger or --tempo.
func (s diffSource) remote(arg string) bool {
	st, err := os.Stat(arg)
	return (err != nil || st.IsDir()) && s.backend().remote()
}

// backend is where --jaeger or --tempo fetches A and B.
func (s diffSource) backend() traceBackend { return traceBackend{jaeger: s.jaeger, tempo: s.tempo} }

// remoteFlag names the flag that makes A and B trace ids.
func (s diffSource) remoteFlag() string { return s.backend().flag() }

// latestProfiles returns the n profiles of ps that start last, by start.
func latestProfiles(ps []tracefile.Profile, n int) []tracefile.Profile {
	ps = slices.Clone(ps)
	slices.SortStableFunc(ps, func(a, b tracefile.Profile) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.TraceID, b.TraceID)
	})
	return ps[max(0, len(ps)-n):]
}

// medianTrace returns the id of the trace whose duration is the median.
func medianTrace(ts []tracefile.Trace) string {
	if len(ts) == 0 {
		return ""
	}
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b tracefile.Trace) int { return int(a.Duration() - b.Duration()) })
	return s[(len(s)-1)/2].ID
}

func (s diffSource) loadRemote(ctx context.Context, label, arg string, pick tracePick) (*diffSide, error) {
	if s.last > 0 || s.all || pick.id != "" {
		return nil, fmt.Errorf("trace diff: %s: --last, --all and --trace-id take a FILE; with --jaeger or --tempo, A and B are trace ids", label)
	}
	spans, err := s.backend().fetch(ctx, s.timeout, arg)
	if err != nil {
		return nil, fmt.Errorf("trace diff: %s: %w", label, err)
	}
	traces := tracefile.BuildTraces(spans)
	if len(traces) == 0 {
		return nil, fmt.Errorf("trace diff: %s: trace %s has no spans", label, arg)
	}
	set := &tracefile.ProfileSet{}
	p := tracefile.ProfileOf(traces[0])
	ref := s.normalizeTo
	if s.normalize {
		if p.Run.Constraints <= 0 {
			return nil, fmt.Errorf("trace diff: %s: trace %s has no cuzk.circuit.constraints; --normalize needs the size", label, arg)
		}
		if ref == 0 {
			ref = p.Run.Constraints
		}
		p = p.Scale(float64(ref) / float64(p.Run.Constraints))
	}
	set.Add(p)
	return &diffSide{source: "trace " + traces[0].ID, set: set, spans: spans, ids: []string{traces[0].ID}, size: ref}, nil
}

// interspersed parses c's arguments with flags allowed between and after
// them (urfave/cli stops at the first argument; `cuzk trace diff A B
// --json` is the natural order). Flags given before the arguments are
// applied first, so those after them win.
func interspersed(c *cli.Context, name string) (*cli.Context, []string, error) {
	set := flag.NewFlagSet(name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		if err := f.Apply(set); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	var setErr error
	set.VisitAll(func(f *flag.Flag) {
		if !c.IsSet(f.Name) || setErr != nil {
			return
		}
		if _, ok := f.Value.(*cli.StringSlice); ok {
			// A repeated flag is set once per value, in order.
			for _, v := range c.StringSlice(f.Name) {
				if setErr = set.Set(f.Name, v); setErr != nil {
					return
				}
			}
			return
		}
		setErr = set.Set(f.Name, fmt.Sprint(c.Value(f.Name)))
	})
	if setErr != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, setErr)
	}
	rest := c.Args().Slice()
	var args []string
	for len(rest) > 0 {
		if err := set.Parse(rest); err != nil {
			return nil, nil, trailingFlagError(c, name, err)
		}
		rest = set.Args()
		if len(rest) > 0 {
			args = append(args, rest[0])
			rest = rest[1:]
		}
	}
	return cli.NewContext(c.App, set, c), args, nil
}
