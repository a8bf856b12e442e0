package cupti

import (
	"context"
	"errors"
	"math"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Tests named *GPU need a CUDA device and libcupti, and skip without a
// device (CI). On the H200 host they check this package's record layouts
// against the installed CUPTI (CUDA 13) and cudaspans' agreement.

const probeSrc = `
extern "C" __global__ void cupti_probe(float *out, unsigned n, unsigned spin) {
	__shared__ float st[16];            // 64 bytes of static shared memory
	extern __shared__ float dyn[];      // the launch's dynamic shared memory
	unsigned i = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
	float v = (float)t;
	for (unsigned k = 0; k < spin; k++) v = v * 1.0000001f + 0.5f;
	if (t < 16) st[t] = v;
	dyn[t % 24] = v;
	__syncthreads();
	if (t == 0 && i < n) out[i] = st[0] + dyn[0];
}
`

type gpuCapture struct {
	c   *Capture
	cs  *cudaspans.Context
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

func startGPU(t *testing.T, opts ...Option) *gpuCapture {
	t.Helper()
	if _, err := cudaspans.LoadDriver(); errors.Is(err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	rec, tp := spantest.New()
	c, err := Start(context.Background(), append([]Option{WithTracerProvider(tp), WithLogger(func(s string) { t.Log(s) })}, opts...)...)
	if err != nil {
		t.Fatalf("CUPTI on a GPU host: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	t.Logf("CUPTI %s, API version %d", c.Path(), c.Version())
	cs, err := cudaspans.Open(0, cudaspans.WithTracerProvider(tp), cudaspans.WithKernelCacheDir("-"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &gpuCapture{c: c, cs: cs, rec: rec, tp: tp}
}

func (g *gpuCapture) byClock(name, clock string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range g.rec.Ended() {
		if s.Name() != name {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == semconv.KeyCUDAClock && kv.Value.AsString() == clock {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestRecordLayoutOnDeviceGPU launches a kernel of known shape and checks
// every field read from its CUPTI record (records.go's offsets) against
// it: a wrong offset shows as a wrong grid, block, shared size, name,
// device or duration.
func TestRecordLayoutOnDeviceGPU(t *testing.T) {
	g := startGPU(t)
	// Not deduplicated: the kernel must come back as CUPTI's own span.
	cudaspans.SetLaunchCorrelation(nil, nil, nil)
	ctx, root := g.tp.Tracer("t").Start(context.Background(), "layout")
	mod, err := g.cs.Compile(ctx, "cupti_probe", probeSrc, cudaspans.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := mod.Function("cupti_probe")
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.cs.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.cs.Alloc(ctx, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(ctx, out.Ptr(), 0, 4096); err != nil {
		t.Fatal(err)
	}
	grid, block := cudaspans.Dim3{X: 3, Y: 5, Z: 7}, cudaspans.Dim3{X: 32, Y: 2, Z: 1}
	if err := s.Launch(ctx, f, grid, block, 96, out.Ptr(), uint32(105), uint32(20000)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	// Records with no correlation record wait for one: one drain with
	// the forced flush, by default as many as DefaultDurationWait spans.
	for i := 0; i < 2*holdBatches(g.c.cfg)+2 && (len(g.byClock("cupti_probe", "cupti")) == 0 || len(g.byClock(semconv.SpanCUDAMemset, "cupti")) == 0); i++ {
		g.c.Flush(ctx)
	}
	root.End()
	ks := g.byClock("cupti_probe", "cupti")
	if len(ks) != 1 {
		t.Fatalf("%d CUPTI spans of cupti_probe, want 1 (stats %+v)", len(ks), g.c.Stats())
	}
	k := ks[0]
	for key, want := range map[string]any{
		"cuda.kernel.name": "cupti_probe", "cuda.grid": "3,5,7", "cuda.block": "32,2,1",
		"cuda.shared_bytes": int64(96), "cuda.static_shared_bytes": int64(64), "cuda.device.ordinal": int64(0),
	} {
		if got, _ := spantest.Attr(k, attribute.Key(key)); got != want {
			t.Errorf("%s = %v, want %v (record layout differs from records.go)", key, got, want)
		}
	}
	ev := g.byClock("cupti_probe", "gpu")
	if len(ev) != 1 {
		t.Fatalf("%d cudaspans spans of the kernel", len(ev))
	}
	evMS, _ := spantest.Attr(ev[0], "cuda.gpu_ms")
	cuMS, _ := spantest.Attr(k, "cuda.cupti_ms")
	off, _ := spantest.Attr(k, "cuda.clock.offset_ns")
	unc, _ := spantest.Attr(k, "cuda.clock.uncertainty_ns")
	regs, _ := spantest.Attr(k, "cuda.registers_per_thread")
	t.Logf("kernel: CUPTI %.4f ms, events %.4f ms; clock offset %v ns ± %v ns; %v registers", cuMS, evMS, off, unc, regs)
	if cuMS.(float64) <= 0 || cuMS.(float64) > evMS.(float64)*1.5+0.01 {
		t.Errorf("CUPTI duration %v ms against the events' %v ms: the start/end offsets are wrong", cuMS, evMS)
	}
	// The CUPTI span lies where the event-timed span does, within the
	// calibration's uncertainty and the anchor's few µs.
	d := k.StartTime().Sub(ev[0].StartTime())
	if math.Abs(float64(d.Microseconds())) > 200 {
		t.Errorf("CUPTI span starts %v from the event-timed one: clock calibration is off", d)
	}
	if n := len(g.byClock(semconv.SpanCUDAMemset, "cupti")); n != 1 {
		t.Errorf("%d CUPTI memset spans, want 1 (memset layout)", n)
	}
}

// TestCudaspansKernelsTracedOnceGPU checks that with the capture on, a
// kernel launched through cudaspans has one span, the event-timed one,
// carrying CUPTI's duration, by default (no forced flush: the span held
// until the drain) and with WithForcedFlush, and logs how well the two
// agree (bench/cupti.md's agreement figure comes from cuptibench).
func TestCudaspansKernelsTracedOnceGPU(t *testing.T) {
	t.Run("default", func(t *testing.T) { testCudaspansKernelsTracedOnce(t) })
	t.Run("forced flush", func(t *testing.T) { testCudaspansKernelsTracedOnce(t, WithForcedFlush()) })
}

func testCudaspansKernelsTracedOnce(t *testing.T, opts ...Option) {
	g := startGPU(t, opts...)
	ctx, root := g.tp.Tracer("t").Start(context.Background(), "once")
	mod, err := g.cs.Compile(ctx, "cupti_probe", probeSrc, cudaspans.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := mod.Function("cupti_probe")
	s, _ := g.cs.NewStream()
	out, err := g.cs.Alloc(ctx, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	host := make([]byte, 1<<16)
	if err := cudaspans.HtoD(ctx, s, out.Ptr(), host); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := 0; i < n; i++ {
		if err := s.Launch(ctx, f, cudaspans.D1(132), cudaspans.Dim3{X: 256, Y: 1, Z: 1}, 96, out.Ptr(), uint32(132), uint32(200000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	g.c.Flush(ctx)
	root.End()
	if c := g.byClock("cupti_probe", "cupti"); len(c) != 0 {
		t.Fatalf("%d CUPTI spans for kernels cudaspans traced, want 0", len(c))
	}
	if c := g.byClock(semconv.SpanMemcpyHtoD, "cupti"); len(c) != 0 {
		t.Fatalf("%d CUPTI spans for cudaspans' copy, want 0", len(c))
	}
	ev := g.byClock("cupti_probe", "gpu")
	if len(ev) != n {
		t.Fatalf("%d cudaspans kernel spans, want %d", len(ev), n)
	}
	within, worst := 0, 0.0
	for _, s := range ev {
		cu, ok := spantest.Attr(s, "cuda.cupti_ms")
		if !ok {
			t.Fatalf("kernel span without cuda.cupti_ms (stats %+v)", g.c.Stats())
		}
		e, _ := spantest.Attr(s, "cuda.gpu_ms")
		diff := math.Abs(cu.(float64) - e.(float64))
		if diff <= math.Max(0.01*e.(float64), 0.002) {
			within++
		}
		worst = math.Max(worst, diff)
	}
	t.Logf("agreement: %d of %d kernels within 1%% or 2 µs of the events; worst difference %.4f ms", within, n, worst)
}
