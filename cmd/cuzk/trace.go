package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/atomicfile"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "trace",
		Usage:     "read a trace back (file, Jaeger or Tempo) and explain where its time went",
		ArgsUsage: "TRACE_ID | FILE",
		Description: `Prints the waterfall of a trace: every span in tree order with its start
offset, duration and untraced time (the part no child covers), then a
summary of where the time went by layer.

   cuzk trace TRACE_ID --jaeger http://localhost:16686   Jaeger's query API
   cuzk trace TRACE_ID --tempo http://localhost:3200     Tempo's /api/traces/<id>
   cuzk trace ./cuzk-trace.jsonl                         local OTLP JSON lines
   cuzk trace diff A B                                   where the time moved between two runs

A FILE is read streaming, in bounded memory whatever its size: without
--trace-id its last proof (the last trace with an engine.job span, else the
last trace) is shown and the other proofs are listed (ids, starts, roots;
a daemon's status polls counted by name); --trace-id ID shows that one. Lines that do not
parse (a write cut short) or are longer than 64 MiB are skipped with a note.
A trace with a proof call (cuzk submit's span) but no engine.job gets one
line after the summary: the daemon's spans have not arrived (yet).

--html FILE also writes the shown trace as a self-contained HTML waterfall
to open in a browser.

--timeline draws all the jobs of a FILE (each its own trace) on one time
axis instead: a row per job (engine.job, or a trace's root), its stages
(the direct children of its span: engine.queue, pipeline.synthesize,
gpu.queue, pipeline.prove, buffer.release, ...) as letters on the row, then
per stage the busy time and the most jobs in it at once, so the overlap of
concurrent jobs can be seen. With --html the same as an HTML page. Rows are
labelled by request id (cuzk.request.id, else the job id); a cancelled job
is marked CANCELLED, a failed one FAILED (its error.type). --last N keeps
the N jobs that start last, --since DURATION those that ran in the file's
last DURATION (an idle gap no longer squeezes every job into one cell).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "jaeger", Usage: "Jaeger query `URL` (the UI's address); the argument is a trace id"},
			&cli.StringFlag{Name: "tempo", Usage: "Tempo HTTP `URL`; the argument is a trace id"},
			&cli.StringFlag{Name: "trace-id", Usage: "with a FILE, only the trace of this `ID`"},
			&cli.StringFlag{Name: "html", Usage: "also write the trace as a self-contained HTML waterfall to `FILE`"},
			&cli.IntFlag{Name: "depth", Usage: "print tree levels down to `N` (0: all)"},
			&cli.IntFlag{Name: "width", Value: 40, Usage: fmt.Sprintf("bar width in characters (at most %d)", maxTraceWidth)},
			&cli.BoolFlag{Name: "ascii", Usage: "draw bars with ASCII characters"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "limit for reading from Jaeger or Tempo"},
			&cli.BoolFlag{Name: "timeline", Usage: "draw every job of the FILE on one time axis, a row per job, its stages as segments (with --html: as HTML)"},
			&cli.IntFlag{Name: "last", DefaultText: "all", Usage: "with --timeline, only the `N` jobs that start last"},
			&cli.DurationFlag{Name: "since", DefaultText: "all", Usage: "with --timeline, only the jobs that ran in the last `DURATION` of the file (before its last job's end)"},
		},
		Subcommands: []*cli.Command{traceDiffCommand()},
		Action:      runTrace,
	})
}

// traceMemoryLimit is the Go heap's soft limit while cuzk trace reads: the
// reader holds at most one line (64 MiB) and the capped spans of the
// latest traces, and the limit keeps garbage from doubling that, so a
// trace file of any size (or /dev/zero) is read in under about 200 MB.
// GOMEMLIMIT overrides it.
const traceMemoryLimit = 150 << 20

// limitMemory sets traceMemoryLimit unless GOMEMLIMIT is set, and returns
// the function that restores the previous limit.
func limitMemory() func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(traceMemoryLimit)
	return func() { debug.SetMemoryLimit(prev) }
}

// maxTraceWidth is the widest --width: a wider bar is no longer read at a
// glance, and --width 100000 drew lines of 100 KB.
const maxTraceWidth = 1000

func runTrace(c *cli.Context) error {
	defer limitMemory()()
	if c.NArg() == 0 {
		return errors.New("trace: want one argument, a TRACE_ID (with --jaeger or --tempo) or a FILE")
	}
	arg := c.Args().First()
	// urfave/cli stops at the first argument; `cuzk trace ID --jaeger URL`
	// is the natural order, so the flags after it are parsed here.
	flags, err := trailingFlags(c)
	if err != nil {
		return err
	}
	jaegerURL, tempoURL := flags.String("jaeger"), flags.String("tempo")
	if jaegerURL != "" && tempoURL != "" {
		return errors.New("trace: give --jaeger or --tempo, not both")
	}
	if d := flags.Int("depth"); d < 0 {
		return fmt.Errorf("trace: --depth %d: want 0 (all) or more", d)
	}
	if w := flags.Int("width"); w <= 0 || w > maxTraceWidth {
		return fmt.Errorf("trace: --width %d: want a bar width of 1 to %d characters", w, maxTraceWidth)
	}
	if page := flags.String("html"); page != "" {
		// Before anything is read or printed: the page must not replace
		// the trace file it is drawn from, and must be writable.
		if jaegerURL == "" && tempoURL == "" && samePath(page, arg) {
			return fmt.Errorf("trace: --html %s: is the trace file read; name another file for the page", page)
		}
		if err := atomicfile.Check(page); err != nil {
			return fmt.Errorf("trace: --html %s: %w", page, err)
		}
	}
	errOut := c.App.ErrWriter
	if errOut == nil {
		errOut = os.Stderr
	}
	if !flags.Bool("timeline") && (flags.IsSet("last") || flags.IsSet("since")) {
		return errors.New("trace: --last and --since pick the jobs of --timeline; give --timeline")
	}
	if n := flags.Int("last"); flags.IsSet("last") && n <= 0 {
		return fmt.Errorf("trace: --last %d: want a positive count of jobs", n)
	}
	if d := flags.Duration("since"); flags.IsSet("since") && d <= 0 {
		return fmt.Errorf("trace: --since %v: want a positive duration (e.g. 10m)", d)
	}
	if flags.Bool("timeline") {
		if jaegerURL != "" || tempoURL != "" || flags.String("trace-id") != "" {
			return errors.New("trace: --timeline draws every job of a FILE; it takes no --jaeger, --tempo or --trace-id")
		}
		return runTimeline(flags, errOut, arg)
	}
	spans, traceID, col, err := loadTrace(c.Context, errOut, flags.Duration("timeout"), arg, jaegerURL, tempoURL, flags.String("trace-id"))
	if err != nil {
		return err
	}
	out := c.App.Writer
	if out == nil {
		out = os.Stdout
	}
	opts := tracefile.WaterfallOptions{
		Width: flags.Int("width"), MaxDepth: flags.Int("depth"), ASCII: flags.Bool("ascii"), TraceID: traceID,
	}
	if err := tracefile.Waterfall(out, spans, opts); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if awaitsDaemonSpans(spans) {
		if jaegerURL != "" || tempoURL != "" {
			fmt.Fprintf(out, "no %s in this trace yet: the daemon's spans may still be on their way (its exporter sends in batches, a few seconds); run this again in a few seconds\n", semconv.SpanEngineJob)
		} else {
			fmt.Fprintf(out, "no %s in this trace: the daemon's spans are not in %s (yet: its exporter sends in batches, a few seconds; or they went to its own --trace-file or OTLP backend)\n", semconv.SpanEngineJob, arg)
		}
	}
	if path := flags.String("html"); path != "" {
		if err := writeTraceHTML(path, spans, traceID); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nHTML waterfall: %s\n", path)
	}
	if col != nil && flags.String("trace-id") == "" {
		listOthers(out, col, traceID)
	}
	return nil
}

// submitServiceName is the service.name of cuzk submit's spans (unless
// OTEL_SERVICE_NAME names another).
const submitServiceName = "cuzk-submit"

// awaitsDaemonSpans says whether spans (one trace) hold a call of the
// daemon's API that asks for a proof but no engine.job span: a span of
// cuzk submit's service, or one named for the Prove or SubmitProof RPC
// (otelgrpc names both the client's and the server's span
// "cuzk.v1.ProvingEngine/Prove"). The daemon exports its spans in batches,
// seconds after the client's, so such a trace read back at once shows the
// client's span alone; a daemon's status polls (other RPCs) hold no
// engine.job and are no such trace.
func awaitsDaemonSpans(spans []tracefile.Span) bool {
	call := false
	for _, s := range spans {
		if s.Name == semconv.SpanEngineJob {
			return false
		}
		switch {
		case s.Service == submitServiceName,
			"/"+s.Name == cuzkv1.ProvingEngine_Prove_FullMethodName,
			"/"+s.Name == cuzkv1.ProvingEngine_SubmitProof_FullMethodName:
			call = true
		}
	}
	return call
}

// trailingFlags parses the arguments after the first as the command's
// flags, on a context whose parent is c, so a flag given after the argument
// wins over the same flag given before it. More than one argument is an
// error.
func trailingFlags(c *cli.Context) (*cli.Context, error) {
	rest := c.Args().Tail()
	if len(rest) == 0 {
		return c, nil
	}
	set := flag.NewFlagSet("trace", flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		if err := f.Apply(set); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
	}
	// Flags given before the argument first, so those after it override.
	var setErr error
	set.VisitAll(func(f *flag.Flag) {
		if c.IsSet(f.Name) && setErr == nil {
			setErr = set.Set(f.Name, fmt.Sprint(c.Value(f.Name)))
		}
	})
	if setErr != nil {
		return nil, fmt.Errorf("trace: %w", setErr)
	}
	if err := set.Parse(rest); err != nil {
		return nil, trailingFlagError(c, "trace", err)
	}
	if set.NArg() > 0 {
		return nil, fmt.Errorf("trace: want one argument, got %q and %q", c.Args().First(), set.Arg(0))
	}
	return cli.NewContext(c.App, set, c), nil
}

// trailingFlagError is err, the flag package's error for a flag given
// after the arguments, as usageError words the same error for one given
// before them ("--since 5: not a duration (...)"), else err after the
// command's name.
func trailingFlagError(c *cli.Context, name string, err error) error {
	if u := usageError(c, err, false); u != err {
		return u
	}
	return fmt.Errorf("%s: %w", name, err)
}

// loadTrace returns the spans of the trace to show and its id: the trace
// of arg from Jaeger or Tempo, or from the file arg the trace traceID (if
// set) or else the last one to start; for a file it also prints to out,
// after the waterfall, the other traces the file holds (see listOthers).
func loadTrace(ctx context.Context, warn io.Writer, timeout time.Duration, arg, jaegerURL, tempoURL, traceID string) ([]tracefile.Span, string, *tracefile.Collection, error) {
	if traceID != "" {
		id, err := tracefile.NormalizeTraceID(traceID)
		if err != nil {
			return nil, "", nil, fmt.Errorf("trace: --trace-id %s: not a trace id (want up to 32 hex digits)", traceID)
		}
		traceID = id
	}
	b := traceBackend{jaeger: jaegerURL, tempo: tempoURL}
	var spans []tracefile.Span
	var err error
	if b.remote() {
		if _, err := tracefile.NormalizeTraceID(arg); err != nil {
			flagName, _, _ := strings.Cut(b.flag(), " ")
			return nil, "", nil, fmt.Errorf("trace: %s is not a trace id (up to 32 hex digits) to fetch from %s; a FILE is read without %s", arg, b.flag(), flagName)
		}
		spans, err = b.fetch(ctx, timeout, arg)
		traceID = arg
	} else {
		col, err := readTraceFile(warn, arg, 0, traceID, tracefile.CollectOptions{})
		if err != nil {
			return nil, "", nil, fmt.Errorf("trace: %w", err)
		}
		if traceID == "" {
			latest, _ := col.Latest()
			traceID = latest.ID
		}
		spans = col.Spans[traceID]
		if len(spans) == 0 {
			return nil, "", nil, fmt.Errorf("trace: trace %s: not found in %s", traceID, arg)
		}
		return spans, traceID, col, nil
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("trace: %w", err)
	}
	return spans, traceID, nil, nil
}

// readTraceFile streams the OTLP JSON lines file at path from offset (in
// bytes) into a Collector: only the
// trace traceID when set, else the latest traces within opts. Unreadable
// lines are reported on warn once a span was read (as they are met after
// it), or at the end when traceID is not found; a file of which no line
// is OTLP JSON (a file of another kind: /etc/passwd, a binary) is one
// line, errNotATraceFile's, and nothing on warn. A file with no span is
// an error.
func readTraceFile(warn io.Writer, path string, offset int64, traceID string, opts tracefile.CollectOptions) (*tracefile.Collection, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && looksLikeTraceID(path) {
			return nil, fmt.Errorf("%s is not a file; for a trace id give --jaeger URL or --tempo URL", path)
		}
		return nil, fmt.Errorf("%w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a trace file; %s", path, traceFileIs)
	}
	// The exporter writes each line whole with O_APPEND, so where the file
	// ended is where a line starts. A file shorter than offset was
	// replaced since: it is read whole.
	var r io.Reader = f
	if st, err := f.Stat(); err == nil && offset > 0 && offset <= st.Size() {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	col := tracefile.NewCollector(opts)
	skips := skipReporter{w: warn, path: path}
	err = tracefile.ScanOTLPJSONLines(r, tracefile.ScanOptions{TraceID: traceID}, func(s tracefile.Span) error {
		skips.spanRead()
		col.Add(s)
		return nil
	}, skips.skip)
	c := col.Collection()
	if err == nil && len(c.Summaries) == 0 && traceID == "" && skips.n > 0 {
		return nil, errNotATraceFile(path, skips.n, skips.first)
	}
	skips.done()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(c.Summaries) == 0 {
		switch {
		case traceID != "" && skips.n > 0:
			return nil, fmt.Errorf("trace %s: not found in %s (%d unreadable lines skipped)", traceID, path, skips.n)
		case traceID != "":
			return nil, fmt.Errorf("trace %s: not found in %s", traceID, path)
		default:
			return nil, fmt.Errorf("%s holds no spans", path)
		}
	}
	for _, s := range c.Summaries {
		if s.Dropped > 0 {
			fmt.Fprintf(warn, "cuzk: %s: trace %s: %d span%s past the cap of %d spans (%d MiB) a trace left out\n", path, s.ID, s.Dropped, human.Plural(int(s.Dropped)), tracefile.DefaultMaxSpansPerTrace, tracefile.DefaultMaxKeptBytes>>20)
		}
	}
	return c, nil
}

// listOthers prints the traces of col other than shown, the latest first:
// those of proofs (with an engine.job span; at most 20, then how many more),
// then the others (a daemon's status polls and waits) counted by root name,
// so a file's earlier proofs can be picked with --trace-id.
func listOthers(w io.Writer, col *tracefile.Collection, shown string) {
	var jobs []tracefile.TraceSummary
	var others []string
	count := map[string]int{}
	anyJob := false
	for _, s := range col.Summaries {
		anyJob = anyJob || s.Jobs > 0
	}
	for _, s := range col.Summaries {
		switch {
		case s.ID == shown:
		case s.Jobs > 0 || !anyJob:
			jobs = append(jobs, s)
		default:
			if count[s.Root] == 0 {
				others = append(others, s.Root)
			}
			count[s.Root]++
		}
	}
	total := len(jobs) + len(col.Summaries) - len(jobs) - 1 + col.Unlisted
	if total <= 0 {
		return
	}
	fmt.Fprintf(w, "\n%d other trace%s in the file (cuzk trace FILE --trace-id ID shows one), latest first:\n", total, human.Plural(total))
	const maxListed = 20
	for i := len(jobs) - 1; i >= 0 && i >= len(jobs)-maxListed; i-- {
		s := jobs[i]
		fmt.Fprintf(w, "  %s  %s  %-20s %10.3f ms  %d span%s\n", s.ID, s.Start.Format("2006-01-02T15:04:05.000Z07:00"), s.Root, float64(s.Duration())/1e6, s.Spans, human.Plural(s.Spans))
	}
	if more := len(jobs) - maxListed; more > 0 {
		fmt.Fprintf(w, "  ... and %d earlier\n", more)
	}
	if len(others) > 0 {
		var parts []string
		for _, r := range others {
			parts = append(parts, fmt.Sprintf("%s ×%d", r, count[r]))
		}
		n := len(col.Summaries) - len(jobs) - 1
		fmt.Fprintf(w, "  and %d trace%s without a proof (engine.job): %s\n", n, human.Plural(n), strings.Join(parts, ", "))
	}
	if col.Unlisted > 0 {
		fmt.Fprintf(w, "  and %d earlier trace%s not listed (the latest %d are)\n", col.Unlisted, human.Plural(col.Unlisted), len(col.Summaries))
	}
}

// traceFileIs says what a trace file is, for the errors of a file that is
// none.
var traceFileIs = "a trace file is the OTLP JSON lines that cuzk prove, serve and submit write (--trace-file, default ./" +
	otelcuzk.DefaultTraceFile + ") or a Collector's file exporter writes"

// errNotATraceFile is the one line for the file at path of which no line
// reads as OTLP JSON spans (n lines skipped, the first for the reason
// first): what it is not, why (the first line's reason) and what a trace
// file is.
func errNotATraceFile(path string, n int, first error) error {
	why := strings.Replace(first.Error(), tracefile.ErrMalformed.Error()+": ", "", 1)
	return fmt.Errorf("%s is not a trace file: none of its lines reads as OTLP JSON spans (%d skipped; %s); %s", path, n, why, traceFileIs)
}

// skipReporter tells w which lines of the trace file at path could not be
// read (at most three, then how many more), so a damaged line is seen but
// does not hide the rest of the file. Until a span is read (spanRead) it
// holds them: a file of which no line reads is no trace file with damaged
// lines but a file of another kind, said in one line (errNotATraceFile)
// instead; done says what it holds.
type skipReporter struct {
	w     io.Writer
	path  string
	n     int
	first error
	held  []error // the first three, while no span was read
	live  bool    // a span was read: lines are said as they are met
}

func (r *skipReporter) skip(err error) {
	r.n++
	if r.first == nil {
		r.first = err
	}
	switch {
	case r.n > 3:
	case r.live:
		r.say(err)
	default:
		r.held = append(r.held, err)
	}
}

// spanRead says the lines held, and from now on each as it is met.
func (r *skipReporter) spanRead() {
	if r.live {
		return
	}
	r.live = true
	for _, err := range r.held {
		r.say(err)
	}
	r.held = nil
}

func (r *skipReporter) say(err error) {
	fmt.Fprintf(r.w, "cuzk: %s: skipped an unreadable line: %v\n", r.path, err)
}

// done says the lines held and how many more were skipped.
func (r *skipReporter) done() {
	r.spanRead()
	if r.n > 3 {
		fmt.Fprintf(r.w, "cuzk: %s: %d more unreadable lines skipped\n", r.path, r.n-3)
	}
}

func looksLikeTraceID(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	return strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

// writeTraceHTML writes one trace of spans as HTML: traceID's, else the
// last trace to start (a file's most recent proof). The file appears whole
// or not at all.
func writeTraceHTML(path string, spans []tracefile.Span, traceID string) error {
	traces := tracefile.BuildTraces(spans)
	if traceID == "" && len(traces) > 0 {
		traceID = traces[len(traces)-1].ID
	}
	var sel []tracefile.Span
	for _, s := range spans {
		if strings.EqualFold(s.TraceID, traceID) {
			sel = append(sel, s)
		}
	}
	if len(sel) == 0 {
		return fmt.Errorf("trace: --html: trace %s: %w", traceID, tracefile.ErrTraceNotFound)
	}
	if err := writeFileAtomic(path, func(w io.Writer) error { return tracefile.WriteHTML(w, sel) }); err != nil {
		return fmt.Errorf("trace: --html: %w", err)
	}
	return nil
}

// fileOffset is where a trace file ended before a run appended to it.
type fileOffset struct {
	path string
	size int64
}

// traceFileEnd records the size of the trace file at path (0 when it does
// not exist yet), for printFileTrace.
func traceFileEnd(path string) fileOffset {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return fileOffset{path: path}
	}
	return fileOffset{path: path, size: st.Size()}
}

// printFileTrace reads the trace traceID back from the file the exporter
// wrote (after the flush), from where the file ended before this run when
// from is that file, and prints tracefile's waterfall of it. Lines of the
// file that do not parse (another process's write cut short) are skipped
// with a note on warn.
func printFileTrace(w, warn io.Writer, path, traceID string, from fileOffset) error {
	off := int64(0)
	if from.path == path {
		off = from.size
	}
	col, err := readTraceFile(warn, path, off, traceID, tracefile.CollectOptions{})
	if err != nil {
		return err
	}
	return tracefile.Waterfall(w, col.Spans[strings.ToLower(traceID)], tracefile.WaterfallOptions{TraceID: traceID})
}

// writeFileAtomic writes path through write: the file appears whole or not
// at all, and an error names path (not a temporary file).
func writeFileAtomic(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, 0o644, write)
}
