package tracefile

import (
	"slices"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Node is a span in its trace's tree.
type Node struct {
	Span
	Children []*Node // ordered by start time, then name
	Depth    int     // 0 for a root
	// Untraced is the part of the span no child covers (otelcuzk.Uncovered
	// over the children's intervals, the `untraced` spans the processor
	// emitted left out), the same figure the processor reports as
	// cuzk.untraced.ms. It is 0 for a leaf, whose time is its own work.
	Untraced time.Duration
}

// Trace is one trace's span tree.
type Trace struct {
	ID    string
	Roots []*Node // spans whose parent is not in the data, by start time
	Start time.Time
	End   time.Time
	Spans int
}

// Duration is End − Start: from the first span's start to the last span's end.
func (t Trace) Duration() time.Duration { return t.End.Sub(t.Start) }

// Walk calls f on every node depth first, parents before children, in
// start order. f returning false skips the node's children.
func (t Trace) Walk(f func(n *Node) bool) {
	var walk func(ns []*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			if f(n) {
				walk(n.Children)
			}
		}
	}
	walk(t.Roots)
}

// UntracedTotal sums Untraced over the trace's spans.
func (t Trace) UntracedTotal() time.Duration {
	var total time.Duration
	t.Walk(func(n *Node) bool { total += n.Untraced; return true })
	return total
}

// Services lists the distinct service names of the trace, sorted.
func (t Trace) Services() []string {
	var out []string
	t.Walk(func(n *Node) bool {
		if n.Service != "" && !slices.Contains(out, n.Service) {
			out = append(out, n.Service)
		}
		return true
	})
	slices.Sort(out)
	return out
}

// BuildTraces groups spans by trace id and builds each trace's tree, with
// Untraced computed for every node. Traces are ordered by start time. A span
// whose parent is absent (in another service's data, or lost) is a root; a
// span repeated with the same id is kept once; spans that form a parent
// cycle, which no real trace has, are made roots rather than dropped.
func BuildTraces(spans []Span) []Trace {
	byTrace := map[string][]Span{}
	var order []string
	for _, s := range spans {
		if _, ok := byTrace[s.TraceID]; !ok {
			order = append(order, s.TraceID)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	traces := make([]Trace, 0, len(order))
	for _, id := range order {
		traces = append(traces, buildTrace(id, byTrace[id]))
	}
	slices.SortStableFunc(traces, func(a, b Trace) int { return a.Start.Compare(b.Start) })
	return traces
}

func buildTrace(id string, spans []Span) Trace {
	nodes := make(map[string]*Node, len(spans))
	var all []*Node
	for _, s := range spans {
		if _, dup := nodes[s.SpanID]; dup {
			continue
		}
		n := &Node{Span: s}
		nodes[s.SpanID] = n
		all = append(all, n)
	}
	t := Trace{ID: id, Spans: len(all)}
	for _, n := range all {
		if p := nodes[n.ParentID]; p != nil && p != n {
			p.Children = append(p.Children, n)
		} else {
			t.Roots = append(t.Roots, n)
		}
	}
	// Nodes on a parent cycle are unreachable from the roots: cut the cycle
	// at its earliest node.
	reached := map[*Node]bool{}
	var mark func(n *Node)
	mark = func(n *Node) {
		if reached[n] {
			return
		}
		reached[n] = true
		for _, c := range n.Children {
			mark(c)
		}
	}
	for _, r := range t.Roots {
		mark(r)
	}
	for _, n := range all {
		if reached[n] {
			continue
		}
		if p := nodes[n.ParentID]; p != nil {
			p.Children = slices.DeleteFunc(p.Children, func(c *Node) bool { return c == n })
		}
		t.Roots = append(t.Roots, n)
		mark(n)
	}
	byStart := func(a, b *Node) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	}
	slices.SortStableFunc(t.Roots, byStart)
	for i, n := range all {
		slices.SortStableFunc(n.Children, byStart)
		if i == 0 || n.Start.Before(t.Start) {
			t.Start = n.Start
		}
		if i == 0 || n.End.After(t.End) {
			t.End = n.End
		}
		n.Untraced = untraced(n)
	}
	var depth func(ns []*Node, d int)
	depth = func(ns []*Node, d int) {
		for _, n := range ns {
			n.Depth = d
			depth(n.Children, d+1)
		}
	}
	depth(t.Roots, 0)
	return t
}

// untraced is the node's uncovered time, as the processor computes it.
func untraced(n *Node) time.Duration {
	var children []otelcuzk.Interval
	for _, c := range n.Children {
		if c.Name != semconv.SpanUntraced {
			children = append(children, otelcuzk.Interval{Start: c.Start, End: c.End})
		}
	}
	if len(children) == 0 {
		return 0
	}
	total, _ := otelcuzk.Uncovered(otelcuzk.Interval{Start: n.Start, End: n.End}, children)
	return total
}
