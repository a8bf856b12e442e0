package otelcuzk

import (
	"context"
	"math"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func iv(a, b float64) Interval { return Interval{at(a), at(b)} }

func TestUncoveredIntervalCases(t *testing.T) {
	cases := []struct {
		name     string
		span     Interval
		children []Interval
		total    time.Duration
		largest  Interval
	}{
		{"no children", iv(0, 10), nil, 10 * time.Millisecond, iv(0, 10)},
		{"fully covered", iv(0, 10), []Interval{iv(0, 10)}, 0, Interval{}},
		{"two gaps, largest in the middle", iv(0, 100), []Interval{iv(10, 20), iv(70, 95)}, 65 * time.Millisecond, iv(20, 70)},
		{"overlapping and nested children", iv(0, 100), []Interval{iv(10, 50), iv(20, 30), iv(40, 60), iv(80, 90)}, 40 * time.Millisecond, iv(60, 80)},
		{"unsorted children", iv(0, 100), []Interval{iv(80, 90), iv(10, 50), iv(40, 60)}, 40 * time.Millisecond, iv(60, 80)},
		{"children outside are clipped", iv(10, 20), []Interval{iv(0, 12), iv(18, 40), iv(50, 60)}, 6 * time.Millisecond, iv(12, 18)},
		{"empty span", iv(5, 5), []Interval{iv(0, 1)}, 0, Interval{}},
		{"inverted child ignored", iv(0, 10), []Interval{iv(8, 2)}, 10 * time.Millisecond, iv(0, 10)},
		{"gap at the end", iv(0, 10), []Interval{iv(0, 3)}, 7 * time.Millisecond, iv(3, 10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			children := append([]Interval(nil), c.children...)
			total, largest := Uncovered(c.span, children)
			if total != c.total {
				t.Errorf("total = %v, want %v", total, c.total)
			}
			if !largest.Start.Equal(c.largest.Start) || !largest.End.Equal(c.largest.End) {
				t.Errorf("largest = [%v, %v), want [%v, %v)", largest.Start.Sub(t0), largest.End.Sub(t0), c.largest.Start.Sub(t0), c.largest.End.Sub(t0))
			}
			for i := range children {
				if children[i] != c.children[i] {
					t.Fatalf("Uncovered modified its input")
				}
			}
		})
	}
}

type untracedRig struct {
	tp   *sdktrace.TracerProvider
	exp  *tracetest.InMemoryExporter
	proc *UntracedProcessor
	tr   trace.Tracer
}

func newUntracedRig(minimum time.Duration, fraction float64) *untracedRig {
	r := &untracedRig{exp: tracetest.NewInMemoryExporter(), proc: NewUntracedProcessor(minimum, fraction)}
	r.tp = sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(r.proc),
		sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(r.exp)),
	)
	r.tr = r.tp.Tracer("test")
	return r
}

// span starts a span at ms (relative to t0); end it with endAt.
func (r *untracedRig) span(ctx context.Context, name string, ms float64) (context.Context, trace.Span) {
	return r.tr.Start(ctx, name, trace.WithTimestamp(at(ms)))
}

func endAt(s trace.Span, ms float64) { s.End(trace.WithTimestamp(at(ms))) }

// oneChild makes a root span name from 0 to end ms with one child "c" from
// start to stop ms.
func (r *untracedRig) oneChild(name string, start, stop, end float64) {
	ctx, root := r.span(context.Background(), name, 0)
	_, c := r.span(ctx, "c", start)
	endAt(c, stop)
	endAt(root, end)
}

func (r *untracedRig) untraced() []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range r.exp.GetSpans() {
		if s.Name == semconv.SpanUntraced {
			out = append(out, s)
		}
	}
	return out
}

// oneUntraced returns the one `untraced` span exported so far; it fails
// the test when there are none or more.
func (r *untracedRig) oneUntraced(t *testing.T) tracetest.SpanStub {
	t.Helper()
	u := r.untraced()
	if len(u) != 1 {
		t.Fatalf("got %d untraced spans, want 1", len(u))
	}
	return u[0]
}

// noneTracked fails the test when the processor still holds state for a
// span (every span has ended by then).
func (r *untracedRig) noneTracked(t *testing.T) {
	t.Helper()
	if n := r.proc.tracked(); n != 0 {
		t.Fatalf("processor still tracks %d spans", n)
	}
}

