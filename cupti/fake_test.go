package cupti

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
	"unsafe"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// fakeCUPTI stands in for libcupti behind the backend interface: the test
// queues frames as cz_core.c would, flush hands them over.
type fakeCUPTI struct {
	mu        sync.Mutex
	version   uint32
	openErr   error
	startCode int
	queued    []byte // frames waiting for a flush
	flushed   []byte // frames take returns
	started   bool
	stopped   bool
	forced    int    // forced flushes
	gpuNow    uint64 // CUPTI clock for calibrations
	wallNow   uint64 // wall clock (ns) for calibrations
}

func newFake() *fakeCUPTI {
	return &fakeCUPTI{version: 18, gpuNow: 1_000_000_000, wallNow: 1_700_000_000_000_000_000}
}

func (f *fakeCUPTI) open(paths []string) (string, uint32, error) {
	if f.openErr != nil {
		return "", 0, f.openErr
	}
	return "/fake/libcupti.so.13", f.version, nil
}

func (f *fakeCUPTI) start(flags uint32) (int, error) {
	if f.startCode != 0 {
		return f.startCode, errors.New("cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)")
	}
	f.started = true
	f.calibrate(4)
	return 0, nil
}

func (f *fakeCUPTI) flush(forced bool) {
	f.mu.Lock()
	if forced {
		f.forced++
	}
	f.flushed = append(f.flushed, f.queued...)
	f.queued = nil
	f.mu.Unlock()
}

// calibrate: the wall clock is the CUPTI clock plus a fixed offset, read
// with brackets of 400, 100 and 250 ns.
func (f *fakeCUPTI) calibrate(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	off := f.wallNow - f.gpuNow
	s := []calibSample{
		{f.gpuNow + off - 200, f.gpuNow, f.gpuNow + off + 200},
		{f.gpuNow + off - 50, f.gpuNow, f.gpuNow + off + 50},
		{f.gpuNow + off - 100, f.gpuNow, f.gpuNow + off + 150},
	}
	f.flushed = calibFrame(f.flushed, s)
}

func (f *fakeCUPTI) take() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.flushed
	f.flushed = nil
	return b
}

func (f *fakeCUPTI) stop() { f.stopped = true }

func (f *fakeCUPTI) cudaspansHooks() (unsafe.Pointer, unsafe.Pointer) { return nil, nil }

// The builder matches cudaspans' launches for the fake.
func (f *fakeCUPTI) cudaspansDurations([]uint64) (map[uint64]float64, bool) { return nil, false }

func (f *fakeCUPTI) queue(frames []byte) {
	f.mu.Lock()
	f.queued = append(f.queued, frames...)
	f.mu.Unlock()
}

// offset is the wall − CUPTI offset of the fake's calibrations.
func (f *fakeCUPTI) offset() int64 { return int64(f.wallNow - f.gpuNow) }

// startFake starts a Capture on a fake with an in-memory exporter.
func startFake(t testing.TB, f *fakeCUPTI, opts ...Option) (*Capture, *tracetest.InMemoryExporter, *sdktrace.TracerProvider, *[]string) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	var logs []string
	var lmu sync.Mutex
	opts = append([]Option{
		withBackend(f), WithTracerProvider(tp), WithFlushInterval(time.Hour),
		WithLogger(func(s string) { lmu.Lock(); logs = append(logs, s); lmu.Unlock() }),
		withClock(func() time.Time { return time.Unix(0, int64(f.wallNow)) }),
	}, opts...)
	c, err := Start(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, exp, tp, &logs
}

func noopTracer() trace.Tracer { return sdktrace.NewTracerProvider().Tracer("fuzz") }
