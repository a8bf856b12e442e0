package cudaspans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Tests named *GPU need a CUDA device and skip without one (CI).

type gpuFixture struct {
	recording
	c *Context
}

func openGPU(t *testing.T, opts ...Option) *gpuFixture {
	t.Helper()
	r := newRecording()
	cache := os.Getenv("CUDASPANS_TEST_CACHE")
	if cache == "" {
		cache = t.TempDir()
	}
	opts = append([]Option{WithTracerProvider(r.tp), WithKernelCacheDir(cache)}, opts...)
	c, err := Open(0, opts...)
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &gpuFixture{recording: r, c: c}
}

// testModule compiles testKernels (through the kernel cache) and returns
// the module; it fails the test on an error.
func (g *gpuFixture) testModule(t *testing.T) *Module {
	t.Helper()
	m, err := g.c.Compile(context.Background(), "cudaspans_test", testKernels, CompileOptions{Defines: testDefines})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// function returns m's function name; it fails the test on an error.
func function(t *testing.T, m *Module, name string) *Function {
	t.Helper()
	f, err := m.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const testKernels = `
struct Odd { unsigned char tag; unsigned long long x[3]; unsigned short w; };
struct B3 { unsigned char b[3]; };

extern "C" __global__ void odd_params(unsigned long long *out, const unsigned long long *in, unsigned n,
                                      Odd o, B3 b3, double d, bool flag, unsigned short u16, float f,
                                      unsigned char b1) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	unsigned long long k = o.tag + o.x[0] + 2 * o.x[1] + 3 * o.x[2] + o.w + b3.b[0] + 2 * b3.b[1] +
	                       3 * b3.b[2] + (unsigned long long)d + (flag ? 1 : 0) + u16 +
	                       (unsigned long long)f + b1;
	out[i] = in[i] * SCALE + k;
}

extern "C" __global__ void spin(long long cycles, unsigned long long *sink) {
	long long t0 = clock64();
	while (clock64() - t0 < cycles) {}
	if (threadIdx.x == 0 && blockIdx.x == 0) *sink = (unsigned long long)clock64();
}

extern "C" __global__ void empty() {}
`

var testDefines = map[string]string{"SCALE": "3ULL"}

type odd struct {
	Tag uint8
	X   [3]uint64
	W   uint16
}

func TestDevicesGPU(t *testing.T) {
	devs, err := Devices()
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		t.Logf("device %d: %s, %s, %.1f GiB, sm_%d%d, %d SMs, %d KiB shared opt-in, %d MiB L2, driver CUDA %d.%d",
			d.Ordinal, d.Name, d.UUID, float64(d.TotalMemory)/(1<<30), d.Major, d.Minor, d.Multiprocessors,
			d.SharedMemOptin>>10, d.L2CacheBytes>>20, d.DriverVersion/1000, d.DriverVersion%1000/10)
		if d.Name == "" || d.TotalMemory == 0 || d.Major == 0 || d.Multiprocessors == 0 || !strings.HasPrefix(d.UUID, "GPU-") {
			t.Errorf("incomplete device info %+v", d)
		}
	}
}

func TestKernelRoundTripWithOddParamsGPU(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	f := function(t, g.testModule(t), "odd_params")
	if p, ok := f.Params(); ok {
		t.Logf("driver parameter layout of odd_params: %v", p)
	} else {
		t.Log("driver cannot list kernel parameters (before CUDA 12.4)")
	}
	if regs, err := f.Attribute(FuncNumRegs); err != nil || regs <= 0 {
		t.Errorf("registers = %d, %v", regs, err)
	}
	s, err := g.c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_003 // not a multiple of the block
	in, err := g.c.AllocPinned(ctx, n*8)
	if err != nil {
		t.Fatal(err)
	}
	defer g.c.Free(ctx, in)
	src := unsafe.Slice((*uint64)(in.Ptr()), n)
	for i := range src {
		src[i] = rand.Uint64() >> 2
	}
	dIn, err := g.c.Alloc(ctx, n*8)
	if err != nil {
		t.Fatal(err)
	}
	defer g.c.Free(ctx, dIn)
	dOut, err := g.c.Alloc(ctx, n*8)
	if err != nil {
		t.Fatal(err)
	}
	defer g.c.Free(ctx, dOut)
	dCopy, err := g.c.Alloc(ctx, n*8)
	if err != nil {
		t.Fatal(err)
	}
	defer g.c.Free(ctx, dCopy)

	o := odd{Tag: 7, X: [3]uint64{1000, 20000, 300000}, W: 0xbeef}
	b3 := [3]byte{5, 6, 9}
	if err := s.CopyHtoD(ctx, dIn.Ptr(), in.Ptr(), n*8); err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(ctx, dOut.Ptr(), 0xff, n*8); err != nil { // poison
		t.Fatal(err)
	}
	args := []any{dOut.Ptr(), dIn.Ptr(), uint32(n), o, b3, float64(1e6), true, uint16(0x1234), float32(4096), uint8(200)}
	if err := s.Launch(ctx, f, D1((n+255)/256), D1(256), 0, args...); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyDtoD(ctx, dCopy.Ptr(), dOut.Ptr(), n*8); err != nil {
		t.Fatal(err)
	}
	out := make([]uint64, n)
	if err := DtoH(ctx, s, out, dCopy.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	k := uint64(o.Tag) + o.X[0] + 2*o.X[1] + 3*o.X[2] + uint64(o.W) + 5 + 2*6 + 3*9 + 1e6 + 1 + 0x1234 + 4096 + 200
	for i := range out {
		if want := src[i]*3 + k; out[i] != want {
			t.Fatalf("out[%d] = %d, want %d (in %d)", i, out[i], want, src[i])
		}
	}
	// Bad launches fail before reaching the device.
	if _, ok := f.Params(); ok {
		if err := s.Launch(ctx, f, D1(1), D1(1), 0, args[:9]...); err == nil {
			t.Error("launch with a missing argument succeeded")
		}
	}
	for _, name := range []string{semconv.SpanMemcpyHtoD, semconv.SpanMemcpyDtoH, semconv.SpanMemcpyDtoD, semconv.SpanCUDAMemset, "odd_params"} {
		if len(g.ended(name)) != 1 {
			t.Errorf("%d %s spans, want 1", len(g.ended(name)), name)
		}
	}
	for _, sp := range append(g.ended(semconv.SpanMemcpyHtoD), g.ended(semconv.SpanMemcpyDtoH)...) {
		gbps, _ := attr(sp, semconv.KeyCUDAGBPerSecond)
		t.Logf("%s of %d bytes: %.1f GB/s", sp.Name(), n*8, gbps.AsFloat64())
	}
}

// spinKernel compiles the test kernels and gives their module, the spin
// kernel and an 8-byte device sink for it, freed when the test ends.
func (g *gpuFixture) spinKernel(t *testing.T) (*Module, *Function, *DeviceBuffer) {
	t.Helper()
	ctx := context.Background()
	m := g.testModule(t)
	spin := function(t, m, "spin")
	sink, err := g.c.Alloc(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.c.Free(ctx, sink) })
	return m, spin, sink
}

// The spin kernel runs about ms milliseconds at a 2 GHz clock (an H200
// boosts to 1.98 GHz); longer when the card clocks lower.
func spinCycles(ms float64) int64 { return int64(ms * 2e6) }

func TestKernelSpansNestAndMatchEventTimesGPU(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	_, spin, sink := g.spinKernel(t)
	s, _ := g.c.NewStream()
	drv, h := g.c.Driver(), g.c.Handle()
	// Anchor the stream first, so the anchor's own events stay outside the
	// reference brackets below.
	if err := s.Launch(ctx, spin, D1(1), D1(32), 0, int64(0), sink.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	// A 3 ms blocker first: the launches below queue behind it, so the
	// reference events run back to back with the kernels instead of
	// timestamping host gaps between the calls.
	if err := s.Launch(ctx, spin, D1(1), D1(32), 0, spinCycles(3), sink.Ptr()); err != nil {
		t.Fatal(err)
	}
	// The reference measurement: each instrumented launch is followed by
	// the same kernel launched raw (cuLaunchKernel, no span, no events of
	// ours) between our own pair of events. Bracketing the instrumented
	// launch itself would also time the span's two event records, which
	// cost 3 to 6 µs of GPU time depending on the host.
	type ref struct{ a, b EventHandle }
	var refs []ref
	pctx, parent := g.tp.Tracer("test").Start(ctx, semconv.SpanComputeH)
	before := time.Now()
	for i, ms := range []float64{0.05, 0.5, 2, 0.01, 1} {
		if err := s.Launch(pctx, spin, D1(1+i), D1(32), 0, spinCycles(ms), sink.Ptr()); err != nil {
			t.Fatal(err)
		}
		a, _ := drv.EventCreate(h)
		b, _ := drv.EventCreate(h)
		params, offs, _, err := packParams([]any{spinCycles(ms), sink.Ptr()})
		if err != nil {
			t.Fatal(err)
		}
		if err := drv.EventRecord(h, a, s.Handle()); err != nil {
			t.Fatal(err)
		}
		if err := drv.Launch(h, spin.h, D1(1+i).norm(), D1(32).norm(), 0, s.Handle(), params, offs); err != nil {
			t.Fatal(err)
		}
		if err := drv.EventRecord(h, b, s.Handle()); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref{a, b})
	}
	if err := s.Synchronize(pctx); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	parent.End()
	p := g.ended(semconv.SpanComputeH)[0]
	var spans []sdktrace.ReadOnlySpan
	for _, sp := range g.ended("spin") {
		if sp.Parent().IsValid() {
			spans = append(spans, sp)
		}
	}
	if len(spans) != len(refs) {
		t.Fatalf("%d spin spans, want %d", len(spans), len(refs))
	}
	for i, sp := range spans {
		ms, err := drv.EventElapsed(h, refs[i].a, refs[i].b)
		if err != nil {
			t.Fatal(err)
		}
		ref := time.Duration(float64(ms) * 1e6)
		got := sp.EndTime().Sub(sp.StartTime())
		diff := absDur(got - ref)
		t.Logf("spin %d: span %v, events %v, diff %v", i, got, ref, diff)
		if diff > 5*time.Microsecond && float64(diff) > 0.05*float64(ref) {
			t.Errorf("spin %d: span lasts %v, events measured %v", i, got, ref)
		}
		if sp.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("spin %d not a child of %s", i, p.Name())
		}
		if sp.StartTime().Before(p.StartTime()) || sp.EndTime().After(p.EndTime()) {
			t.Errorf("spin %d [%v, %v] outside parent [%v, %v]", i, sp.StartTime(), sp.EndTime(), p.StartTime(), p.EndTime())
		}
		// The anchor places device time on the host clock: each kernel ran
		// between the first launch call and the end of the synchronize, up
		// to the anchor's error (half an event round trip, some µs).
		const slack = 25 * time.Microsecond
		if sp.StartTime().Before(before.Add(-slack)) || sp.EndTime().After(after.Add(slack)) {
			t.Errorf("spin %d [%v, %v] outside host bracket [%v, %v]", i, sp.StartTime(), sp.EndTime(), before, after)
		}
		if _, ok := attr(sp, semconv.KeyCUDAClamped); ok {
			t.Logf("spin %d clamped into its parent", i)
		}
		_ = drv.EventDestroy(h, refs[i].a)
		_ = drv.EventDestroy(h, refs[i].b)
	}
	t.Logf("host bracket %v, first kernel starts %v after it, last ends %v before its end",
		after.Sub(before), spans[0].StartTime().Sub(before), after.Sub(spans[len(spans)-1].EndTime()))
}