func (r *untracedRig) byName(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range r.exp.GetSpans() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return tracetest.SpanStub{}
}

func untracedMS(t *testing.T, s tracetest.SpanStub) float64 {
	t.Helper()
	for _, kv := range s.Attributes {
		if kv.Key == semconv.KeyUntracedMS {
			return kv.Value.AsFloat64()
		}
	}
	t.Fatalf("span %q has no %s", s.Name, semconv.KeyUntracedMS)
	return 0
}

func TestUntracedLeafSpanEmitsNothing(t *testing.T) {
	r := newUntracedRig(DefaultUntracedMin, DefaultUntracedFraction)
	_, s := r.span(context.Background(), "leaf", 0)
	endAt(s, 500)
	if u := r.untraced(); len(u) != 0 {
		t.Fatalf("leaf span got %d untraced spans", len(u))
	}
	r.noneTracked(t)
}

func TestUntracedNestedChildrenReportEachLevel(t *testing.T) {
	r := newUntracedRig(DefaultUntracedMin, DefaultUntracedFraction)
	ctx, root := r.span(context.Background(), "root", 0)
	cctx, mid := r.span(ctx, "mid", 10)
	_, leaf := r.span(cctx, "leaf", 10)
	endAt(leaf, 60)
	endAt(mid, 90) // mid: 30 ms uncovered of 80
	endAt(root, 100)

	u := r.untraced()
	if len(u) != 2 {
		t.Fatalf("got %d untraced spans, want 2 (root and mid)", len(u))
	}
	mid0, root0 := r.byName(t, "mid"), r.byName(t, "root")
	got := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range u {
		got[s.Parent.SpanID()] = s
	}
	um, ok := got[mid0.SpanContext.SpanID()]
	if !ok {
		t.Fatal("no untraced span under mid")
	}
	if ms := untracedMS(t, um); math.Abs(ms-30) > 1e-9 {
		t.Errorf("mid untraced = %v ms, want 30", ms)
	}
	if !um.StartTime.Equal(at(60)) || !um.EndTime.Equal(at(90)) {
		t.Errorf("mid untraced span covers [%v, %v), want [60ms, 90ms)", um.StartTime.Sub(t0), um.EndTime.Sub(t0))
	}
	if p := spantest.StubAttr(um, string(semconv.KeyUntracedParent)); p != "mid" {
		t.Errorf("cuzk.untraced.parent = %q, want mid", p)
	}
	ur, ok := got[root0.SpanContext.SpanID()]
	if !ok {
		t.Fatal("no untraced span under root")
	}
	if ms := untracedMS(t, ur); math.Abs(ms-20) > 1e-9 {
		t.Errorf("root untraced = %v ms, want 20 (0-10 and 90-100)", ms)
	}
	if ur.SpanContext.TraceID() != root0.SpanContext.TraceID() {
		t.Error("untraced span is in another trace")
	}
	r.noneTracked(t)
}

func TestUntracedOverlappingChildrenCountOnce(t *testing.T) {
	r := newUntracedRig(DefaultUntracedMin, DefaultUntracedFraction)
	ctx, root := r.span(context.Background(), "root", 0)
	_, a := r.span(ctx, "a", 0)
	_, b := r.span(ctx, "b", 30)
	endAt(a, 60)
	endAt(b, 80)
	endAt(root, 100)
	u := r.oneUntraced(t)
	if ms := untracedMS(t, u); math.Abs(ms-20) > 1e-9 {
		t.Errorf("untraced = %v ms, want 20", ms)
	}
}

func TestUntracedChildEndingAfterParent(t *testing.T) {
	r := newUntracedRig(DefaultUntracedMin, DefaultUntracedFraction)
	ctx, root := r.span(context.Background(), "root", 0)
	_, work := r.span(ctx, "work", 0)
	endAt(work, 40)
	rctx, release := r.span(ctx, "buffer.release", 70) // async: outlives root
	endAt(root, 100)
	// The still-running release covers 70..100 of root: uncovered is 40..70.
	u := r.oneUntraced(t)
	if ms := untracedMS(t, u); math.Abs(ms-30) > 1e-9 {
		t.Errorf("untraced = %v ms, want 30", ms)
	}
	// The late child, and a grandchild under it, end without effect on root.
	_, munmap := r.span(rctx, "munmap", 75)
	endAt(munmap, 200)
	endAt(release, 250)
	if got := len(r.untraced()); got != 2 {
		t.Errorf("after the late child: %d untraced spans, want 2 (root's, and release's 75 of 180 ms)", got)
	}
	r.noneTracked(t)
}

