package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/urfave/cli/v2"
)

// runTimeline prints (and with --html writes) the timeline of every job
// of the trace file at path. A file with more traces than the reader keeps
// shows the latest, saying how many earlier ones are left out.
func runTimeline(flags *cli.Context, warn io.Writer, path string) error {
	col, err := readTraceFile(warn, path, 0, "", tracefile.CollectOptions{})
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if col.Evicted > 0 || col.Unlisted > 0 {
		kept, left := len(col.Kept()), col.Evicted+col.Unlisted
		fmt.Fprintf(warn, "cuzk: %s: the timeline shows the latest %d trace%s; %d earlier left out (memory cap)\n",
			path, kept, human.Plural(kept), left)
	}
	var traces []tracefile.Trace
	for _, s := range col.Kept() {
		for _, t := range tracefile.BuildTraces(col.Spans[s.ID]) {
			if t.ID == s.ID {
				traces = append(traces, t)
			}
		}
	}
	jobs := tracefile.TimelineJobs(traces)
	all := len(jobs)
	if d := flags.Duration("since"); flags.IsSet("since") && len(jobs) > 0 {
		end := jobs[0].End
		for _, j := range jobs {
			if j.End.After(end) {
				end = j.End
			}
		}
		cut := end.Add(-d)
		jobs = slices.DeleteFunc(jobs, func(j tracefile.TimelineJob) bool { return !j.End.After(cut) })
	}
	if n := flags.Int("last"); flags.IsSet("last") && len(jobs) > n {
		jobs = jobs[len(jobs)-n:] // by start
	}
	if len(jobs) < all {
		fmt.Fprintf(warn, "cuzk: %s: the timeline shows %d of its %d jobs (--last/--since)\n", path, len(jobs), all)
	}
	if len(jobs) == 0 && all > 0 {
		return fmt.Errorf("trace: %s: no job ran in the last %v of the file", path, flags.Duration("since"))
	}
	out := flags.App.Writer
	if out == nil {
		out = os.Stdout
	}
	opts := tracefile.TimelineOptions{ASCII: flags.Bool("ascii")}
	if flags.IsSet("width") {
		opts.Width = flags.Int("width")
	}
	if err := tracefile.WriteTimeline(out, jobs, opts); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if p := flags.String("html"); p != "" {
		if err := writeFileAtomic(p, func(w io.Writer) error { return tracefile.WriteTimelineHTML(w, jobs) }); err != nil {
			return fmt.Errorf("trace: --html: %w", err)
		}
		fmt.Fprintf(out, "\nHTML timeline: %s\n", p)
	}
	return nil
}
