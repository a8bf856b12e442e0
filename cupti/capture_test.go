package cupti

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

func one(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	s := spantest.NamedStubs(exp.GetSpans(), name)
	if len(s) != 1 {
		var names []string
		for _, x := range exp.GetSpans() {
			names = append(names, x.Name)
		}
		t.Fatalf("%d spans named %q, want 1 (spans: %v)", len(s), name, names)
	}
	return s[0]
}

func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func kernel(name string, corr uint32, start, dur uint64) []byte {
	return recordFrame(nil, kernelBytes(kernelRecord{
		start: start, end: start + dur, device: 0, context: 1, stream: 7, corr: corr,
		grid: [3]uint32{3, 5, 7}, block: [3]uint32{32, 2, 1}, staticShm: 64, dynShm: 96, regs: 40,
	}), name)
}

func ext(kind uint32, id uint64, corr uint32) []byte {
	return recordFrame(nil, extBytes(extCorrRecord{kind: kind, id: id, corr: corr}))
}

// startUnderParent starts a capture over f, then a span "prove" registered
// as a Go parent (released when the test ends), and gives its id.
func startUnderParent(t *testing.T, f *fakeCUPTI) (*Capture, *tracetest.InMemoryExporter, trace.Span, uint64) {
	t.Helper()
	c, exp, tp, _ := startFake(t, f)
	ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
	id, release := Parent(ctx)
	t.Cleanup(release)
	return c, exp, parent, id
}

func TestKernelRecordBecomesSpanUnderGoParent(t *testing.T) {
	f := newFake()
	c, exp, parent, id := startUnderParent(t, f)
	f.queue(ext(extParent, id, 11))
	f.queue(kernel("msm_bucket", 11, f.gpuNow+5_000, 2_500_000))
	c.Flush(context.Background())
	parent.End()
	k := one(t, exp, "msm_bucket")
	if k.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("kernel's parent %s, want the Go span %s", k.Parent.SpanID(), parent.SpanContext().SpanID())
	}
	want := map[attribute.Key]any{
		semconv.KeyCUDAKernelName: "msm_bucket", semconv.KeyCUDAGrid: "3,5,7", semconv.KeyCUDABlock: "32,2,1",
		semconv.KeyCUDASharedBytes: int64(96), KeyStaticShared: int64(64), KeyRegisters: int64(40),
		semconv.KeyCUDAStream: int64(7), semconv.KeyCUDADeviceOrdinal: int64(0), KeyCUPTIMS: 2.5,
		KeyCorrelationID: int64(11), KeyClockOffsetNS: f.offset(), KeyClockUncertainNS: int64(50),
		semconv.KeyCUDAClock: "cupti",
	}
	for k2, v := range want {
		got, ok := attr(k, k2)
		if !ok || got.AsInterface() != v {
			t.Errorf("%s = %v, want %v", k2, got.AsInterface(), v)
		}
	}
	wantStart := time.Unix(0, int64(f.gpuNow+5_000)+f.offset())
	if !k.StartTime.Equal(wantStart) || k.EndTime.Sub(k.StartTime) != 2500*time.Microsecond {
		t.Fatalf("span %v..%v, want start %v lasting 2.5ms", k.StartTime, k.EndTime, wantStart)
	}
}

func TestCorrelationArrivingInALaterBufferStillFindsTheParent(t *testing.T) {
	f := newFake()
	c, exp, tp, _ := startFake(t, f)
	ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
	id, release := Parent(ctx)
	release() // released before the records arrive: still found
	f.queue(kernel("late", 21, f.gpuNow+1000, 1000))
	c.Flush(context.Background())
	if n := len(spantest.NamedStubs(exp.GetSpans(), "late")); n != 0 {
		t.Fatalf("kernel emitted before its correlation could arrive (%d spans)", n)
	}
	f.queue(ext(extParent, id, 21))
	c.Flush(context.Background())
	parent.End()
	if k := one(t, exp, "late"); k.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("late kernel not under its Go parent")
	}
}

