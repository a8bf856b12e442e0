package tracefile

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
)

// WriteDiff prints d for a terminal: per side what ran (RunText) and its
// totals, the tree of paths with A, B, the change in ms and % (in ms on a
// baseline under SmallBase), the untraced time of each side (largest
// moves first at every level; a path on one side only is marked; a path
// that moved (Diff.Moved) ends in "*", one that changed by the thresholds
// within the run-to-run spread (Diff.Noisy) in "~", each explained under
// the tree when a row has one; with one trace a side a line says so and
// names the noise floor), then the verdict lines: "no span moved" exactly
// when no path moved. maxDepth > 0 limits the tree to that many levels
// below the roots. It returns the first write error.
func WriteDiff(w io.Writer, d *Diff, maxDepth int) error {
	ew := &errWriter{w: w}
	ew.printf("A: %s\n   %d trace%s, median %.3f ms, untraced %.3f ms\n", RunText(d.RunsA), d.TracesA, human.Plural(d.TracesA), human.Milliseconds(d.TotalA), human.Milliseconds(d.UntracedA))
	ew.printf("B: %s\n   %d trace%s, median %.3f ms, untraced %.3f ms\n", RunText(d.RunsB), d.TracesB, human.Plural(d.TracesB), human.Milliseconds(d.TotalB), human.Milliseconds(d.UntracedB))
	if d.opts.Normalize {
		ew.printf("times per constraint (--normalize): each trace's scaled to %s\n", sizeText(normalizedSize(d)))
	}
	ew.printf("\n%12s %12s %12s %8s %10s %10s  %s\n", "A ms", "B ms", "Δ ms", "Δ %", "untr A", "untr B", "span (largest moves first)")
	marked, noisy, shared := false, false, false
	d.walkDepth(maxDepth, func(n *DiffNode) {
		name := strings.Repeat("  ", n.Depth) + n.Name
		if n.CountA > 1 || n.CountB > 1 {
			name += fmt.Sprintf(" ×%s/%s", countText(n.CountA), countText(n.CountB))
		}
		switch {
		case n.OnlyA():
			name += "  [only A]"
		case n.OnlyB():
			name += "  [only B]"
		}
		switch {
		case d.Moved(n):
			name += "  *"
			marked = true
		case d.Noisy(n):
			name += "  ~"
			noisy = true
			shared = shared || d.SharedTime(n) && math.Abs(float64(n.Delta())) > d.opts.NoiseFloorPct/100*float64(n.A)
		}
		ew.printf("%12.3f %12.3f %12s %8s %10s %10s  %s\n", human.Milliseconds(n.A), human.Milliseconds(n.B), signedMS(n.Delta()), pctText(n), untrText(n, n.UntracedA), untrText(n, n.UntracedB), name)
	})
	if marked {
		ew.printf("%12s * moved by %g ms and %g %% of A or more (a path on one side only: by %g ms), beyond the run-to-run spread\n", "", d.opts.ThresholdMS, d.opts.ThresholdPct, d.opts.ThresholdMS)
	}
	if noisy {
		ew.printf("%12s ~ changed by the thresholds, but within the run-to-run spread: not a move\n", "")
	}
	if shared {
		ew.printf("%12s ~ on a span that ran beside its siblings (they share the cores): with one trace a side, a trade of\n"+
			"%12s   time between them is not a move unless their parent moved\n", "", "")
	}
	if d.OneTraceEach() && d.opts.NoiseFloorPct > 0 {
		ew.printf("%12s one trace a side: no run-to-run spread to measure, so a row moves only by more than the noise floor,\n"+
			"%12s %g %% of A (the spread of identical CPU proofs, bench/trace-noise.md); --last N compares N traces a side\n", "", "", d.opts.NoiseFloorPct)
	}
	ew.printf("\n")
	for _, f := range d.Failures {
		ew.printf("warning: %s\n", f)
	}
	if len(d.Verdicts) == 0 {
		ew.printf("no span moved by %g ms and %g %% or more\n", d.opts.ThresholdMS, d.opts.ThresholdPct)
	} else {
		ew.printf("moved (by %g ms and %g %% or more), by layer:\n", d.opts.ThresholdMS, d.opts.ThresholdPct)
		for _, v := range d.Verdicts {
			ew.printf("  %s\n", v)
		}
	}
	if ew.err != nil {
		return fmt.Errorf("write diff: %w", ew.err)
	}
	return nil
}

