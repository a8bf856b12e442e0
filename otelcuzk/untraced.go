package otelcuzk

import (
	"context"
	"slices"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Interval is a closed-open time interval [Start, End).
type Interval struct {
	Start, End time.Time
}

// Duration is End − Start, or 0 when End is not after Start.
func (i Interval) Duration() time.Duration {
	if !i.End.After(i.Start) {
		return 0
	}
	return i.End.Sub(i.Start)
}

// Uncovered returns the part of span that no interval of children covers:
// its total length and the largest single uncovered interval (zero Interval
// when nothing is uncovered). Children are clipped to span and may overlap,
// nest or lie outside it; the order does not matter. It runs in
// O(n log n) for n children and does not modify children.
func Uncovered(span Interval, children []Interval) (total time.Duration, largest Interval) {
	if span.Duration() == 0 {
		return 0, Interval{}
	}
	clipped := make([]Interval, 0, len(children))
	for _, c := range children {
		if c.Start.Before(span.Start) {
			c.Start = span.Start
		}
		if c.End.After(span.End) {
			c.End = span.End
		}
		if c.Duration() > 0 {
			clipped = append(clipped, c)
		}
	}
	slices.SortFunc(clipped, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	gap := func(from, to time.Time) {
		g := Interval{from, to}
		if d := g.Duration(); d > 0 {
			total += d
			if d > largest.Duration() {
				largest = g
			}
		}
	}
	cursor := span.Start // everything before cursor is covered or counted
	for _, c := range clipped {
		gap(cursor, c.Start)
		if c.End.After(cursor) {
			cursor = c.End
		}
	}
	gap(cursor, span.End)
	return total, largest
}

// UntracedProcessor is an sdktrace.SpanProcessor that reports the time of a
// span that none of its children covers (DESIGN.md, "Untraced time"). It
// records each span's children as they start and end; when a span with at
// least one child ends and its uncovered time is at least the minimum AND at
// least the fraction of its duration, it emits a child span named
// SpanUntraced over the largest uncovered interval, with KeyUntracedMS = the
// total uncovered time in ms and KeyUntracedParent = the span's name.
//
// A span without children is a leaf: its time is its own work, and nothing is
// emitted for it. A child still running when its parent ends covers up to the
// parent's end; a child ending after its parent (an asynchronous buffer
// release) is then forgotten with no effect. The spans it emits are not
// processed again. Only children started in this process through the same
// provider are seen. At most MaxTrackedSpans spans are tracked at once, so
// spans that are never ended cannot grow memory without bound; spans started
// beyond that are neither tracked nor reported. It is safe for concurrent
// use.
type UntracedProcessor struct {
	minimum    time.Duration
	fraction   float64
	maxTracked int

	mu    sync.Mutex
	spans map[spanKey]*spanState
}

type spanKey struct {
	trace trace.TraceID
	span  trace.SpanID
}

type spanState struct {
	tp     trace.TracerProvider
	closed []Interval
	open   map[trace.SpanID]time.Time
}

type untracedMarker struct{}

// MaxTrackedSpans bounds the spans an UntracedProcessor tracks at once
// (about 200 bytes each).
const MaxTrackedSpans = 1 << 18

var _ sdktrace.SpanProcessor = (*UntracedProcessor)(nil)

// NewUntracedProcessor returns a processor reporting uncovered time of at
// least minimum and at least fraction (0..1) of the span's duration. Register
// it on the provider before the exporting processor so the `untraced` span is
// exported with its parent.
func NewUntracedProcessor(minimum time.Duration, fraction float64) *UntracedProcessor {
	return &UntracedProcessor{minimum: minimum, fraction: fraction, maxTracked: MaxTrackedSpans, spans: map[spanKey]*spanState{}}
}

// OnStart records s as a child of its parent, when the parent is tracked.
func (p *UntracedProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if s == nil || parent != nil && parent.Value(untracedMarker{}) != nil {
		return
	}
	sc := s.SpanContext()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.spans) >= p.maxTracked {
		return
	}
	p.spans[spanKey{sc.TraceID(), sc.SpanID()}] = &spanState{tp: s.TracerProvider()}
	if ps := s.Parent(); ps.IsValid() {
		if st := p.spans[spanKey{ps.TraceID(), ps.SpanID()}]; st != nil {
			if st.open == nil {
				st.open = map[trace.SpanID]time.Time{}
			}
			st.open[sc.SpanID()] = s.StartTime()
		}
	}
}

// OnEnd closes s in its parent's record and, when s has children, computes
// its uncovered time and emits an `untraced` span above the threshold.
func (p *UntracedProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if s == nil {
		return
	}
	sc := s.SpanContext()
	key := spanKey{sc.TraceID(), sc.SpanID()}
	p.mu.Lock()
	st := p.spans[key]
	if st == nil { // an emitted `untraced` span, or one started before registration
		p.mu.Unlock()
		return
	}
	delete(p.spans, key)
	if ps := s.Parent(); ps.IsValid() {
		if pst := p.spans[spanKey{ps.TraceID(), ps.SpanID()}]; pst != nil {
			delete(pst.open, sc.SpanID())
			pst.closed = append(pst.closed, Interval{s.StartTime(), s.EndTime()})
		}
	}
	children := st.closed
	for _, start := range st.open {
		children = append(children, Interval{start, s.EndTime()})
	}
	p.mu.Unlock()

	if len(children) == 0 {
		return
	}
	span := Interval{s.StartTime(), s.EndTime()}
	total, largest := Uncovered(span, children)
	if total == 0 || total < p.minimum || float64(total) < p.fraction*float64(span.Duration()) {
		return
	}
	ctx := context.WithValue(context.Background(), untracedMarker{}, true)
	ctx = trace.ContextWithSpanContext(ctx, sc)
	tracer := semconv.Tracer(st.tp)
	_, u := tracer.Start(ctx, semconv.SpanUntraced,
		trace.WithTimestamp(largest.Start),
		trace.WithAttributes(
			semconv.KeyUntracedMS.Float64(float64(total)/float64(time.Millisecond)),
			semconv.KeyUntracedParent.String(s.Name()),
		))
	u.End(trace.WithTimestamp(largest.End))
}

// Shutdown forgets every span still open.
func (p *UntracedProcessor) Shutdown(context.Context) error {
	p.mu.Lock()
	clear(p.spans)
	p.mu.Unlock()
	return nil
}

// ForceFlush does nothing: the processor holds no spans for export.
func (p *UntracedProcessor) ForceFlush(context.Context) error { return nil }

// tracked reports how many spans the processor holds state for (tests).
func (p *UntracedProcessor) tracked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.spans)
}