func TestRecordsWithoutParentGoUnderBoundedDeviceWindows(t *testing.T) {
	f := newFake()
	c, exp, _, _ := startFake(t, f, WithWindow(time.Second))
	base := f.gpuNow
	f.queue(kernel("a", 1, base+1_000, 1_000))
	f.queue(recordFrame(nil, memcpyBytes(memcpyRecord{copyKind: 1, bytes: 1 << 20, start: base + 2_000_000, end: base + 3_000_000, device: 0, stream: 7, corr: 2})))
	f.queue(kernel("b", 3, base+1_500_000_000, 1_000)) // 1.5 s later: the next window
	c.Flush(context.Background())
	c.Flush(context.Background()) // held one batch for correlation
	w := spantest.NamedStubs(exp.GetSpans(), SpanWindow)
	if len(w) != 1 {
		t.Fatalf("%d windows ended after the first window's time passed, want 1", len(w))
	}
	a, cp := one(t, exp, "a"), one(t, exp, semconv.SpanMemcpyHtoD)
	if a.Parent.SpanID() != w[0].SpanContext.SpanID() || cp.Parent.SpanID() != w[0].SpanContext.SpanID() {
		t.Fatal("records without a parent are not under the device window")
	}
	if v, _ := attr(cp, semconv.KeyCUDAGBPerSecond); v.AsFloat64() != float64(1<<20)/1e6 {
		t.Fatalf("cuda.gbps %v, want %v", v.AsFloat64(), float64(1<<20)/1e6)
	}
	if v, _ := attr(w[0], KeyWindowRecords); v.AsInt64() != 2 {
		t.Fatalf("window records %d, want 2", v.AsInt64())
	}
	if w[0].Parent.IsValid() {
		t.Fatal("a device window is not the root of its own trace")
	}
	c.Close(context.Background())
	if w := spantest.NamedStubs(exp.GetSpans(), SpanWindow); len(w) != 2 {
		t.Fatalf("%d windows after Close, want 2", len(w))
	}
}

func TestNVTXRangesNestAndParentTheirKernels(t *testing.T) {
	f := newFake()
	c, exp, parent, id := startUnderParent(t, f)
	g := f.gpuNow
	f.queue(pushFrame(nil, nvtxPush{ts: g + 10, thread: 9, id: 1, goParent: id, flags: pushThread, message: "outer", domain: "", category: 3, payloadType: 2, payload: 42}))
	f.queue(pushFrame(nil, nvtxPush{ts: g + 20, thread: 9, id: 2, parentRange: 1, goParent: id, flags: pushThread, message: "inner", domain: "zk"}))
	f.queue(ext(extParent, id, 5))
	f.queue(ext(extRange, 2, 5))
	f.queue(popFrame(nil, nvtxPop{ts: g + 5000, thread: 9, id: 2}))
	f.queue(popFrame(nil, nvtxPop{ts: g + 6000, thread: 9, id: 1}))
	f.queue(kernel("ntt", 5, g+100, 1000))
	c.Flush(context.Background())
	c.Flush(context.Background())
	parent.End()
	outer, inner, k := one(t, exp, "outer"), one(t, exp, "inner"), one(t, exp, "ntt")
	if outer.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatal("outer range not under the Go span that called the code")
	}
	if inner.Parent.SpanID() != outer.SpanContext.SpanID() {
		t.Fatal("inner range not under the outer one")
	}
	if k.Parent.SpanID() != inner.SpanContext.SpanID() {
		t.Fatal("kernel launched inside the inner range is not its child")
	}
	if v, _ := attr(outer, KeyNVTXPayload); v.AsInt64() != 42 {
		t.Fatalf("payload %v, want 42", v.AsInterface())
	}
	if v, _ := attr(outer, KeyNVTXCategory); v.AsInt64() != 3 {
		t.Fatalf("category %v, want 3", v.AsInterface())
	}
	if v, _ := attr(inner, KeyNVTXDomain); v.AsString() != "zk" {
		t.Fatalf("domain %q, want zk", v.AsString())
	}
	if d := inner.EndTime.Sub(inner.StartTime); d != 4980*time.Nanosecond {
		t.Fatalf("inner range lasted %v, want 4.98µs", d)
	}
}

