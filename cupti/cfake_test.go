package cupti

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
)

// fakeLib is testdata/fakecupti.c built once per test process: CUPTI is
// one per process (cBackend.open), so a second build at another path
// could not be loaded by a second run (go test -count=2). TestMain
// removes its folder.
var fakeLib struct {
	once      sync.Once
	dir, path string
	err       error
}

// fakeCUPTILibrary returns the path of the fake libcupti, building it on first use.
func fakeCUPTILibrary() (string, error) {
	fakeLib.once.Do(func() {
		dir, err := os.MkdirTemp("", "cupti-fake-")
		if err != nil {
			fakeLib.err = err
			return
		}
		fakeLib.dir, fakeLib.path = dir, filepath.Join(dir, "libcupti-fake.so")
		if out, err := exec.Command("cc", "-shared", "-fPIC", "-o", fakeLib.path, "testdata/fakecupti.c", "-lpthread").CombinedOutput(); err != nil {
			fakeLib.err = fmt.Errorf("building the fake: %v\n%s", err, out)
		}
	})
	return fakeLib.path, fakeLib.err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeLib.dir != "" {
		os.RemoveAll(fakeLib.dir)
	}
	os.Exit(code)
}

// TestCallPutsForeignWorkUnderTheGoSpanThroughTheCSide runs the real C
// side (cz_core.c: loading, subscription, buffers, NVTX callbacks,
// external correlation pushed by Call) against testdata/fakecupti.c, a
// libcupti stand-in, so the path a GPU host takes is covered in CI.
func TestCallPutsForeignWorkUnderTheGoSpanThroughTheCSide(t *testing.T) {
	c, rec, tp := startCFake(t)
	defer c.Close(context.Background())
	if lib, _ := fakeCUPTILibrary(); c.Path() != lib {
		t.Fatalf("loaded %q, want %q", c.Path(), lib)
	}
	job := loadedSymbol("fake_job_cb")
	if job == nil {
		t.Fatal("the fake has no fake_job_cb")
	}
	ctx, span := tp.Tracer("t").Start(context.Background(), "job")
	Call(ctx, job, nil)
	c.Flush(ctx)
	span.End()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	byName := spantest.ByName(rec)
	phase, kernel := byName["fake.phase"], byName["fake_kernel"]
	if phase == nil || kernel == nil {
		t.Fatalf("range %v, kernel %v (stats %+v)", phase != nil, kernel != nil, c.Stats())
	}
	if phase.Parent().SpanID() != span.SpanContext().SpanID() {
		t.Error("the NVTX range is not under the Go span of Call")
	}
	if kernel.Parent().SpanID() != phase.SpanContext().SpanID() {
		t.Error("the kernel is not under the range it was launched in")
	}
	if d := kernel.EndTime().Sub(kernel.StartTime()); d.Microseconds() != 1000 {
		t.Errorf("kernel lasted %v, want 1ms", d)
	}
}

