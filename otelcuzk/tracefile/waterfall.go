package tracefile

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// LayerParents are the spans whose direct children Layers breaks the time
// down by: the stages of a job (queue, synthesize, prove, serialize, verify)
// and the steps of the prover (compute_h, the MSMs, GPU work, buffer
// release).
var LayerParents = []string{semconv.SpanEngineJob, semconv.SpanGroth16Prove}

// LayerUntraced is the Layer.Name of a parent's own uncovered time.
const LayerUntraced = "untraced"

// Layer is the time of one kind of child inside one kind of parent, summed
// over the trace.
type Layer struct {
	Parent   string        // name of the parent span
	Name     string        // name of the child spans, or LayerUntraced
	Count    int           // child spans summed (1 for LayerUntraced)
	Duration time.Duration // summed durations; overlapping children each count in full
	Share    float64       // Duration over the parents' summed duration, 0..1 (may exceed 1 for concurrent children)
}

// Layers says where the time of t went: for each name in LayerParents
// present in t, the parent itself (Name == Parent, Share 1), then its direct
// children grouped by name in order of first start, then LayerUntraced with
// the parents' uncovered time. A trace with none of LayerParents is broken
// down under its root spans instead. The processor's own `untraced` spans
// are not counted as children (their time is the LayerUntraced row).
func Layers(t Trace) []Layer {
	byName := map[string][]*Node{}
	t.Walk(func(n *Node) bool {
		byName[n.Name] = append(byName[n.Name], n)
		return true
	})
	var parents [][]*Node
	for _, p := range LayerParents {
		if ns := byName[p]; len(ns) > 0 {
			parents = append(parents, ns)
		}
	}
	if len(parents) == 0 {
		for _, r := range t.Roots {
			parents = append(parents, []*Node{r})
		}
	}
	var out []Layer
	for _, ps := range parents {
		var total, untracedSum time.Duration
		for _, p := range ps {
			total += p.Duration()
			untracedSum += p.Untraced
		}
		share := func(d time.Duration) float64 {
			if total == 0 {
				return 0
			}
			return float64(d) / float64(total)
		}
		name := ps[0].Name
		out = append(out, Layer{Parent: name, Name: name, Count: len(ps), Duration: total, Share: 1})
		idx := map[string]int{}
		var rows []Layer
		for _, p := range ps {
			for _, c := range p.Children {
				if c.Name == semconv.SpanUntraced {
					continue
				}
				i, ok := idx[c.Name]
				if !ok {
					i = len(rows)
					idx[c.Name] = i
					rows = append(rows, Layer{Parent: name, Name: c.Name})
				}
				rows[i].Count++
				rows[i].Duration += c.Duration()
			}
		}
		for i := range rows {
			rows[i].Share = share(rows[i].Duration)
		}
		out = append(out, rows...)
		out = append(out, Layer{Parent: name, Name: LayerUntraced, Count: 1, Duration: untracedSum, Share: share(untracedSum)})
	}
	return out
}

// WaterfallOptions controls Waterfall. The zero value prints everything with
// a 40-character bar.
type WaterfallOptions struct {
	Width    int    // bar width in characters; 0 means 40
	MaxDepth int    // deepest tree level printed, roots being level 0; 0 prints all levels
	ASCII    bool   // draw bars with '#' and '|' instead of block characters
	TraceID  string // print only this trace (hex, any case); "" prints every trace
}

// Waterfall prints, for each trace of spans (see BuildTraces), a header,
// one row per span in tree order (start offset from the trace's start in
// ms, duration in ms, untraced ms where a span has children, a bar placing
// the span on the trace's time line, and the span's name indented by depth,
// with its service when the trace has several and its error message when it
// failed; indentation stops at MaxIndentDepth and deeper chains of single
// children collapse to one line), then the summary of Layers and the trace's total untraced time.
// opts.MaxDepth > 0 limits the rows to that many levels below the roots
// (the summary still covers every span). It returns the first write error,
// or an error when opts.TraceID names no trace in spans.
func Waterfall(w io.Writer, spans []Span, opts WaterfallOptions) error {
	if opts.Width <= 0 {
		opts.Width = 40
	}
	ew := &errWriter{w: w}
	found := false
	for _, t := range BuildTraces(spans) {
		if opts.TraceID != "" && !strings.EqualFold(t.ID, opts.TraceID) {
			continue
		}
		if found {
			ew.printf("\n")
		}
		found = true
		writeTrace(ew, t, opts)
	}
	if ew.err != nil {
		return fmt.Errorf("write waterfall: %w", ew.err)
	}
	if opts.TraceID != "" && !found {
		return fmt.Errorf("trace %s: %w", opts.TraceID, ErrTraceNotFound)
	}
	return nil
}