func (d *Diff) walkDepth(maxDepth int, f func(n *DiffNode)) {
	var walk func(ns []*DiffNode)
	walk = func(ns []*DiffNode) {
		for _, n := range ns {
			if maxDepth > 0 && n.Depth > maxDepth {
				continue
			}
			f(n)
			walk(n.Children)
		}
	}
	walk(d.Roots)
}

func countText(c float64) string {
	if c == math.Trunc(c) {
		return fmt.Sprint(int(c))
	}
	return fmt.Sprintf("%.1f", c)
}

func signedMS(d time.Duration) string { return fmt.Sprintf("%+.3f", human.Milliseconds(d)) }

func pctText(n *DiffNode) string {
	p := n.Pct()
	switch {
	case math.IsInf(p, 1):
		return "new"
	case n.OnlyA():
		return "gone"
	case !n.PctShown():
		// A % of under 1 ms says nothing: the delta, as the Δ ms column
		// writes it (FormatDelta rounds -0.03 to "+0.0" and signs with −).
		return signedMS(n.Delta()) + " ms"
	}
	return fmt.Sprintf("%+.1f%%", p)
}

// RunText says what a side ran, for a diff's header: "merkle 2^16 (65536
// constraints), backend cpu, release async, host h1, build 47dd6bd0a1b2",
// several values of one field joined by "|", unknown fields left out, and
// ", 1 job did not succeed (CANCELLED)" when some failed.
func RunText(r SideRuns) string {
	var parts []string
	circuit := strings.Join(r.Circuits, "|")
	if circuit == "" {
		circuit = "circuit unknown"
	}
	if len(r.Constraints) > 0 {
		var sizes []string
		for _, c := range r.Constraints {
			sizes = append(sizes, sizeText(c))
		}
		circuit += " " + strings.Join(sizes, "|")
	}
	parts = append(parts, circuit)
	for _, f := range []struct {
		name string
		v    []string
	}{{"backend", r.Backends}, {"release", r.Releases}, {"host", r.Hosts}, {"build", r.Builds}} {
		if len(f.v) > 0 {
			parts = append(parts, f.name+" "+strings.Join(f.v, "|"))
		}
	}
	if r.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d job%s did not succeed (%s)", r.Failed, human.Plural(r.Failed), outcomesText(r.Outcomes)))
	}
	return strings.Join(parts, ", ")
}

// sizeText writes a constraint count: "2^16 (65536 constraints)" for a
// power of two, else "1000 constraints".
func sizeText(c int64) string {
	if c > 0 && c&(c-1) == 0 {
		return fmt.Sprintf("2^%d (%d constraints)", bits.TrailingZeros64(uint64(c)), c)
	}
	return fmt.Sprintf("%d constraints", c)
}

// normalizedSize is the size a normalized diff's times are scaled to: A's
// first.
func normalizedSize(d *Diff) int64 {
	if len(d.RunsA.Constraints) > 0 {
		return d.RunsA.Constraints[0]
	}
	return 0
}

func untrText(n *DiffNode, d time.Duration) string {
	if d == 0 && (n.UntracedA == 0 && n.UntracedB == 0) {
		return ""
	}
	return fmt.Sprintf("%.3f", human.Milliseconds(d))
}

// diffJSON is WriteDiffJSON's document.
type diffJSON struct {
	TracesA      int     `json:"traces_a"`
	TracesB      int     `json:"traces_b"`
	TotalAMS     float64 `json:"total_a_ms"`
	TotalBMS     float64 `json:"total_b_ms"`
	UntracedAMS  float64 `json:"untraced_a_ms"`
	UntracedBMS  float64 `json:"untraced_b_ms"`
	ThresholdMS  float64 `json:"threshold_ms"`
	ThresholdPct float64 `json:"threshold_pct"`
	// OneTraceEach: no spread to measure, NoiseFloorPct stands in.
	OneTraceEach  bool           `json:"one_trace_each"`
	NoiseFloorPct float64        `json:"noise_floor_pct"`
	Normalized    bool           `json:"normalized,omitempty"` // times scaled to NormalizedTo constraints
	NormalizedTo  int64          `json:"normalized_to,omitempty"`
	RunA          runJSON        `json:"run_a"`
	RunB          runJSON        `json:"run_b"`
	Nodes         []diffNodeJSON `json:"nodes"`
	Verdicts      []string       `json:"verdicts"`
	Failures      []string       `json:"failures"` // Diff.Failures
}

// runJSON is a side's SideRuns.
type runJSON struct {
	Text        string   `json:"text"` // RunText
	Circuits    []string `json:"circuits"`
	Constraints []int64  `json:"constraints"`
	Backends    []string `json:"backends"`
	Releases    []string `json:"release_modes"`
	Hosts       []string `json:"hosts"`
	Builds      []string `json:"builds"`
	Failed      int      `json:"failed"`             // jobs that did not succeed
	Outcomes    []string `json:"outcomes,omitempty"` // their error.type values
	Message     string   `json:"message,omitempty"`
}