// startCFake starts a capture on the real C side over the fake libcupti
// (skipped where a CUDA driver is, or no C compiler).
func startCFake(t testing.TB, opts ...Option) (*Capture, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	if _, err := cudaspans.LoadDriver(); err == nil {
		// CUPTI is one per process: on a GPU host the *GPU tests need the
		// real one, not this fake.
		t.Skip("a CUDA driver is here: the GPU tests use the real CUPTI")
	}
	lib, err := fakeCUPTILibrary()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NVTX_INJECTION64_PATH", "")
	rec, tp := spantest.New()
	c, err := Start(context.Background(), append([]Option{WithLibraryPaths(lib), WithTracerProvider(tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec, tp
}

// csJob is fakecupti.c's struct fake_cs_job: no Go pointers, so C may
// read it during the call.
type csJob struct {
	push, pop     uintptr
	id, ns, count uint64
}

// cuda.cupti_ms for cudaspans' launches comes from the C side's matching
// (cz_cudaspans_take), taken once, and their records still make no
// second span (WithForcedFlush: the hook's flush delivers them).
func TestCudaspansDurationsMatchedOnTheCSide(t *testing.T) {
	c, rec, tp := startCFake(t, WithForcedFlush())
	defer c.Close(context.Background())
	if !c.csInC {
		t.Fatal("the C backend does not match cudaspans' launches")
	}
	push, pop := cBackend{}.cudaspansHooks()
	job := &csJob{push: uintptr(push), pop: uintptr(pop), id: 0xc0ffee00, ns: 3_000_000, count: 3}
	ctx, span := tp.Tracer("t").Start(context.Background(), "job")
	Call(ctx, loadedSymbol("fake_cudaspans_job"), unsafe.Pointer(job))
	got := c.cudaspansDurations([]uint64{0xc0ffee00, 0xc0ffee02, 0xdead})
	if len(got) != 2 || got[0xc0ffee00] != 3 || got[0xc0ffee02] != 3 {
		t.Fatalf("durations %v, want 0xc0ffee00 and 0xc0ffee02: 3 ms", got)
	}
	if again := c.cudaspansDurations([]uint64{0xc0ffee00, 0xc0ffee01}); len(again) != 1 || again[0xc0ffee01] != 3 {
		t.Fatalf("second take %v, want only 0xc0ffee01 (each is forgotten once taken)", again)
	}
	// The kernel's record before its correlation record (another
	// thread's buffer delivered first): matched all the same.
	t.Setenv("FAKE_CUPTI_KERNEL_FIRST", "1")
	job2 := &csJob{push: uintptr(push), pop: uintptr(pop), id: 0xbeef00, ns: 5_000_000, count: 2}
	Call(ctx, loadedSymbol("fake_cudaspans_job"), unsafe.Pointer(job2))
	if got := c.cudaspansDurations([]uint64{0xbeef00, 0xbeef01}); len(got) != 2 || got[0xbeef00] != 5 || got[0xbeef01] != 5 {
		t.Fatalf("durations %v with the kernel records first, want 0xbeef00 and 0xbeef01: 5 ms", got)
	}
	span.End()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := spantest.ByName(rec)["cs_kernel"]; ok {
		t.Error("a cudaspans launch got a span from CUPTI too")
	}
	if st := c.Stats(); st.Deduplicated != 5 {
		t.Errorf("stats %+v, want 5 deduplicated", st)
	}
}

// BenchmarkCudaspansDurationsC is what cuda.cupti_ms costs a Synchronize
// of 1000 kernels with WithForcedFlush: the forced flush and the C side's
// table (compare BenchmarkCudaspansDrain, the decoding it replaced).
// ns/op per 1000.
func BenchmarkCudaspansDurationsC(b *testing.B) {
	c, _, _ := startCFake(b, WithForcedFlush())
	defer c.Close(context.Background())
	push, pop := cBackend{}.cudaspansHooks()
	const n = 1000
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = 0x5000_0000 + uint64(i)
	}
	job := &csJob{push: uintptr(push), pop: uintptr(pop), id: ids[0], ns: 4000, count: n}
	fn := loadedSymbol("fake_cudaspans_job")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		Call(context.Background(), fn, unsafe.Pointer(job))
		b.StartTimer()
		if got := c.cudaspansDurations(ids); len(got) != n {
			b.Fatalf("%d durations, want %d", len(got), n)
		}
		b.StopTimer()
		c.Flush(context.Background()) // the capture's own drain, outside the timing
		b.StartTimer()
	}
}

func TestAnotherCUPTICannotBeLoadedOnceOneIs(t *testing.T) {
	if openPath == "" {
		t.Skip("no CUPTI loaded in this test process")
	}
	_, err := Start(context.Background(), WithLibraryPaths("/elsewhere/libcupti.so.13"))
	if err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Fatalf("err %v", err)
	}
}

// cfakeFlushes is how many flushes the fake libcupti was asked for, and
// of them forced.
func cfakeFlushes() (all, forced int32) {
	var n [2]int32
	Call(context.Background(), loadedSymbol("fake_flushes_cb"), unsafe.Pointer(&n[0]))
	return n[0], n[1]
}

func cfakeHold(on bool) {
	v := int32(0)
	if on {
		v = 1
	}
	Call(context.Background(), loadedSymbol("fake_hold_cb"), unsafe.Pointer(&v))
}

// By default (no forced flush) the C side's hook flushes nothing on the
// launching thread: durations not delivered yet are not there, and come
// with a later drain, each for its own launch id only.
func TestByDefaultTheCSideHookDoesNotFlush(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	unsetEnv(t, NoForcedFlushEnv)
	c, _, tp := startCFake(t)
	defer c.Close(context.Background())
	defer cfakeHold(false)
	if !c.deferred || !c.csInC {
		t.Fatalf("deferred %v, matched in C %v; want both", c.deferred, c.csInC)
	}
	push, pop := cBackend{}.cudaspansHooks()
	ctx, span := tp.Tracer("t").Start(context.Background(), "job")
	defer span.End()
	cfakeHold(true)
	job := &csJob{push: uintptr(push), pop: uintptr(pop), id: 0x7100, ns: 2_000_000, count: 2}
	Call(ctx, loadedSymbol("fake_cudaspans_job"), unsafe.Pointer(job))
	all, forced := cfakeFlushes()
	if got := c.cudaspansDurations([]uint64{0x7100, 0x7101}); len(got) != 0 {
		t.Fatalf("durations %v before any record was delivered", got)
	}
	if a, f := cfakeFlushes(); a != all || f != forced {
		t.Fatalf("the hook flushed CUPTI (%d flushes, %d forced; before %d, %d)", a, f, all, forced)
	}
	cfakeHold(false)
	c.Flush(ctx) // a drain
	got := c.cudaspansDurations([]uint64{0x7100, 0x7101, 0x7102})
	if len(got) != 2 || got[0x7100] != 2 || got[0x7101] != 2 {
		t.Fatalf("durations after the drain %v, want 0x7100 and 0x7101: 2 ms", got)
	}
}
