package tracefile

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// WriteDiff prints d for a terminal: the totals of each side, the tree of
// paths with A, B, the change in ms and %, the untraced time of each side
// (largest moves first at every level; a path on one side only is marked;
// a path that moved by the thresholds (Diff.Moved) ends in "*", explained
// under the tree when a row has one), then the verdict lines: "no span
// moved" exactly when no path moved. maxDepth > 0 limits the tree to that many levels
// below the roots. It returns the first write error.
func WriteDiff(w io.Writer, d *Diff, maxDepth int) error {
	ew := &errWriter{w: w}
	ew.printf("A: %d trace%s, median %.3f ms, untraced %.3f ms\n", d.TracesA, plural(d.TracesA), ms(d.TotalA), ms(d.UntracedA))
	ew.printf("B: %d trace%s, median %.3f ms, untraced %.3f ms\n", d.TracesB, plural(d.TracesB), ms(d.TotalB), ms(d.UntracedB))
	ew.printf("\n%12s %12s %12s %8s %10s %10s  %s\n", "A ms", "B ms", "Δ ms", "Δ %", "untr A", "untr B", "span (largest moves first)")
	marked := false
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
		if d.Moved(n) {
			name += "  *"
			marked = true
		}
		ew.printf("%12.3f %12.3f %12s %8s %10s %10s  %s\n", ms(n.A), ms(n.B), signedMS(n.Delta()), pctText(n), untrText(n, n.UntracedA), untrText(n, n.UntracedB), name)
	})
	if marked {
		ew.printf("%12s * moved by %g ms and %g %% of A or more (a path on one side only: by %g ms)\n", "", d.opts.ThresholdMS, d.opts.ThresholdPct, d.opts.ThresholdMS)
	}
	ew.printf("\n")
	if len(d.Verdicts) == 0 {
		ew.printf("no span moved by %g ms and %g %% or more\n", d.opts.ThresholdMS, d.opts.ThresholdPct)
	} else {
		ew.printf("moved (by %g ms and %g %% or more), by layer:\n", d.opts.ThresholdMS, d.opts.ThresholdPct)
		for _, v := range d.Verdicts {
			ew.printf("  %s\n", v)
		}
	}
	if ew.err != nil {
		return fmt.Errorf("tracefile: write diff: %w", ew.err)
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

func signedMS(d time.Duration) string { return fmt.Sprintf("%+.3f", ms(d)) }

func pctText(n *DiffNode) string {
	p := n.Pct()
	switch {
	case math.IsInf(p, 1):
		return "new"
	case n.OnlyA():
		return "gone"
	}
	return fmt.Sprintf("%+.1f%%", p)
}

func untrText(n *DiffNode, d time.Duration) string {
	if d == 0 && (n.UntracedA == 0 && n.UntracedB == 0) {
		return ""
	}
	return fmt.Sprintf("%.3f", ms(d))
}

// diffJSON is WriteDiffJSON's document.
type diffJSON struct {
	TracesA      int            `json:"traces_a"`
	TracesB      int            `json:"traces_b"`
	TotalAMS     float64        `json:"total_a_ms"`
	TotalBMS     float64        `json:"total_b_ms"`
	UntracedAMS  float64        `json:"untraced_a_ms"`
	UntracedBMS  float64        `json:"untraced_b_ms"`
	ThresholdMS  float64        `json:"threshold_ms"`
	ThresholdPct float64        `json:"threshold_pct"`
	Nodes        []diffNodeJSON `json:"nodes"`
	Verdicts     []string       `json:"verdicts"`
}

type diffNodeJSON struct {
	Path        string         `json:"path"` // names from the root joined by "/"
	Name        string         `json:"name"`
	Depth       int            `json:"depth"`
	AMS         float64        `json:"a_ms"`
	BMS         float64        `json:"b_ms"`
	DeltaMS     float64        `json:"delta_ms"`
	Pct         *float64       `json:"delta_pct"` // null for a path new on B
	UntracedAMS float64        `json:"untraced_a_ms"`
	UntracedBMS float64        `json:"untraced_b_ms"`
	CountA      float64        `json:"count_a"`
	CountB      float64        `json:"count_b"`
	TracesA     int            `json:"traces_a"`
	TracesB     int            `json:"traces_b"`
	Only        string         `json:"only,omitempty"` // "A" or "B" for a path on one side only
	Moved       bool           `json:"moved"`
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
				Path: n.Path, Name: n.Name, Depth: n.Depth, AMS: ms(n.A), BMS: ms(n.B), DeltaMS: ms(n.Delta()),
				UntracedAMS: ms(n.UntracedA), UntracedBMS: ms(n.UntracedB), CountA: n.CountA, CountB: n.CountB,
				TracesA: n.TracesA, TracesB: n.TracesB, Moved: d.Moved(n), Children: conv(n.Children),
			}
			if p := n.Pct(); !math.IsInf(p, 0) {
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
		TracesA: d.TracesA, TracesB: d.TracesB, TotalAMS: ms(d.TotalA), TotalBMS: ms(d.TotalB),
		UntracedAMS: ms(d.UntracedA), UntracedBMS: ms(d.UntracedB),
		ThresholdMS: d.opts.ThresholdMS, ThresholdPct: d.opts.ThresholdPct,
		Nodes: conv(d.Roots), Verdicts: append([]string{}, d.Verdicts...),
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("tracefile: write diff JSON: %w", err)
	}
	return nil
}
