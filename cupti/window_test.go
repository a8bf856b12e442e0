package cupti

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// A device window's gaps between GPU work are cuda.idle children, so the
// untraced-time processor finds nothing of the window unexplained
// (issue 23, item 3); work of two streams that overlaps is one busy
// stretch, not two.
func TestDeviceWindowShowsGapsAsIdleNotUntraced(t *testing.T) {
	f := newFake()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(otelcuzk.NewUntracedProcessor(0, 0)),
		sdktrace.WithSyncer(exp))
	c, _, _, _ := startFake(t, f, WithTracerProvider(tp), WithWindow(time.Second))
	base := f.gpuNow
	ms := uint64(time.Millisecond)
	f.queue(kernel("a", 1, base, 2*ms))        // [0, 2) ms
	f.queue(kernel("b", 2, base+1*ms, 3*ms))   // [1, 4): overlaps a
	f.queue(kernel("c", 3, base+10*ms, 1*ms))  // [10, 11): a 6 ms gap before
	f.queue(kernel("d", 4, base+11*ms, 1*ms))  // [11, 12): back to back, no gap
	f.queue(kernel("e", 5, base+112*ms, 8*ms)) // [112, 120): a 100 ms gap before
	c.Flush(context.Background())
	c.Close(context.Background())
	w := one(t, exp, SpanWindow)
	idle := spantest.NamedStubs(exp.GetSpans(), SpanIdle)
	if len(idle) != 2 {
		t.Fatalf("%d cuda.idle spans, want 2 (the gaps of 6 and 100 ms)", len(idle))
	}
	var total time.Duration
	for _, s := range idle {
		if s.Parent.SpanID() != w.SpanContext.SpanID() {
			t.Error("a cuda.idle span is not the window's child")
		}
		total += s.EndTime.Sub(s.StartTime)
	}
	if total != 106*time.Millisecond {
		t.Errorf("idle spans cover %v, want 106ms", total)
	}
	if v, _ := attr(w, semconv.KeyCUDABusyMS); v.AsFloat64() != 14 {
		t.Errorf("cuda.gpu_busy_ms %v, want 14", v.AsFloat64())
	}
	if v, _ := attr(w, semconv.KeyCUDAIdleMS); v.AsFloat64() != 106 {
		t.Errorf("cuda.gpu_idle_ms %v, want 106", v.AsFloat64())
	}
	for _, s := range spantest.NamedStubs(exp.GetSpans(), semconv.SpanUntraced) {
		if s.Parent.SpanID() == w.SpanContext.SpanID() {
			t.Errorf("the window has untraced time: %v", s.Attributes)
		}
	}
	if st := c.Stats(); st.Idle != 2 || st.Spans != 8 {
		t.Errorf("stats idle %d spans %d, want 2 and 8 (5 kernels, 2 idle, 1 window)", st.Idle, st.Spans)
	}
}

// Past the per-parent limit the largest gaps get spans and the rest are
// folded into one cuda.idle aggregate.
func TestManyIdleGapsAreFolded(t *testing.T) {
	f := newFake()
	c, exp, _, _ := startFake(t, f, WithWindow(time.Second), WithMaxKernelSpans(4))
	base := f.gpuNow
	us := uint64(time.Microsecond)
	for i := uint64(0); i < 10; i++ {
		f.queue(kernel("k", uint32(i+1), base+i*100*us, (10+i)*us))
	}
	c.Flush(context.Background())
	c.Close(context.Background())
	idle := spantest.NamedStubs(exp.GetSpans(), SpanIdle)
	if len(idle) != 5 {
		t.Fatalf("%d cuda.idle spans, want 4 gaps and 1 aggregate", len(idle))
	}
	folded := 0
	for _, s := range idle {
		if v, ok := attr(s, semconv.KeyAggregatedCount); ok {
			folded += int(v.AsInt64())
		}
	}
	if folded != 5 {
		t.Errorf("the aggregate folds %d gaps, want 5 (9 gaps, 4 as spans)", folded)
	}
}

// Records with no parent of their own go under the job whose published
// window holds them (cupti/jobs), not under a device window.
func TestRecordsInAJobWindowGoUnderTheJob(t *testing.T) {
	f := newFake()
	tp := sdktrace.NewTracerProvider()
	_, job := tp.Tracer("t").Start(context.Background(), "upstream job")
	wallStart := time.Unix(0, int64(f.wallNow))
	find := func(device int, start, end time.Time) (context.Context, bool) {
		if device == 0 && !start.Before(wallStart) && start.Before(wallStart.Add(5*time.Millisecond)) {
			return trace.ContextWithRemoteSpanContext(context.Background(), job.SpanContext()), true
		}
		return nil, false
	}
	c, exp, _, _ := startFake(t, f, WithJobs(find))
	base := f.gpuNow
	f.queue(kernel("in_job", 1, base+1_000_000, 1_000))
	f.queue(kernel("after_job", 2, base+9_000_000, 1_000))
	c.Flush(context.Background())
	c.Close(context.Background())
	in, after := one(t, exp, "in_job"), one(t, exp, "after_job")
	if in.Parent.SpanID() != job.SpanContext().SpanID() || in.SpanContext.TraceID() != job.SpanContext().TraceID() {
		t.Fatal("the kernel inside the job's window is not the job's child")
	}
	w := one(t, exp, SpanWindow)
	if after.Parent.SpanID() != w.SpanContext.SpanID() {
		t.Fatal("the kernel after the job's window is not under the device window")
	}
	if c.Stats().Jobs != 1 {
		t.Errorf("stats jobs %d, want 1", c.Stats().Jobs)
	}
}
