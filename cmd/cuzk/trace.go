package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
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

--html FILE also writes the trace as a self-contained HTML waterfall to open
in a browser (for a file holding several traces: --trace-id, else the last
one).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "jaeger", Usage: "Jaeger query `URL` (the UI's address); the argument is a trace id"},
			&cli.StringFlag{Name: "tempo", Usage: "Tempo HTTP `URL`; the argument is a trace id"},
			&cli.StringFlag{Name: "trace-id", Usage: "with a FILE, only the trace of this `ID`"},
			&cli.StringFlag{Name: "html", Usage: "also write the trace as a self-contained HTML waterfall to `FILE`"},
			&cli.IntFlag{Name: "depth", Usage: "print tree levels down to `N` (0: all)"},
			&cli.IntFlag{Name: "width", Value: 40, Usage: "bar width in characters"},
			&cli.BoolFlag{Name: "ascii", Usage: "draw bars with ASCII characters"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "limit for reading from Jaeger or Tempo"},
		},
		Action: runTrace,
	})
}

func runTrace(c *cli.Context) error {
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
	if w := flags.Int("width"); w <= 0 {
		return fmt.Errorf("trace: --width %d: want a positive bar width", w)
	}
	errOut := c.App.ErrWriter
	if errOut == nil {
		errOut = os.Stderr
	}
	spans, traceID, err := loadTrace(c.Context, errOut, flags.Duration("timeout"), arg, jaegerURL, tempoURL, flags.String("trace-id"))
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
	if path := flags.String("html"); path != "" {
		if err := writeTraceHTML(path, spans, traceID); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nHTML waterfall: %s\n", path)
	}
	return nil
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
		return nil, fmt.Errorf("trace: %w", err)
	}
	if set.NArg() > 0 {
		return nil, fmt.Errorf("trace: want one argument, got %q and %q", c.Args().First(), set.Arg(0))
	}
	return cli.NewContext(c.App, set, c), nil
}

// loadTrace returns the spans to show and the trace id to select among
// them ("" for every trace of a file).
func loadTrace(ctx context.Context, warn io.Writer, timeout time.Duration, arg, jaegerURL, tempoURL, traceID string) ([]tracefile.Span, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: timeout}
	var spans []tracefile.Span
	var err error
	switch {
	case jaegerURL != "":
		spans, err = tracefile.FetchJaeger(ctx, client, jaegerURL, arg)
		traceID = arg
	case tempoURL != "":
		spans, err = tracefile.FetchTempo(ctx, client, tempoURL, arg)
		traceID = arg
	default:
		f, openErr := os.Open(arg)
		if openErr != nil {
			if errors.Is(openErr, os.ErrNotExist) && looksLikeTraceID(arg) {
				return nil, "", fmt.Errorf("trace: %s is not a file; for a trace id give --jaeger URL or --tempo URL", arg)
			}
			return nil, "", fmt.Errorf("trace: %w", openErr)
		}
		defer f.Close()
		var skipped []error
		spans, skipped, err = tracefile.ReadOTLPJSONLinesSkipping(f)
		if err == nil && len(spans) == 0 && len(skipped) > 0 {
			return nil, "", fmt.Errorf("trace: %s holds no readable spans (%d lines skipped): %w", arg, len(skipped), skipped[0])
		}
		reportSkipped(warn, arg, skipped)
		if err == nil && len(spans) == 0 {
			err = fmt.Errorf("%s holds no spans", arg)
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("trace: %w", err)
	}
	return spans, traceID, nil
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
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("trace: --html: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeHTMLTo(tmp, sel); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("trace: --html: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("trace: --html: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("trace: --html: %w", err)
	}
	return nil
}

func writeHTMLTo(w io.Writer, spans []tracefile.Span) error {
	if err := tracefile.WriteHTML(w, spans); err != nil {
		return fmt.Errorf("trace: --html: %w", err)
	}
	return nil
}

// reportSkipped tells w which lines of the trace file at path could not be
// read (at most three, then how many more), so a damaged line is seen but
// does not hide the rest of the file.
func reportSkipped(w io.Writer, path string, skipped []error) {
	for i, err := range skipped {
		if i == 3 {
			fmt.Fprintf(w, "cuzk: %s: %d more unreadable lines skipped\n", path, len(skipped)-3)
			return
		}
		fmt.Fprintf(w, "cuzk: %s: skipped an unreadable line: %v\n", path, err)
	}
}
