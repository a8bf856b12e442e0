package cudaspans

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// A missing or bogus driver library is ErrNoDevice, the error naming the
// library once: dlerror's text names it already, and the error said
// "dlopen libcuda.so.1: libcuda.so.1: cannot open shared object file".
func TestMissingDriverIsErrNoDevice(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, err := OpenDriver(missing)
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("OpenDriver of a missing library = %v, want ErrNoDevice", err)
	}
	if !strings.Contains(err.Error(), "dlopen "+missing+": ") || strings.Count(err.Error(), missing) != 1 {
		t.Errorf("error %q: want dlopen, the library named once, and why", err)
	}
	// By name, as LoadDriver opens it (the loader's search finds none here).
	if _, err := OpenDriver("libcuda-none.so.1"); err == nil || strings.Count(err.Error(), "libcuda-none.so.1") != 1 {
		t.Errorf("OpenDriver of a library the loader cannot find: %v, want the name once", err)
	}
	// A file that is not a shared library is refused the same way.
	bogus := filepath.Join(t.TempDir(), "libcuda.so.1")
	if err := os.WriteFile(bogus, []byte("not an ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDriver(bogus); !errors.Is(err, ErrNoDevice) || strings.Count(err.Error(), bogus) != 1 {
		t.Fatalf("OpenDriver of a bogus library = %v, want ErrNoDevice naming it once", err)
	}
}

func TestDriverWithoutDevicesIsErrNoDevice(t *testing.T) {
	d := newFakeDriver(newFakeClock())
	d.devices = 0
	if _, err := Open(0, WithDriver(d)); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open = %v, want ErrNoDevice", err)
	}
	if _, err := Devices(WithDriver(d)); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Devices = %v, want ErrNoDevice", err)
	}
	d.devices = 1
	if _, err := Open(1, WithDriver(d)); err == nil || errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "1 devices") {
		t.Fatalf("Open(1) with one device = %v, want an out-of-range error", err)
	}
	// cuInit's CUDA_ERROR_NO_DEVICE is ErrNoDevice too.
	d.fail["DeviceCount"] = &Error{Call: "cuDeviceGetCount", Code: cudaErrorNoDevice, Name: "CUDA_ERROR_NO_DEVICE", Message: "no CUDA-capable device is detected"}
	if _, err := Open(0, WithDriver(d)); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open = %v, want ErrNoDevice", err)
	}
}

// On hosts without a GPU (CI), the real loader must say so with ErrNoDevice;
// with a GPU it lists at least one device.
func TestLoadDriverReportsNoDeviceOrDevices(t *testing.T) {
	devs, err := Devices()
	if err != nil {
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Devices = %v, want a list or ErrNoDevice", err)
		}
		t.Logf("no device: %v", err)
		return
	}
	if len(devs) == 0 || devs[0].Name == "" || devs[0].TotalMemory == 0 {
		t.Fatalf("Devices = %+v", devs)
	}
}