func TestUnbalancedNVTXRanges(t *testing.T) {
	f := newFake()
	c, exp, _, logs := startFake(t, f)
	f.queue(popFrame(nil, nvtxPop{ts: f.gpuNow + 1, thread: 4, id: 0}))
	f.queue(popFrame(nil, nvtxPop{ts: f.gpuNow + 2, thread: 4, id: 0}))
	f.queue(popFrame(nil, nvtxPop{ts: f.gpuNow + 3, thread: 4, id: 77, startEnd: true}))
	f.queue(pushFrame(nil, nvtxPush{ts: f.gpuNow + 10, thread: 4, id: 3, flags: pushThread, message: "left open"}))
	c.Flush(context.Background())
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := one(t, exp, "left open")
	if v, _ := attr(s, KeyNVTXUnclosed); !v.AsBool() {
		t.Fatal("a range open at the end is not marked nvtx.unclosed")
	}
	if st := c.Stats(); st.UnbalancedPops != 3 || st.UnclosedRanges != 1 {
		t.Fatalf("stats %+v, want 3 unbalanced pops and 1 unclosed range", st)
	}
	var pops int
	for _, l := range *logs {
		if strings.Contains(l, "nvtxRangePop with no open range") {
			pops++
		}
		if strings.Contains(l, "\n") {
			t.Fatalf("notice of more than one line: %q", l)
		}
	}
	if pops != 1 {
		t.Fatalf("%d notices for two unmatched pops on one thread, want 1: %q", pops, *logs)
	}
}

func TestRangeWithTraceparentJoinsThatTrace(t *testing.T) {
	f := newFake()
	c, exp, _, _ := startFake(t, f)
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	f.queue(pushFrame(nil, nvtxPush{ts: f.gpuNow + 1, thread: 1, id: 1, flags: pushThread, message: "request traceparent=" + tp}))
	f.queue(ext(extRange, 1, 8))
	f.queue(kernel("k", 8, f.gpuNow+5, 10))
	f.queue(popFrame(nil, nvtxPop{ts: f.gpuNow + 100, thread: 1, id: 1}))
	c.Flush(context.Background())
	c.Flush(context.Background())
	r := one(t, exp, "request")
	if r.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || r.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("range in trace %s under %s, want the traceparent's", r.SpanContext.TraceID(), r.Parent.SpanID())
	}
	if k := one(t, exp, "k"); k.SpanContext.TraceID() != r.SpanContext.TraceID() || k.Parent.SpanID() != r.SpanContext.SpanID() {
		t.Fatal("kernel of the range not in the traceparent's trace under the range")
	}
}

func TestKernelsPastTheLimitAreAggregated(t *testing.T) {
	f := newFake()
	c, exp, tp, _ := startFake(t, f, WithMaxKernelSpans(2))
	ctx, parent := tp.Tracer("t").Start(context.Background(), "prove")
	id, release := Parent(ctx)
	defer release()
	for i := uint32(0); i < 5; i++ {
		f.queue(ext(extParent, id, 100+i))
		f.queue(kernel("bucket", 100+i, f.gpuNow+uint64(i)*10_000, uint64(i+1)*1_000_000))
	}
	c.Flush(context.Background())
	parent.End()
	s := spantest.NamedStubs(exp.GetSpans(), "bucket")
	if len(s) != 3 {
		t.Fatalf("%d spans for 5 kernels with a limit of 2, want 2 + 1 aggregate", len(s))
	}
	agg := s[2]
	if v, _ := attr(agg, semconv.KeyAggregatedCount); v.AsInt64() != 3 {
		t.Fatalf("aggregate count %d, want 3", v.AsInt64())
	}
	if v, _ := attr(agg, semconv.KeyAggregatedTotalMS); v.AsFloat64() != 12 {
		t.Fatalf("aggregate total %v ms, want 3+4+5", v.AsFloat64())
	}
	if v, _ := attr(agg, semconv.KeyAggregatedMinMS); v.AsFloat64() != 3 {
		t.Fatalf("aggregate min %v, want 3", v.AsFloat64())
	}
	if _, ok := attr(agg, semconv.KeyCUDAGrid); ok {
		t.Fatal("aggregate carries one launch's grid")
	}
}