func runOf(r SideRuns) runJSON {
	orEmpty := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	c := r.Constraints
	if c == nil {
		c = []int64{}
	}
	return runJSON{Text: RunText(r), Circuits: orEmpty(r.Circuits), Constraints: c, Backends: orEmpty(r.Backends),
		Releases: orEmpty(r.Releases), Hosts: orEmpty(r.Hosts), Builds: orEmpty(r.Builds), Failed: r.Failed, Outcomes: r.Outcomes, Message: r.Message}
}

type diffNodeJSON struct {
	Path        string         `json:"path"` // names from the root joined by "/"
	Name        string         `json:"name"`
	Depth       int            `json:"depth"`
	AMS         float64        `json:"a_ms"`
	BMS         float64        `json:"b_ms"`
	DeltaMS     float64        `json:"delta_ms"`
	Pct         *float64       `json:"delta_pct"` // null for a path new on B or A under 1 ms (SmallBase)
	MinAMS      float64        `json:"min_a_ms"`  // the range over A's traces
	MaxAMS      float64        `json:"max_a_ms"`
	MinBMS      float64        `json:"min_b_ms"`
	MaxBMS      float64        `json:"max_b_ms"`
	UntracedAMS float64        `json:"untraced_a_ms"`
	UntracedBMS float64        `json:"untraced_b_ms"`
	CountA      float64        `json:"count_a"`
	CountB      float64        `json:"count_b"`
	TracesA     int            `json:"traces_a"`
	TracesB     int            `json:"traces_b"`
	Only        string         `json:"only,omitempty"` // "A" or "B" for a path on one side only
	Moved       bool           `json:"moved"`
	Noisy       bool           `json:"noisy,omitempty"` // by the thresholds, within the spread (Diff.Noisy)
	Children    []diffNodeJSON `json:"children,omitempty"`
}

// WriteDiffJSON writes d as one JSON document (ms as numbers; the tree in
// the same order as WriteDiff), for scripts.
func WriteDiffJSON(w io.Writer, d *Diff) error {
	var conv func(ns []*DiffNode) []diffNodeJSON
	conv = func(ns []*DiffNode) []diffNodeJSON {
		var out []diffNodeJSON
		for _, n := range ns {
			j := diffNodeJSON{
				Path: n.Path, Name: n.Name, Depth: n.Depth, AMS: human.Milliseconds(n.A), BMS: human.Milliseconds(n.B), DeltaMS: human.Milliseconds(n.Delta()),
				UntracedAMS: human.Milliseconds(n.UntracedA), UntracedBMS: human.Milliseconds(n.UntracedB), CountA: n.CountA, CountB: n.CountB,
				TracesA: n.TracesA, TracesB: n.TracesB, Moved: d.Moved(n), Noisy: d.Noisy(n), Children: conv(n.Children),
				MinAMS: human.Milliseconds(n.MinA), MaxAMS: human.Milliseconds(n.MaxA), MinBMS: human.Milliseconds(n.MinB), MaxBMS: human.Milliseconds(n.MaxB),
			}
			if p := n.Pct(); !math.IsInf(p, 0) && n.PctShown() {
				j.Pct = &p
			}
			switch {
			case n.OnlyA():
				j.Only = "A"
			case n.OnlyB():
				j.Only = "B"
			}
			out = append(out, j)
		}
		return out
	}
	doc := diffJSON{
		TracesA: d.TracesA, TracesB: d.TracesB, TotalAMS: human.Milliseconds(d.TotalA), TotalBMS: human.Milliseconds(d.TotalB),
		UntracedAMS: human.Milliseconds(d.UntracedA), UntracedBMS: human.Milliseconds(d.UntracedB),
		ThresholdMS: d.opts.ThresholdMS, ThresholdPct: d.opts.ThresholdPct,
		OneTraceEach: d.OneTraceEach(), NoiseFloorPct: d.opts.NoiseFloorPct, RunA: runOf(d.RunsA), RunB: runOf(d.RunsB),
		Nodes: conv(d.Roots), Verdicts: append([]string{}, d.Verdicts...), Failures: append([]string{}, d.Failures...),
	}
	if d.opts.Normalize {
		doc.Normalized, doc.NormalizedTo = true, normalizedSize(d)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write diff JSON: %w", err)
	}
	return nil
}
