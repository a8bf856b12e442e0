package tracefile

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// diffHTML is the page of WriteDiffHTML: two waterfalls and the script
// that draws them from the embedded JSON; no external assets.
//
//go:embed diff.html
var diffHTML string

type diffHTMLDoc struct {
	TracesA      int      `json:"traces_a"`
	TracesB      int      `json:"traces_b"`
	AxisMS       float64  `json:"axis_ms"`
	ThresholdMS  float64  `json:"threshold_ms"`
	ThresholdPct float64  `json:"threshold_pct"`
	Verdicts     []string `json:"verdicts"`
	// RunA and RunB say what each side ran (RunText); NoiseNote, with one
	// trace a side, the noise floor in use.
	RunA      string       `json:"run_a"`
	RunB      string       `json:"run_b"`
	NoiseNote string       `json:"noise_note,omitempty"`
	A         diffHTMLSide `json:"a"`
	B         diffHTMLSide `json:"b"`
}

type diffHTMLSide struct {
	TraceID    string         `json:"trace_id"`
	DurationMS float64        `json:"duration_ms"`
	Spans      []diffHTMLSpan `json:"spans"`
}

type diffHTMLSpan struct {
	Path         string  `json:"path"`
	Name         string  `json:"name"`
	Depth        int     `json:"depth"`
	StartMS      float64 `json:"start_ms"` // from the side's trace start
	DurationMS   float64 `json:"duration_ms"`
	UntracedSpan bool    `json:"untraced_span,omitempty"`
	Moved        bool    `json:"moved,omitempty"` // its path moved (Diff.Moved)
	Noisy        bool    `json:"noisy,omitempty"` // by the thresholds, within the spread
	DeltaMS      float64 `json:"delta_ms"`        // of its path (medians for sets)
	Only         bool    `json:"only,omitempty"`  // its path is on this side only
}

// WriteDiffHTML writes d as one self-contained HTML page: the waterfall of
// a trace of side A (spansA) and one of side B (spansB) side by side on
// one time axis (the longer trace's duration), each span's row marked when
// its path moved beyond d's thresholds (slower red, faster green, with the
// path's change in ms) or is on one side only, and the verdict lines
// above. For sets, pass the spans of one representative trace per side;
// the marks are the sets' medians. It returns an error when a side has no
// span or w fails.
func WriteDiffHTML(w io.Writer, d *Diff, spansA, spansB []Span) error {
	doc := diffHTMLDoc{
		TracesA: d.TracesA, TracesB: d.TracesB, ThresholdMS: d.opts.ThresholdMS, ThresholdPct: d.opts.ThresholdPct,
		Verdicts: append(append([]string{}, d.Failures...), d.Verdicts...), RunA: RunText(d.RunsA), RunB: RunText(d.RunsB),
	}
	if d.OneTraceEach() && d.opts.NoiseFloorPct > 0 {
		doc.NoiseNote = fmt.Sprintf("one trace a side: no run-to-run spread to measure; a span moves only by more than the noise floor, %g %% of A (identical CPU proofs, bench/trace-noise.md); --last N compares N traces a side", d.opts.NoiseFloorPct)
	}
	for i, spans := range [][]Span{spansA, spansB} {
		if len(spans) == 0 {
			return fmt.Errorf("side %c has no spans", 'A'+i)
		}
		traces := BuildTraces(spans)
		t := traces[len(traces)-1]
		side := diffHTMLSide{TraceID: t.ID, DurationMS: human.Milliseconds(t.Duration())}
		// Keys as ProfileOf makes them, from the job spans; the spans
		// above a job (a server span) are drawn but match no path.
		isJobRoot := map[*Node]bool{}
		for _, r := range jobRoots(t) {
			isJobRoot[r] = true
		}
		var walk func(n *Node, prefix, shown string, inJob bool)
		walk = func(n *Node, prefix, shown string, inJob bool) {
			key := n.Name
			switch {
			case isJobRoot[n]:
				inJob = true
			case inJob:
				key = prefix + keySep + n.Name
			}
			if shown != "" {
				shown += PathSep
			}
			shown += n.Name
			display := shown
			if inJob {
				display = strings.ReplaceAll(key, keySep, PathSep)
			}
			row := diffHTMLSpan{
				Path: display, Name: n.Name, Depth: n.Depth,
				StartMS: human.Milliseconds(n.Start.Sub(t.Start)), DurationMS: human.Milliseconds(n.Duration()), UntracedSpan: n.Name == semconv.SpanUntraced,
			}
			if dn := d.byKey[key]; dn != nil && inJob && !row.UntracedSpan {
				row.Moved, row.Noisy, row.DeltaMS = d.Moved(dn), d.Noisy(dn), human.Milliseconds(dn.Delta())
				row.Only = dn.OnlyA() || dn.OnlyB()
			}
			side.Spans = append(side.Spans, row)
			for _, c := range n.Children {
				walk(c, key, shown, inJob)
			}
		}
		for _, r := range t.Roots {
			walk(r, "", "", false)
		}
		if i == 0 {
			doc.A = side
		} else {
			doc.B = side
		}
		doc.AxisMS = max(doc.AxisMS, side.DurationMS)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("HTML: %w", err)
	}
	page := htmlPage{diffHTML, "diff-data", "the waterfalls"}.render("trace diff "+doc.A.TraceID+" / "+doc.B.TraceID, data)
	if _, err := io.WriteString(w, page); err != nil {
		return fmt.Errorf("write diff HTML: %w", err)
	}
	return nil
}
