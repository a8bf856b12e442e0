package cudaspans

import (
	"context"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// recording is a TracerProvider recording into rec, for the fake-driver
// fixture and the GPU one (gpu_test.go).
type recording struct {
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

func newRecording() recording {
	rec, tp := spantest.New()
	return recording{rec: rec, tp: tp}
}

// ended returns the ended spans called name, in the order they ended.
func (r recording) ended(name string) []sdktrace.ReadOnlySpan { return spantest.Named(r.rec, name) }

type fixture struct {
	recording
	clock *fakeClock
	drv   *fakeDriver
	c     *Context
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{recording: newRecording(), clock: newFakeClock()}
	f.drv = newFakeDriver(f.clock)
	opts = append([]Option{WithDriver(f.drv), WithTracerProvider(f.tp), withClock(f.clock.now),
		WithKernelCacheDir(t.TempDir()), withCompiler(&fakeCompiler{})}, opts...)
	c, err := Open(0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	t.Cleanup(func() { _ = c.Close() })
	return f
}

// parent starts a host span on the fake clock.
func (f *fixture) parent(ctx context.Context, name string) (context.Context, trace.Span) {
	return f.tp.Tracer("test").Start(ctx, name, trace.WithTimestamp(f.clock.now()))
}

func (f *fixture) kernel(t *testing.T, name string, d time.Duration) *Function {
	t.Helper()
	f.drv.kernelTime[name] = d
	m, err := f.c.LoadModuleData(context.Background(), name, append([]byte("\x7fELF "), name...))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := m.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// pendingLaunch returns a new stream with kernel k (1 µs) launched on it
// once, its span pending until the stream synchronizes or closes, and k.
func (f *fixture) pendingLaunch(t *testing.T) (*Stream, *Function) {
	t.Helper()
	k := f.kernel(t, "k", time.Microsecond)
	s := f.stream(t)
	if err := s.Launch(context.Background(), k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	return s, k
}

// endSession ends sess, then its span prove at the fake clock's now, and
// gives the session's one gpu.total span.
func (f *fixture) endSession(t *testing.T, sess *Session, prove trace.Span) sdktrace.ReadOnlySpan {
	t.Helper()
	if err := sess.End(); err != nil {
		t.Fatal(err)
	}
	prove.End(trace.WithTimestamp(f.clock.now()))
	totals := f.ended(semconv.SpanGPUTotal)
	if len(totals) != 1 {
		t.Fatalf("%d gpu.total spans, want 1", len(totals))
	}
	return totals[0]
}

// stream is a new stream of f's context; it fails the test on an error.
func (f *fixture) stream(t *testing.T) *Stream {
	t.Helper()
	s, err := f.c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func mustAttr(t *testing.T, s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	t.Helper()
	v, ok := attr(s, k)
	if !ok {
		t.Fatalf("span %s has no %s: %v", s.Name(), k, s.Attributes())
	}
	return v
}

func TestKernelSpansAreChildrenPlacedByTheirEvents(t *testing.T) {
	f := newFixture(t)
	ntt := f.kernel(t, "ntt_radix2", 3*time.Millisecond)
	pw := f.kernel(t, "pointwise", 700*time.Microsecond)
	s := f.stream(t)
	ctx, parent := f.parent(context.Background(), semconv.SpanComputeH)
	enqueued := f.clock.now()
	for _, fn := range []*Function{ntt, pw, ntt} {
		if err := s.Launch(ctx, fn, D1(1024), D1(256), 4096, DevicePtr(0x10), uint32(7)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.ended("ntt_radix2")); n != 0 {
		t.Fatalf("%d spans before Synchronize; launches must stay asynchronous", n)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End(trace.WithTimestamp(f.clock.now()))

	spans := append(f.ended("ntt_radix2"), f.ended("pointwise")...)
	if len(spans) != 3 {
		t.Fatalf("got %d kernel spans, want 3", len(spans))
	}
	// Back to back on one stream: starts at enqueue (+ event latency of the
	// fake), then each starts where the previous ended.
	first, second, third := spans[0], spans[2], spans[1]
	// The events bracket the launch call too: the fake host clock moves
	// 1 µs per read.
	if d := first.EndTime().Sub(first.StartTime()); absDur(d-3*time.Millisecond) > 2*time.Microsecond {
		t.Errorf("first ntt lasts %v, want 3ms from its events", d)
	}
	if d := second.EndTime().Sub(second.StartTime()); absDur(d-700*time.Microsecond) > 2*time.Microsecond {
		t.Errorf("pointwise lasts %v, want 700µs", d)
	}
	if absDur(second.StartTime().Sub(first.EndTime())) > 2*time.Microsecond || absDur(third.StartTime().Sub(second.EndTime())) > 2*time.Microsecond {
		t.Errorf("kernels not back to back: %v %v %v", first.StartTime(), second.StartTime(), third.StartTime())
	}
	if first.StartTime().Before(enqueued) || first.StartTime().Sub(enqueued) > 10*time.Microsecond {
		t.Errorf("first kernel starts at %v, enqueued at %v", first.StartTime(), enqueued)
	}
	p := f.ended(semconv.SpanComputeH)[0]
	for _, sp := range spans {
		if sp.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", sp.Name(), p.Name())
		}
		if sp.StartTime().Before(p.StartTime()) || sp.EndTime().After(p.EndTime()) {
			t.Errorf("%s [%v, %v] outside parent [%v, %v]", sp.Name(), sp.StartTime(), sp.EndTime(), p.StartTime(), p.EndTime())
		}
		if _, ok := attr(sp, semconv.KeyCUDAClamped); ok {
			t.Errorf("%s clamped without cause", sp.Name())
		}
	}
	want := map[attribute.Key]attribute.Value{
		semconv.KeyCUDAKernelName:    attribute.StringValue("ntt_radix2"),
		semconv.KeyCUDAGrid:          attribute.StringValue("1024,1,1"),
		semconv.KeyCUDABlock:         attribute.StringValue("256,1,1"),
		semconv.KeyCUDASharedBytes:   attribute.IntValue(4096),
		semconv.KeyCUDAStream:        attribute.IntValue(0),
		semconv.KeyCUDADeviceOrdinal: attribute.IntValue(0),
	}
	for k, v := range want {
		if got := mustAttr(t, first, k); got != v {
			t.Errorf("%s = %v, want %v", k, got.Emit(), v.Emit())
		}
	}
	if ms := mustAttr(t, first, semconv.KeyCUDAGPUMS).AsFloat64(); math.Abs(ms-3) > 3e-3 {
		t.Errorf("cuda.gpu_ms = %v, want 3", ms)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestDeviceSpansOutsideTheirParentAreClampedAndCounted(t *testing.T) {
	f := newFixture(t)
	k := f.kernel(t, "msm_bucket", time.Millisecond)
	s := f.stream(t)
	// Anchor the stream with a first operation, then let the GPU clock fall
	// 5 ms behind the host clock, as an anchor gone stale would.
	ctx0, p0 := f.parent(context.Background(), "warmup")
	if err := s.Launch(ctx0, k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx0); err != nil {
		t.Fatal(err)
	}
	p0.End(trace.WithTimestamp(f.clock.now()))
	f.drv.setSkew(-5 * time.Millisecond)
	f.clock.advance(time.Millisecond)

	ctx, parent := f.parent(context.Background(), semconv.SpanMSMG1A)
	for i := 0; i < 3; i++ {
		if err := s.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End(trace.WithTimestamp(f.clock.now()))
	p := f.ended(semconv.SpanMSMG1A)[0]
	n := 0
	for _, sp := range f.ended("msm_bucket") {
		if sp.Parent().SpanID() != p.SpanContext().SpanID() {
			continue
		}
		n++
		if sp.StartTime().Before(p.StartTime()) || sp.EndTime().After(p.EndTime()) {
			t.Errorf("span [%v, %v] outside parent [%v, %v]", sp.StartTime(), sp.EndTime(), p.StartTime(), p.EndTime())
		}
		if v, _ := attr(sp, semconv.KeyCUDAClamped); !v.AsBool() {
			t.Errorf("span that started 4 ms before its parent is not marked clamped")
		}
		// The measured GPU time is kept even when the span is cut.
		if ms := mustAttr(t, sp, semconv.KeyCUDAGPUMS).AsFloat64(); math.Abs(ms-1) > 3e-3 {
			t.Errorf("cuda.gpu_ms = %v, want 1", ms)
		}
	}
	if n != 3 {
		t.Fatalf("%d spans under the parent, want 3", n)
	}
	if got := mustAttr(t, p, semconv.KeyClampedSpans).AsInt64(); got != 3 {
		t.Errorf("parent cuzk.clamped_spans = %d, want 3", got)
	}
	if _, ok := attr(f.ended("warmup")[0], semconv.KeyClampedSpans); ok {
		t.Errorf("warmup parent counted clamps it did not have")
	}
}

func TestClampInto(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name               string
		start, end, lo, hi time.Time
		wantS, wantE       time.Time
		moved              bool
	}{
		{"inside", at(2), at(3), at(1), at(4), at(2), at(3), false},
		{"open parent", at(2), at(30), at(1), time.Time{}, at(2), at(30), false},
		{"starts early", at(0), at(3), at(1), at(4), at(1), at(3), true},
		{"ends late", at(2), at(6), at(1), at(4), at(2), at(4), true},
		{"entirely before", at(-5), at(-4), at(1), at(4), at(1), at(1), true},
		{"entirely after", at(6), at(7), at(1), at(4), at(4), at(4), true},
		{"no bounds", at(-5), at(7), time.Time{}, time.Time{}, at(-5), at(7), false},
	} {
		s, e, m := clampInto(tc.start, tc.end, tc.lo, tc.hi)
		if !s.Equal(tc.wantS) || !e.Equal(tc.wantE) || m != tc.moved {
			t.Errorf("%s: got [%v, %v] moved=%v, want [%v, %v] moved=%v", tc.name, s, e, m, tc.wantS, tc.wantE, tc.moved)
		}
	}
}

func TestMapToWallAddsEventOffsetsToTheAnchor(t *testing.T) {
	w := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, e := mapToWall(anchor{wall: w}, 12.5, 0.25)
	if !s.Equal(w.Add(12500*time.Microsecond)) || e.Sub(s) != 250*time.Microsecond {
		t.Fatalf("got [%v, %v]", s, e)
	}
}

func TestLaunchesBeyondTheLimitAreAggregatedPerKernel(t *testing.T) {
	f := newFixture(t, WithMaxKernelSpans(2))
	a := f.kernel(t, "ntt_stage", 100*time.Microsecond)
	b := f.kernel(t, "ntt_twiddle", 300*time.Microsecond)
	s := f.stream(t)
	ctx, parent := f.parent(context.Background(), semconv.SpanNTTCoset)
	for _, fn := range []*Function{a, a, a, b, a, b, a} {
		if err := s.Launch(ctx, fn, D1(8), D1(32), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	stage, tw := f.ended("ntt_stage"), f.ended("ntt_twiddle")
	// Two individual ntt_stage spans, then one aggregate per kernel name.
	if len(stage) != 3 || len(tw) != 1 {
		t.Fatalf("got %d ntt_stage and %d ntt_twiddle spans, want 3 and 1", len(stage), len(tw))
	}
	var agg sdktrace.ReadOnlySpan
	for _, sp := range stage {
		if _, ok := attr(sp, semconv.KeyAggregatedCount); ok {
			agg = sp
		}
	}
	if agg == nil {
		t.Fatal("no aggregate ntt_stage span")
	}
	check := func(sp sdktrace.ReadOnlySpan, count int64, total, mn, mx float64) {
		t.Helper()
		if got := mustAttr(t, sp, semconv.KeyAggregatedCount).AsInt64(); got != count {
			t.Errorf("%s count = %d, want %d", sp.Name(), got, count)
		}
		for k, want := range map[attribute.Key]float64{
			semconv.KeyAggregatedTotalMS: total, semconv.KeyAggregatedMinMS: mn, semconv.KeyAggregatedMaxMS: mx,
		} {
			if got := mustAttr(t, sp, k).AsFloat64(); math.Abs(got-want) > 1e-3 {
				t.Errorf("%s %s = %v, want %v", sp.Name(), k, got, want)
			}
		}
	}
	check(agg, 3, 0.3, 0.1, 0.1)
	check(tw[0], 2, 0.6, 0.3, 0.3)
	if agg.Parent().SpanID() != f.ended(semconv.SpanNTTCoset)[0].SpanContext().SpanID() {
		t.Error("aggregate is not a child of the launches' parent")
	}
	// The aggregate spans from the first folded launch to the last.
	if d := tw[0].EndTime().Sub(tw[0].StartTime()); d < 700*time.Microsecond {
		t.Errorf("ntt_twiddle aggregate lasts %v, want at least both launches and the one between", d)
	}
}

func TestSessionEmitsGPUTotalFromFirstToLastOperation(t *testing.T) {
	f := newFixture(t)
	k := f.kernel(t, "msm_reduce", 2*time.Millisecond)
	s1 := f.stream(t)
	s2 := f.stream(t)
	pctx, prove := f.parent(context.Background(), semconv.SpanGroth16Prove)
	syncs := f.drv.calls["EventSynchronize"]
	ctx, sess := f.c.BeginSession(pctx)
	buf, err := f.c.Alloc(ctx, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	host := make([]byte, 1<<20)
	if err := HtoD(ctx, s1, buf.Ptr(), host); err != nil {
		t.Fatal(err)
	}
	// Work outside the session's context does not count, though it runs
	// first on its stream.
	outside := f.kernel(t, "outside", 5*time.Millisecond)
	if err := s2.Launch(pctx, outside, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := s1.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := s2.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if f.drv.calls["EventSynchronize"]-syncs != 4 {
		t.Errorf("%d anchor waits, want one fresh anchor per stream", f.drv.calls["EventSynchronize"]-syncs)
	}
	g := f.endSession(t, sess, prove)
	if g.Parent().SpanID() != f.ended(semconv.SpanGroth16Prove)[0].SpanContext().SpanID() {
		t.Error("gpu.total is not a child of the session's span")
	}
	var first, last time.Time
	for _, sp := range f.rec.Ended() {
		if sp.Name() != "msm_reduce" && sp.Name() != semconv.SpanMemcpyHtoD {
			continue
		}
		if first.IsZero() || sp.StartTime().Before(first) {
			first = sp.StartTime()
		}
		if sp.EndTime().After(last) {
			last = sp.EndTime()
		}
	}
	if !g.StartTime().Equal(first) || !g.EndTime().Equal(last) {
		t.Errorf("gpu.total [%v, %v], want [%v, %v]", g.StartTime(), g.EndTime(), first, last)
	}
	if n := mustAttr(t, g, semconv.KeyCUDAOpCount).AsInt64(); n != 3 {
		t.Errorf("cuda.op.count = %d, want 3 (a copy and two launches)", n)
	}
	if ms := mustAttr(t, g, semconv.KeyCUDAGPUMS).AsFloat64(); math.Abs(ms-float64(last.Sub(first))/1e6) > 1e-6 {
		t.Errorf("cuda.gpu_ms = %v, want %v", ms, float64(last.Sub(first))/1e6)
	}
	if sess.GPUTime() != last.Sub(first) {
		t.Errorf("GPUTime = %v", sess.GPUTime())
	}
	if err := sess.End(); err != nil || len(f.ended(semconv.SpanGPUTotal)) != 1 {
		t.Error("second End emitted again or failed")
	}
}

func TestCopySpansCarryBytesAndBandwidth(t *testing.T) {
	f := newFixture(t)
	s := f.stream(t)
	ctx := context.Background()
	buf, err := f.c.Alloc(ctx, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]uint64, 1<<17)
	for i := range src {
		src[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	dst := make([]uint64, len(src))
	if err := HtoD(ctx, s, buf.Ptr(), src); err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(ctx, buf.Ptr(), 0, 8); err != nil {
		t.Fatal(err)
	}
	if err := DtoH(ctx, s, dst, buf.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 0 || dst[5] != src[5] {
		t.Fatalf("fake device memory did not round-trip: %x %x", dst[0], dst[5])
	}
	for _, name := range []string{semconv.SpanMemcpyHtoD, semconv.SpanMemcpyDtoH} {
		sp := f.ended(name)
		if len(sp) != 1 {
			t.Fatalf("%d %s spans", len(sp), name)
		}
		if b := mustAttr(t, sp[0], semconv.KeyCUDABytes).AsInt64(); b != 1<<20 {
			t.Errorf("%s cuda.bytes = %d", name, b)
		}
		if gbps := mustAttr(t, sp[0], semconv.KeyCUDAGBPerSecond).AsFloat64(); math.Abs(gbps-25)/25 > 0.03 {
			t.Errorf("%s cuda.gbps = %v, want 25", name, gbps)
		}
	}
	if len(f.ended(semconv.SpanCUDAMemset)) != 1 {
		t.Error("no cuda.memset span")
	}
}

func TestEventErrorsAreReturnedFromSynchronize(t *testing.T) {
	f := newFixture(t)
	s, k := f.pendingLaunch(t)
	ctx := context.Background()
	f.drv.fail["EventElapsed"] = &Error{Call: "cuEventElapsedTime", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Message: "an illegal memory access was encountered"}
	err := s.Synchronize(ctx)
	if err == nil || len(f.ended("k")) != 0 {
		t.Fatalf("Synchronize = %v with %d spans; want the event error and no span", err, len(f.ended("k")))
	}
	delete(f.drv.fail, "EventElapsed")
	f.drv.fail["Launch"] = &Error{Call: "cuLaunchKernel", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE", Message: "invalid argument"}
	if err := s.Launch(ctx, k, D1(1), D1(1), 0); err == nil {
		t.Fatal("launch error lost")
	}
	delete(f.drv.fail, "Launch")
	if err := s.Synchronize(ctx); err != nil || len(f.ended("k")) != 0 {
		t.Fatalf("failed launch left a span or an error: %v", err)
	}
}

// timedFake offers the one-call launch the real driver has.
type timedFake struct {
	*fakeDriver
	timed int
}

func (d *timedFake) LaunchTimed(c ContextHandle, f FunctionHandle, grid, block Dim3, shared int, s StreamHandle, params []byte, offsets []int, start, end EventHandle, launch uint64) error {
	d.timed++
	if err := d.EventRecord(c, start, s); err != nil {
		return err
	}
	if err := d.Launch(c, f, grid, block, shared, s, params, offsets); err != nil {
		return err
	}
	return d.EventRecord(c, end, s)
}

func TestOneCallLaunchPathEmitsTheSameSpan(t *testing.T) {
	clock := newFakeClock()
	td := &timedFake{fakeDriver: newFakeDriver(clock)}
	r := newRecording()
	c, err := Open(0, WithDriver(td), WithTracerProvider(r.tp), withClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := &fixture{recording: r, clock: clock, drv: td.fakeDriver, c: c}
	k := f.kernel(t, "msm_sort", 400*time.Microsecond)
	s := f.stream(t)
	ctx, parent := f.parent(context.Background(), semconv.SpanMSMG1K)
	if err := s.Launch(ctx, k, D1(2), D1(64), 0, uint64(3)); err != nil {
		t.Fatal(err)
	}
	td.fail["Launch"] = &Error{Call: "cuLaunchKernel", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE", Message: "invalid argument"}
	if err := s.Launch(ctx, k, D1(2), D1(64), 0, uint64(3)); err == nil {
		t.Fatal("launch error lost")
	}
	delete(td.fail, "Launch")
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End(trace.WithTimestamp(clock.now()))
	sp := f.ended("msm_sort")
	if td.timed != 2 || len(sp) != 1 {
		t.Fatalf("one-call launches %d, spans %d; want 2 and 1", td.timed, len(sp))
	}
	if d := sp[0].EndTime().Sub(sp[0].StartTime()); absDur(d-400*time.Microsecond) > 2*time.Microsecond {
		t.Errorf("span lasts %v, want 400µs", d)
	}
	if sp[0].Parent().SpanID() != f.ended(semconv.SpanMSMG1K)[0].SpanContext().SpanID() {
		t.Error("not a child of its parent")
	}
}

// gpu.total says how much of it the device worked (the union of the
// session's operations, overlaps counted once) and how much it waited for
// the host between them: a host stall between two kernels is idle time.
func TestSessionGPUTotalSplitsBusyAndIdleTime(t *testing.T) {
	f := newFixture(t)
	k := f.kernel(t, "ntt_pass", 2*time.Millisecond)
	s1 := f.stream(t)
	s2 := f.stream(t)
	pctx, prove := f.parent(context.Background(), semconv.SpanGroth16Prove)
	ctx, sess := f.c.BeginSession(pctx)
	// Two kernels at once on two streams (overlapping: 2 ms busy, not 4).
	if err := s1.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := s2.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := s1.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.advance(30 * time.Millisecond) // the host works (or compiles), the device waits
	if err := s1.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	g := []sdktrace.ReadOnlySpan{f.endSession(t, sess, prove)}
	total := mustAttr(t, g[0], semconv.KeyCUDAGPUMS).AsFloat64()
	busy := mustAttr(t, g[0], semconv.KeyCUDABusyMS).AsFloat64()
	idle := mustAttr(t, g[0], semconv.KeyCUDAIdleMS).AsFloat64()
	if math.Abs(busy-4) > 0.05 { // the fake launches a few µs apart
		t.Errorf("cuda.gpu_busy_ms = %v, want 4 (two overlapping 2 ms kernels, then one more)", busy)
	}
	if idle < 29 || math.Abs(total-busy-idle) > 1e-6 {
		t.Errorf("cuda.gpu_idle_ms = %v of cuda.gpu_ms %v (busy %v), want the ~30 ms host stall", idle, total, busy)
	}
}