// cudaspans' work gets no second span from CUPTI, and the hook gets its
// kernel's duration: with WithForcedFlush by the hook's own flush, by
// default from what the capture's drains brought.
func TestCudaspansKernelAppearsOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		forced bool
	}{{"forced flush", []Option{WithForcedFlush()}, true}, {"default", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			c, exp, _, _ := startFake(t, f, tc.opts...)
			f.queue(ext(extCudaspans, 0xabc, 31))
			f.queue(kernel("ours", 31, f.gpuNow+10, 1_234_000))
			f.queue(ext(extCudaspans, 1, 32))
			f.queue(recordFrame(nil, memcpyBytes(memcpyRecord{copyKind: 1, bytes: 64, start: f.gpuNow + 20, end: f.gpuNow + 40, corr: 32})))
			if !tc.forced {
				if got := c.cudaspansDurations([]uint64{0xabc}); len(got) != 0 {
					t.Fatalf("durations %v before any drain: the hook flushed CUPTI", got)
				}
				c.Flush(context.Background())
			}
			got := c.cudaspansDurations([]uint64{0xabc, 0xdef})
			if len(spantest.NamedStubs(exp.GetSpans(), "ours")) != 0 || len(spantest.NamedStubs(exp.GetSpans(), semconv.SpanMemcpyHtoD)) != 0 {
				t.Fatal("work cudaspans traces got a second span from CUPTI")
			}
			if got[0xabc] != 1.234 || len(got) != 1 {
				t.Fatalf("durations %v, want 0xabc: 1.234 ms only", got)
			}
			if c.Stats().Deduplicated != 2 {
				t.Fatalf("stats %+v", c.Stats())
			}
		})
	}
}

func TestMemsetAndSynchronizationSpans(t *testing.T) {
	f := newFake()
	c, exp, _, _ := startFake(t, f)
	f.queue(recordFrame(nil, memsetBytes(memsetRecord{bytes: 4096, start: f.gpuNow + 1, end: f.gpuNow + 1001, device: 1, stream: 3, corr: 1})))
	f.queue(recordFrame(nil, syncBytes(syncRecord{typ: 3, start: f.gpuNow + 2000, end: f.gpuNow + 9000, corr: 2, context: 1, stream: 3})))
	c.Flush(context.Background())
	c.Close(context.Background())
	m := one(t, exp, semconv.SpanCUDAMemset)
	if v, _ := attr(m, semconv.KeyCUDABytes); v.AsInt64() != 4096 {
		t.Fatal("memset bytes")
	}
	if v, _ := attr(m, semconv.KeyCUDADeviceOrdinal); v.AsInt64() != 1 {
		t.Fatal("memset device")
	}
	s := one(t, exp, SpanSync)
	if v, _ := attr(s, KeySyncType); v.AsString() != "stream" {
		t.Fatalf("sync type %q", v.AsString())
	}
}

func TestStartFailures(t *testing.T) {
	cases := []struct {
		name string
		f    func() *fakeCUPTI
		want error
		line string
	}{
		{"wrong version", func() *fakeCUPTI { f := newFake(); f.version = 12; return f }, ErrVersion, "API version 12"},
		{"in use", func() *fakeCUPTI { f := newFake(); f.startCode = cuptiMultipleSubscribers; return f }, ErrInUse, "MULTIPLE_SUBSCRIBERS"},
		{"other start failure", func() *fakeCUPTI { f := newFake(); f.startCode = 15; return f }, ErrStart, "cuptiSubscribe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(context.Background(), withBackend(tc.f()))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.line) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line wrapping %v naming %q", err, tc.want, tc.line)
			}
		})
	}
}