func writeTrace(ew *errWriter, t Trace, opts WaterfallOptions) {
	rootName := ""
	if len(t.Roots) > 0 {
		rootName = t.Roots[0].Name
	}
	services := t.Services()
	ew.printf("trace %s  %s  %.3f ms  %d span%s", t.ID, rootName, human.Milliseconds(t.Duration()), t.Spans, human.Plural(t.Spans))
	if len(services) > 0 {
		ew.printf("  service %s", strings.Join(services, ", "))
	}
	ew.printf("\n%10s %10s %10s  %-*s  %s\n", "start ms", "dur ms", "untraced", opts.Width+2, "", "span")
	row := func(n *Node) {
		unt := ""
		if len(n.Children) > 0 {
			unt = fmt.Sprintf("%.3f", human.Milliseconds(n.Untraced))
		}
		name := indent(n.Depth) + n.Name
		if len(services) > 1 && n.Service != "" {
			name += " [" + n.Service + "]"
		}
		if n.Status.Code == StatusError {
			// A cancelled span says so as the job's state does
			// (CANCELLED), not as a failure.
			if t, _ := n.Attrs[string(semconv.KeyErrorType)].(string); t == semconv.ErrorTypeCanceled {
				name += "  CANCELLED"
			} else {
				name += "  ERROR"
			}
			if n.Status.Message != "" {
				name += ": " + n.Status.Message
			}
		}
		name += abandonedNote(n)
		ew.printf("%10.3f %10.3f %10s  %s  %s\n", human.Milliseconds(n.Start.Sub(t.Start)), human.Milliseconds(n.Duration()), unt, bar(t, n.Span, opts), name)
	}
	shown := func(n *Node) bool { return opts.MaxDepth <= 0 || n.Depth <= opts.MaxDepth }
	// An explicit stack, not recursion: a chain of 100,000 spans is as
	// deep as it is long.
	stack := make([]*Node, 0, len(t.Roots))
	for i := len(t.Roots) - 1; i >= 0; i-- {
		stack = append(stack, t.Roots[i])
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !shown(n) {
			continue
		}
		row(n)
		// Past the indentation cap a chain of single children is one line:
		// its rows would say nothing the chain's last span does not.
		if n.Depth >= MaxIndentDepth && len(n.Children) == 1 {
			last, skipped := n.Children[0], 0
			for len(last.Children) == 1 && shown(last.Children[0]) {
				last, skipped = last.Children[0], skipped+1
			}
			if skipped > 0 {
				ew.printf("%10s %10s %10s  %-*s  %s… %d spans of a chain of single children (depth %d to %d)\n",
					"", "", "", opts.Width+2, "", indent(n.Depth+1), skipped, n.Depth+1, n.Depth+skipped)
			}
			stack = append(stack, last)
			continue
		}
		for i := len(n.Children) - 1; i >= 0; i-- {
			stack = append(stack, n.Children[i])
		}
	}
	ew.printf("where the time went\n")
	for _, l := range Layers(t) {
		if l.Name == l.Parent {
			ew.printf("  %-34s %12.3f ms  (%d span%s)\n", l.Name, human.Milliseconds(l.Duration), l.Count, human.Plural(l.Count))
			continue
		}
		label := l.Name
		if l.Count > 1 {
			label = fmt.Sprintf("%s ×%d", l.Name, l.Count)
		}
		ew.printf("    %-32s %12.3f ms  %5.1f%%\n", label, human.Milliseconds(l.Duration), 100*l.Share)
	}
	total := t.UntracedTotal()
	share := 0.0
	if d := t.Duration(); d > 0 {
		share = 100 * float64(total) / float64(d)
	}
	ew.printf("  %-34s %12.3f ms  %5.1f%% of the trace\n", "untraced, all spans", human.Milliseconds(total), share)
}

// MaxIndentDepth is the deepest tree level Waterfall indents (two spaces a
// level): a deeper span is indented as that level, its name prefixed with
// its depth ("[depth 40] "), and a chain of single children below it is
// printed as its first and last span and one line counting those between.
// Output is then linear in the number of spans, whatever the depth.
const MaxIndentDepth = 32

// indent is the indentation of a span at depth, capped at MaxIndentDepth.
func indent(depth int) string {
	if depth <= MaxIndentDepth {
		return strings.Repeat("  ", depth)
	}
	return strings.Repeat("  ", MaxIndentDepth) + fmt.Sprintf("[depth %d] ", depth)
}

// bar draws s on the trace's time line, opts.Width cells wide, between
// delimiters. A span too short for a cell still shows one mark.
func bar(t Trace, s Span, opts WaterfallOptions) string {
	full, thin, edge := "█", "▏", "|"
	if opts.ASCII {
		full, thin = "#", "|"
	}
	cells := make([]string, opts.Width)
	for i := range cells {
		cells[i] = " "
	}
	if d := t.Duration(); d > 0 {
		from := int(float64(opts.Width) * float64(s.Start.Sub(t.Start)) / float64(d))
		to := int(float64(opts.Width)*float64(s.End.Sub(t.Start))/float64(d) + 0.5)
		from = min(max(from, 0), opts.Width-1)
		to = min(max(to, from), opts.Width)
		if to == from {
			cells[from] = thin
		}
		for i := from; i < to; i++ {
			cells[i] = full
		}
	} else {
		cells[0] = thin
	}
	return edge + strings.Join(cells, "") + edge
}

// errWriter keeps the first write error so the printing code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

// abandonedNote is what a row says beside its span's name of work a
// cancelled job left running (prover/engine's cuzk.abandoned.*
// attributes), which no child span shows: on engine.abandoned the work
// and what it holds, on a queue span the part of the wait during which
// such work held a slot, and whose it was; "" for other spans.
func abandonedNote(n *Node) string {
	step, _ := n.Attrs[string(semconv.KeyAbandonedStep)].(string)
	if step == "" {
		return ""
	}
	if n.Name == semconv.SpanEngineAbandoned {
		holds := "a synthesis slot"
		if w, _ := n.Attrs[string(semconv.KeyAbandonedWorker)].(string); w != "" {
			holds = "worker " + w
		}
		return fmt.Sprintf("  %s left running, holding %s", step, holds)
	}
	ms, ok := n.Attrs[string(semconv.KeyAbandonedWaitMS)].(float64)
	if !ok {
		return ""
	}
	job, _ := n.Attrs[string(semconv.KeyAbandonedJobID)].(string)
	return fmt.Sprintf("  waited %.3f ms for abandoned %s of %s", ms, step, job)
}