func TestUntracedBelowThresholdNotEmitted(t *testing.T) {
	r := newUntracedRig(DefaultUntracedMin, DefaultUntracedFraction)
	// 0.5 ms gap: above 2% of a 10 ms span but under 1 ms.
	r.oneChild("short", 0, 9.5, 10)
	// 10 ms gap in a 1 s span: over 1 ms but 1% < 2%.
	r.oneChild("long", 0, 990, 1000)
	if u := r.untraced(); len(u) != 0 {
		t.Fatalf("got %d untraced spans below threshold", len(u))
	}
	// Just above both thresholds: 25 ms of 1 s.
	r.oneChild("over", 25, 1000, 1000)
	if u := r.untraced(); len(u) != 1 {
		t.Fatalf("got %d untraced spans above threshold, want 1", len(u))
	}
}

func TestUntracedPlantedSleepBetweenChildren(t *testing.T) {
	r := newUntracedRig(DefaultUntracedMin, DefaultUntracedFraction)
	ctx, prove := r.tr.Start(context.Background(), semconv.SpanPipelineProve)
	_, a := r.tr.Start(ctx, semconv.SpanComputeH)
	time.Sleep(2 * time.Millisecond)
	a.End()
	time.Sleep(50 * time.Millisecond) // the planted gap
	_, b := r.tr.Start(ctx, semconv.SpanMSMG1A)
	time.Sleep(2 * time.Millisecond)
	b.End()
	prove.End()

	u := r.oneUntraced(t)
	p := r.byName(t, semconv.SpanPipelineProve)
	if u.Parent.SpanID() != p.SpanContext.SpanID() {
		t.Fatalf("untraced parent = %v, want %s", u.Parent.SpanID(), semconv.SpanPipelineProve)
	}
	// time.Sleep never returns early; on a loaded 2-core CI machine it may
	// return late, so the upper bound is loose.
	ms := untracedMS(t, u)
	if ms < 50 || ms > 150 {
		t.Errorf("untraced = %.2f ms, want about 50", ms)
	}
	if d := u.EndTime.Sub(u.StartTime); d < 50*time.Millisecond || d > 150*time.Millisecond {
		t.Errorf("untraced span lasts %v, want about 50 ms", d)
	}
	ha, mb := r.byName(t, semconv.SpanComputeH), r.byName(t, semconv.SpanMSMG1A)
	if u.StartTime.Before(ha.EndTime) || u.EndTime.After(mb.StartTime) {
		t.Error("untraced span is not between the two children")
	}
}

func TestUntracedZeroThresholdEmitsOncePerGappedSpan(t *testing.T) {
	// With no threshold, the emitted `untraced` span must neither be tracked
	// (state left behind) nor lead to further `untraced` spans.
	r := newUntracedRig(0, 0)
	r.oneChild("root", 0, 5, 10)
	if got := len(r.untraced()); got != 1 {
		t.Fatalf("got %d untraced spans, want 1", got)
	}
	r.noneTracked(t)
}

func TestUntracedProcessorBoundsTrackedSpans(t *testing.T) {
	r := newUntracedRig(DefaultUntracedMin, DefaultUntracedFraction)
	r.proc.maxTracked = 3
	var leaked []trace.Span
	for i := 0; i < 10; i++ { // never ended
		_, s := r.span(context.Background(), "leaked", 0)
		leaked = append(leaked, s)
	}
	if n := r.proc.tracked(); n != 3 {
		t.Fatalf("tracking %d spans, want the bound 3", n)
	}
	for _, s := range leaked {
		endAt(s, 1)
	}
	r.noneTracked(t)
	// Tracking resumes once there is room.
	r.oneChild("p", 0, 10, 100)
	if len(r.untraced()) != 1 {
		t.Fatal("no untraced span once below the bound")
	}
}