func TestSessionAggregationAndGPUTotalGPU(t *testing.T) {
	g := openGPU(t, WithMaxKernelSpans(16))
	ctx := context.Background()
	m, spin, sink := g.spinKernel(t)
	empty, _ := m.Function("empty")
	s1, _ := g.c.NewStream()
	s2, _ := g.c.NewStream()
	pctx, prove := g.tp.Tracer("test").Start(ctx, semconv.SpanGroth16Prove)
	sctx, sess := g.c.BeginSession(pctx)
	const launches = 300
	t0 := time.Now()
	for i := 0; i < launches; i++ {
		if err := s1.Launch(sctx, empty, D1(1), D1(32), 0); err != nil {
			t.Fatal(err)
		}
	}
	perLaunch := time.Since(t0) / launches
	if err := s2.Launch(sctx, spin, D1(1), D1(32), 0, spinCycles(1), sink.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := sess.End(); err != nil {
		t.Fatal(err)
	}
	prove.End()
	// The same launches through the bare driver, for the cost of the spans.
	t0 = time.Now()
	for i := 0; i < launches; i++ {
		if err := g.c.Driver().Launch(g.c.Handle(), empty.h, D1(1), D1(32), 0, s1.Handle(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	bare := time.Since(t0) / launches
	if err := g.c.Driver().StreamSynchronize(g.c.Handle(), s1.Handle()); err != nil {
		t.Fatal(err)
	}
	t.Logf("host time per launch: %v instrumented (2 events + launch), %v bare cuLaunchKernel (%d launches)", perLaunch, bare, launches)
	emp := g.ended("empty")
	var agg sdktrace.ReadOnlySpan
	for _, sp := range emp {
		if _, ok := attr(sp, semconv.KeyAggregatedCount); ok {
			agg = sp
		}
	}
	if agg == nil || len(emp) != 17 {
		t.Fatalf("%d empty spans (want 16 single and 1 aggregate), aggregate %v", len(emp), agg)
	}
	if n := mustAttr(t, agg, semconv.KeyAggregatedCount).AsInt64(); n != launches-16 {
		t.Errorf("aggregate count %d, want %d", n, launches-16)
	}
	tot := g.ended(semconv.SpanGPUTotal)
	if len(tot) != 1 {
		t.Fatalf("%d gpu.total spans", len(tot))
	}
	gms := mustAttr(t, tot[0], semconv.KeyCUDAGPUMS).AsFloat64()
	p := g.ended(semconv.SpanGroth16Prove)[0]
	t.Logf("gpu.total %.3f ms (%d ops) inside groth16.prove %.3f ms", gms, mustAttr(t, tot[0], semconv.KeyCUDAOpCount).AsInt64(),
		float64(p.EndTime().Sub(p.StartTime()))/1e6)
	if gms < 0.5 || tot[0].StartTime().Before(p.StartTime()) || tot[0].EndTime().After(p.EndTime()) {
		t.Errorf("gpu.total %.3f ms [%v, %v] in parent [%v, %v]", gms, tot[0].StartTime(), tot[0].EndTime(), p.StartTime(), p.EndTime())
	}
	if sess.Ops() != launches+1 {
		t.Errorf("session saw %d ops, want %d", sess.Ops(), launches+1)
	}
}

func TestPinnedMemoryAndReleaseSpansGPU(t *testing.T) {
	g := openGPU(t)
	ctx, parent := g.tp.Tracer("test").Start(context.Background(), semconv.SpanGroth16Prove)
	const size = 256 << 20
	pin, err := g.c.AllocPinned(ctx, size)
	if err != nil {
		t.Fatal(err)
	}
	host, err := buffer.NewMmap(size)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := g.c.Register(ctx, host.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	dev, err := g.c.Alloc(ctx, size)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := g.c.NewStream()
	for _, src := range []unsafe.Pointer{pin.Ptr(), unsafe.Pointer(&reg.Bytes()[0])} {
		if err := s.CopyHtoD(ctx, dev.Ptr(), src, size); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CopyDtoH(ctx, pin.Ptr(), dev.Ptr(), size); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	free, total, err := g.c.MemInfo()
	if err != nil || total == 0 || free > total {
		t.Errorf("MemInfo = %d, %d, %v", free, total, err)
	}
	rel, err := buffer.NewReleaser(buffer.ReleaseAsync, buffer.WithTracerProvider(g.tp))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]buffer.Buffer{"a": pin, "wires": reg, "h": dev} {
		if err := rel.Release(ctx, name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := rel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := host.Free(); err != nil {
		t.Fatal(err)
	}
	parent.End()
	for _, sp := range g.ended(semconv.SpanCUDAMalloc) {
		t.Logf("cuda.malloc %s %d MiB: %v", mustAttr(t, sp, semconv.KeyBufferKind).AsString(), size>>20, sp.EndTime().Sub(sp.StartTime()))
	}
	for _, sp := range g.ended(semconv.SpanCUDAHostRegister) {
		t.Logf("cuda.host_register %d MiB: %v", size>>20, sp.EndTime().Sub(sp.StartTime()))
	}
	for _, name := range []string{semconv.SpanMemcpyHtoD, semconv.SpanMemcpyDtoH} {
		for _, sp := range g.ended(name) {
			t.Logf("%s %d MiB pinned: %.1f GB/s", name, size>>20, mustAttr(t, sp, semconv.KeyCUDAGBPerSecond).AsFloat64())
		}
	}
	rs := g.ended(semconv.SpanBufferRelease)
	if len(rs) != 3 {
		t.Fatalf("%d buffer.release spans, want 3", len(rs))
	}
	kinds := map[string]int{}
	for _, sp := range rs {
		kinds[mustAttr(t, sp, semconv.KeyBufferKind).AsString()]++
		t.Logf("buffer.release %s %s: %v", mustAttr(t, sp, semconv.KeyBufferName).AsString(),
			mustAttr(t, sp, semconv.KeyBufferKind).AsString(), sp.EndTime().Sub(sp.StartTime()))
	}
	if kinds["pinned"] != 2 || kinds["device"] != 1 {
		t.Errorf("release kinds %v", kinds)
	}
	if len(g.ended(semconv.SpanCUDAMalloc)) != 2 {
		t.Errorf("%d cuda.malloc spans, want 2", len(g.ended(semconv.SpanCUDAMalloc)))
	}
}

func TestCompileErrorsCarryTheNVRTCLogGPU(t *testing.T) {
	g := openGPU(t)
	_, err := g.c.Compile(context.Background(), "broken", `extern "C" __global__ void k() { undeclared_thing(); }`, CompileOptions{})
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Compile = %v, want *CompileError", err)
	}
	t.Logf("compile error: %v", err)
	if !strings.Contains(ce.Log, "undeclared_thing") || ce.Result != "NVRTC_ERROR_COMPILATION" {
		t.Errorf("log %q result %q", ce.Log, ce.Result)
	}
}

func TestPTXModuleFileLoadsWithoutNVRTCGPU(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	dev := g.c.Device()
	// NVRTC emits PTX for a compute_XY target; write it out and load it as
	// a host without NVRTC would.
	m, err := g.c.Compile(ctx, "ptx_test", testKernels, CompileOptions{Defines: testDefines, Arch: fmt.Sprintf("compute_%d%d", dev.Major, dev.Minor)})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Close()
	entries, _ := filepath.Glob(filepath.Join(g.c.KernelCacheDir(), "*.bin"))
	var ptx []byte
	for _, e := range entries {
		if b, _ := os.ReadFile(e); isPTX(b) {
			ptx = b
		}
	}
	if ptx == nil {
		t.Fatal("no PTX in the kernel cache")
	}
	file := filepath.Join(t.TempDir(), "kernels.ptx")
	if err := os.WriteFile(file, ptx, 0o644); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(0, WithNVRTCPaths("/nonexistent/libnvrtc.so"), WithKernelCacheDir("-"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Compile(ctx, "x", "extern \"C\" __global__ void x() {}", CompileOptions{}); !errors.Is(err, ErrNoCompiler) {
		t.Errorf("Compile without NVRTC = %v, want ErrNoCompiler", err)
	}
	m2, err := c2.LoadModule(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	f, err := m2.Function("empty")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c2.NewStream()
	if err := s.Launch(ctx, f, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
}

// The kernel cache survives the process: a child process (this test
// binary again) compiles the same source and must not call NVRTC.
func TestKernelCacheServesASecondStartGPU(t *testing.T) {
	if os.Getenv("CUDASPANS_CACHE_CHILD") != "" {
		t.Skip("running as the child")
	}
	dir := t.TempDir()
	t.Setenv("CUDASPANS_TEST_CACHE", dir)
	g := openGPU(t)
	ctx := context.Background()
	before := CompileCount()
	t0 := time.Now()
	m, err := g.c.Compile(ctx, "cudaspans_test", testKernels, CompileOptions{Defines: testDefines})
	if err != nil {
		t.Fatal(err)
	}
	compileTime := time.Since(t0)
	if m.FromCache() || CompileCount() != before+1 {
		t.Fatalf("first compile into an empty cache: fromCache=%v compiles=%d", m.FromCache(), CompileCount()-before)
	}
	// In process, a fresh Context: nothing in memory but the disk cache.
	c2, err := Open(0, WithKernelCacheDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	m2, err := c2.Compile(ctx, "cudaspans_test", testKernels, CompileOptions{Defines: testDefines})
	hitTime := time.Since(t0)
	if err != nil || !m2.FromCache() || CompileCount() != before+1 {
		t.Fatalf("second compile: %v fromCache=%v", err, m2 != nil && m2.FromCache())
	}
	_ = c2.Close()
	t.Logf("NVRTC compile %v, cache hit %v", compileTime, hitTime)

	cmd := exec.Command(os.Args[0], "-test.run=^TestKernelCacheChildGPU$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "CUDASPANS_CACHE_CHILD=1", "CUDASPANS_TEST_CACHE="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "child: compiles=0 fromCache=true") {
		t.Fatalf("child compiled again:\n%s", out)
	}
}

func TestKernelCacheChildGPU(t *testing.T) {
	if os.Getenv("CUDASPANS_CACHE_CHILD") == "" {
		t.Skip("only as the child of TestKernelCacheServesASecondStartGPU")
	}
	g := openGPU(t)
	m, err := g.c.Compile(context.Background(), "cudaspans_test", testKernels, CompileOptions{Defines: testDefines})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("child: compiles=%d fromCache=%v\n", CompileCount(), m.FromCache())
}

func TestCPhaseOnAStreamGPU(t *testing.T) {
	// ctest (internal/ctest) runs the C side; here the device phase path
	// through the Go half, with a real stream and a kernel inside.
	g := openGPU(t)
	ctx := context.Background()
	_, spin, sink := g.spinKernel(t)
	s, _ := g.c.NewStream()
	pctx, parent := g.tp.Tracer("test").Start(ctx, semconv.SpanMSMG1H)
	h, release := CParent(pctx)
	ph := cBegin(h, "c.device_phase", s.Handle())
	if err := s.Launch(context.Background(), spin, D1(1), D1(32), 0, spinCycles(1), sink.Ptr()); err != nil {
		t.Fatal(err)
	}
	cEnd(ph)
	release()
	if err := s.Synchronize(pctx); err != nil {
		t.Fatal(err)
	}
	parent.End(trace.WithTimestamp(time.Now()))
	sp := g.ended("c.device_phase")
	if len(sp) != 1 {
		t.Fatalf("%d device phases", len(sp))
	}
	k := g.ended("spin")[0]
	if sp[0].StartTime().After(k.StartTime()) || sp[0].EndTime().Before(k.EndTime()) {
		t.Errorf("device phase [%v, %v] does not cover its kernel [%v, %v]", sp[0].StartTime(), sp[0].EndTime(), k.StartTime(), k.EndTime())
	}
	ms := mustAttr(t, sp[0], semconv.KeyCUDAGPUMS).AsFloat64()
	t.Logf("C device phase %.3f ms around a %.3f ms kernel", ms, mustAttr(t, k, semconv.KeyCUDAGPUMS).AsFloat64())
	if math.IsNaN(ms) || ms <= 0 {
		t.Errorf("cuda.gpu_ms = %v", ms)
	}
}