func TestErrorNamesCallResultAndMessage(t *testing.T) {
	e := &Error{Call: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Message: "out of memory"}
	if got, want := e.Error(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	f := newFixture(t)
	f.drv.fail["MemAlloc"] = e
	_, err := f.c.Alloc(context.Background(), 1<<40)
	if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "cuMemAlloc") {
		t.Fatalf("Alloc = %v, want ErrOutOfMemory naming cuMemAlloc", err)
	}
	sp := f.ended(semconv.SpanCUDAMalloc)
	if len(sp) != 1 || sp[0].Status().Code.String() != "Error" {
		t.Fatalf("failed allocation span: %+v", sp)
	}
	if v := mustAttr(t, sp[0], semconv.KeyErrorType).AsString(); v != semconv.ErrorTypeOutOfMemory {
		t.Errorf("error.type = %q", v)
	}
	if errors.Is(err, ErrNoDevice) {
		t.Error("out of memory must not read as no device")
	}
	if _, err := f.c.Alloc(context.Background(), 0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
}

func TestAllocationsAndFreesAreSpans(t *testing.T) {
	f := newFixture(t)
	ctx, parent := f.parent(context.Background(), semconv.SpanGroth16Prove)
	dev, err := f.c.Alloc(ctx, 4096)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := f.c.AllocPinned(ctx, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if len(pin.Bytes()) != 8192 || pin.Kind() != "pinned" || dev.Kind() != "device" {
		t.Fatalf("pinned %d bytes kind %s, device kind %s", len(pin.Bytes()), pin.Kind(), dev.Kind())
	}
	host, err := buffer.NewMmap(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Free()
	reg, err := f.c.Register(ctx, host.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.Free(ctx, dev); err != nil {
		t.Fatal(err)
	}
	if err := dev.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if err := f.c.Free(ctx, reg); err != nil {
		t.Fatal(err)
	}
	// Pinned memory through a buffer.Releaser: a buffer.release span.
	rel, err := buffer.NewReleaser(buffer.ReleaseSync, buffer.WithTracerProvider(f.tp))
	if err != nil {
		t.Fatal(err)
	}
	if err := rel.Release(ctx, "wires", pin); err != nil {
		t.Fatal(err)
	}
	if pin.Bytes() != nil {
		t.Error("pinned buffer still readable after release")
	}
	parent.End()
	pid := f.ended(semconv.SpanGroth16Prove)[0].SpanContext().SpanID()
	mallocs := f.ended(semconv.SpanCUDAMalloc)
	if len(mallocs) != 2 {
		t.Fatalf("%d cuda.malloc spans, want 2", len(mallocs))
	}
	kinds := map[string]int64{}
	for _, m := range mallocs {
		if m.Parent().SpanID() != pid {
			t.Error("cuda.malloc not under its parent")
		}
		kinds[mustAttr(t, m, semconv.KeyBufferKind).AsString()] = mustAttr(t, m, semconv.KeyCUDABytes).AsInt64()
		// The fake driver takes 50 µs (device) and 100 µs (pinned).
		if m.EndTime().Sub(m.StartTime()) < 50*time.Microsecond {
			t.Errorf("cuda.malloc lasts %v, shorter than the driver call", m.EndTime().Sub(m.StartTime()))
		}
	}
	if kinds["device"] != 4096 || kinds["pinned"] != 8192 {
		t.Errorf("malloc kinds and sizes: %v", kinds)
	}
	if n := len(f.ended(semconv.SpanCUDAFree)); n != 1 {
		t.Errorf("%d cuda.free spans, want 1", n)
	}
	if n := len(f.ended(semconv.SpanCUDAHostRegister)) + len(f.ended(semconv.SpanCUDAHostUnregister)); n != 2 {
		t.Errorf("%d register/unregister spans, want 2", n)
	}
	r := f.ended(semconv.SpanBufferRelease)
	if len(r) != 1 || mustAttr(t, r[0], semconv.KeyBufferKind).AsString() != "pinned" {
		t.Fatalf("buffer.release spans: %v", r)
	}
	if f.drv.calls["HostFree"] != 1 || f.drv.calls["HostUnregister"] != 1 {
		t.Errorf("driver frees: %v", f.drv.calls)
	}
}

func TestCompileUsesTheDiskCacheOnASecondStart(t *testing.T) {
	dir := t.TempDir()
	cc := &fakeCompiler{}
	src := `extern "C" __global__ void scale(unsigned long long *x, unsigned n) {}`
	open := func() *Context {
		t.Helper()
		c, err := Open(0, WithDriver(newFakeDriver(newFakeClock())), WithKernelCacheDir(dir), withCompiler(cc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := context.Background()
	opts := CompileOptions{Defines: map[string]string{"LIMBS": "6", "DEBUG": ""}, Headers: map[string]string{"field.h": "// field"}}
	before := CompileCount()
	m, err := open().Compile(ctx, "scale", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.FromCache() || cc.calls != 1 || CompileCount() != before+1 {
		t.Fatalf("first compile: fromCache=%v compiler calls=%d", m.FromCache(), cc.calls)
	}
	if strings.Join(cc.last, " ") != "-arch=sm_90 -DDEBUG -DLIMBS=6" {
		t.Errorf("NVRTC options %q", cc.last)
	}
	// A new Context: nothing in memory, the disk cache kept.
	m2, err := open().Compile(ctx, "scale", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !m2.FromCache() || cc.calls != 1 || CompileCount() != before+1 {
		t.Fatalf("second start compiled again: fromCache=%v calls=%d", m2.FromCache(), cc.calls)
	}
	if _, err := m2.Function("scale"); err != nil {
		t.Fatal(err)
	}
	// Any change of options or headers is a different key.
	opts.Headers = map[string]string{"field.h": "// field v2"}
	if m3, err := open().Compile(ctx, "scale", src, opts); err != nil || m3.FromCache() || cc.calls != 2 {
		t.Fatalf("changed header hit the cache: %v calls=%d", err, cc.calls)
	}
	// A damaged entry is recompiled, not loaded.
	entries, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
	if len(entries) != 2 {
		t.Fatalf("%d cache entries, want 2", len(entries))
	}
	for _, e := range entries {
		if err := os.WriteFile(e, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if m4, err := open().Compile(ctx, "scale", src, opts); err != nil || m4.FromCache() || cc.calls != 3 {
		t.Fatalf("damaged entry: %v calls=%d", err, cc.calls)
	}
	data, _ := os.ReadFile(entries[0])
	data2, _ := os.ReadFile(entries[1])
	if !bytes.HasPrefix(data, []byte("\x7fELF")) && !bytes.HasPrefix(data2, []byte("\x7fELF")) {
		t.Error("damaged entry not replaced")
	}
}

func TestCompileErrorsCarryTheLog(t *testing.T) {
	f := newFixture(t)
	_, err := f.c.Compile(context.Background(), "broken", "#error no field\n", CompileOptions{})
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Compile = %v, want *CompileError", err)
	}
	if ce.Module != "broken" || !strings.Contains(err.Error(), "#error directive") || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION") {
		t.Errorf("error %q lacks module, result or log", err)
	}
	sp := f.ended(semconv.SpanCUDACompile)
	if len(sp) != 1 || sp[0].Status().Code.String() != "Error" {
		t.Fatalf("compile span: %v", sp)
	}
}

func TestCompileWithoutNVRTCIsErrNoCompiler(t *testing.T) {
	c, err := Open(0, WithDriver(newFakeDriver(newFakeClock())), WithKernelCacheDir("-"),
		WithNVRTCPaths(filepath.Join(t.TempDir(), "libnvrtc.so.13")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Compile(context.Background(), "k", "extern \"C\" __global__ void k() {}", CompileOptions{}); !errors.Is(err, ErrNoCompiler) {
		t.Fatalf("Compile = %v, want ErrNoCompiler", err)
	}
}

func TestLoadModuleReadsCubinAndPTXFiles(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	cubin := filepath.Join(dir, "msm.cubin")
	if err := os.WriteFile(cubin, []byte("\x7fELF msm_accumulate"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := f.c.LoadModule(context.Background(), cubin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("msm_accumulate"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("missing"); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND") {
		t.Errorf("missing kernel: %v", err)
	}
	if _, err := f.c.LoadModule(context.Background(), filepath.Join(dir, "none.ptx")); err == nil {
		t.Error("missing file loaded")
	}
	if !isPTX([]byte(".version 8.0\n.target sm_90\n")) || isPTX([]byte("\x7fELF\x02")) {
		t.Error("isPTX misclassifies")
	}
}

func TestStreamCloseEmitsPendingSpansAndRefusesFurtherWork(t *testing.T) {
	f := newFixture(t)
	s, k := f.pendingLaunch(t)
	ctx := context.Background()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(f.ended("k")) != 1 {
		t.Error("Close did not emit the pending launch")
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Launch(ctx, k, D1(1), D1(1), 0); err == nil {
		t.Error("launch on a closed stream succeeded")
	}
	if err := s.Memset(ctx, 0, 0, 1); err == nil {
		t.Error("memset on a closed stream succeeded")
	}
	if err := s.Synchronize(ctx); err == nil {
		t.Error("synchronize of a closed stream succeeded")
	}
	if err := f.c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.drv.events); n != 0 {
		t.Errorf("%d events left after Close", n)
	}
	if _, err := f.c.NewStream(); err == nil {
		t.Error("NewStream on a closed context succeeded")
	}
}

func TestStreamOrdinalsAreNeverReusedAfterClose(t *testing.T) {
	f := newFixture(t)
	s0 := f.stream(t)
	s1 := f.stream(t)
	if err := s0.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := f.stream(t)
	if s2.ID() == s1.ID() || s2.ID() == s0.ID() {
		t.Errorf("stream ids %d, %d, then %d after closing the first: cuda.stream must name one stream", s0.ID(), s1.ID(), s2.ID())
	}
}

// The NVRTC compile is a span of its own under cuda.compile (so its time is
// not untraced beside the cuda.module.load child), with the module, the
// options and the cache key; a cache hit has none.
func TestCompileMissHasAnNVRTCSpanWithOptionsAndKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	src := `extern "C" __global__ void k() {}`
	opts := CompileOptions{Defines: map[string]string{"W": "4"}}
	if _, err := f.c.Compile(ctx, "knvrtc", src, opts); err != nil {
		t.Fatal(err)
	}
	comp, nv := f.ended(semconv.SpanCUDACompile), f.ended(semconv.SpanCUDANVRTC)
	if len(comp) != 1 || len(nv) != 1 {
		t.Fatalf("%d cuda.compile, %d cuda.nvrtc.compile spans, want 1 and 1", len(comp), len(nv))
	}
	if nv[0].Parent().SpanID() != comp[0].SpanContext().SpanID() {
		t.Error("cuda.nvrtc.compile is not a child of cuda.compile")
	}
	if got := mustAttr(t, nv[0], semconv.KeyCUDAModuleName).AsString(); got != "knvrtc" {
		t.Errorf("module %q", got)
	}
	if got := strings.Join(mustAttr(t, nv[0], semconv.KeyCUDANVRTCOpts).AsStringSlice(), " "); got != "-arch=sm_90 -DW=4" {
		t.Errorf("options %q", got)
	}
	_, options := f.c.compileOptions(opts)
	if got, want := mustAttr(t, nv[0], semconv.KeyCUDACacheKey).AsString(), cacheKey(src, nil, options, f.c.dev.DriverVersion); got != want || len(got) != 64 {
		t.Errorf("cache key %q, want %q", got, want)
	}
	// The second compile hits the cache: no NVRTC span.
	if _, err := f.c.Compile(ctx, "knvrtc", src, opts); err != nil {
		t.Fatal(err)
	}
	if n := len(f.ended(semconv.SpanCUDANVRTC)); n != 1 {
		t.Errorf("%d cuda.nvrtc.compile spans after a cache hit, want still 1", n)
	}
	// A failed compile marks the NVRTC span as the failure.
	if _, err := f.c.Compile(ctx, "broken", "#error no\n", CompileOptions{}); err == nil {
		t.Fatal("compile of #error succeeded")
	}
	nv = f.ended(semconv.SpanCUDANVRTC)
	if len(nv) != 2 || nv[1].Status().Code.String() != "Error" {
		t.Fatalf("failed NVRTC span: %v", nv)
	}
}