func TestSecondCaptureIsRefused(t *testing.T) {
	startFake(t, newFake())
	_, err := Start(context.Background(), withBackend(newFake()))
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Start: %v, want ErrInUse", err)
	}
}

func TestNoLibcupti(t *testing.T) {
	openMu.Lock()
	loaded := openPath
	openMu.Unlock()
	if loaded != "" {
		// A CUPTI (the C fake) was loaded by an earlier test of this
		// process (go test -count=2): a bare name would be served by it,
		// and another file cannot be loaded, which is said in one line.
		_, err := Start(context.Background(), WithLibraryPaths("/nonexistent/libcupti.so.13"))
		if !errors.Is(err, ErrNoCUPTI) || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), loaded+" is already loaded") || !strings.Contains(err.Error(), "/nonexistent/libcupti.so.13") {
			t.Fatalf("err %q, want one line wrapping ErrNoCUPTI that names %s and the path asked for", err, loaded)
		}
		return
	}
	_, err := Start(context.Background(), WithLibraryPaths("/nonexistent/libcupti.so.13", "libc.so.6"))
	if !errors.Is(err, ErrNoCUPTI) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err %q, want one line wrapping ErrNoCUPTI", err)
	}
	for _, want := range []string{"/nonexistent/libcupti.so.13", "libc.so.6 has no cuptiGetVersion"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("err %q does not name %q", err, want)
		}
	}
}

func TestCloseStopsCUPTIAndIsIdempotent(t *testing.T) {
	f := newFake()
	c, _, _, _ := startFake(t, f)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.stopped {
		t.Fatal("Close did not stop CUPTI")
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A new capture can start once the first is closed.
	c2, err := Start(context.Background(), withBackend(newFake()), WithTracerProvider(sdktrace.NewTracerProvider()))
	if err != nil {
		t.Fatal(err)
	}
	c2.Close(context.Background())
}

func TestNoticesForDroppedRecordsAndNotes(t *testing.T) {
	f := newFake()
	c, _, _, logs := startFake(t, f)
	f.queue(appendFrame(nil, frameDropped, append(appendU64(nil, 12), 0, 0, 0, 0)))
	f.queue(appendFrame(nil, frameNote, []byte("NVTX ranges not captured: cuptiEnableDomain(NVTX): x (1)")))
	c.Flush(context.Background())
	if c.Stats().Dropped != 12 {
		t.Fatalf("dropped %d, want 12", c.Stats().Dropped)
	}
	joined := strings.Join(*logs, "|")
	if !strings.Contains(joined, "records dropped") || !strings.Contains(joined, "NVTX ranges not captured") {
		t.Fatalf("notices %q", joined)
	}
}

// A library that does not load is named once in the error: dlerror's
// text names it, and the error said "dlopen P: P: cannot open shared
// object file".
func TestLocateNamesAMissingLibraryOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcupti.so.13")
	_, _, err := Locate(missing)
	if !errors.Is(err, ErrNoCUPTI) || !strings.Contains(err.Error(), "(dlopen "+missing+": ") || strings.Count(err.Error(), missing) != 2 {
		t.Fatalf("err %v, want the path in the list and once in the reason", err)
	}
}

func TestLocateRefusesWhatIsNotCUPTI(t *testing.T) {
	_, _, err := Locate("/nonexistent/libcupti.so.13", "libc.so.6")
	if !errors.Is(err, ErrNoCUPTI) || !strings.Contains(err.Error(), "libc.so.6 has no cuptiGetVersion") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err %v", err)
	}
}

// LibraryLoads: a library the loader finds loads; a missing file is an
// error with the loader's reason.
func TestLibraryLoads(t *testing.T) {
	if err := LibraryLoads("libc.so.6"); err != nil {
		t.Errorf("libc.so.6: %v", err)
	}
	err := LibraryLoads("/nonexistent/libcuda.so.1")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libcuda.so.1") {
		t.Errorf("a missing file: err %v, want the loader's reason", err)
	}
}
