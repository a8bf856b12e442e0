package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// frsOf views the mapped memory of m as field elements.
func frsOf(m *buffer.Mmap) []fr.Element {
	b := m.Bytes()
	return unsafe.Slice((*fr.Element)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/frBytes)
}

func newTestMmap(t *testing.T, size int) *buffer.Mmap {
	t.Helper()
	m, err := buffer.NewMmap(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Free() })
	return m
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// A buffer is registered whole once, however many vectors in it are
// copied, and unregistered exactly once, when it is unmapped, and only
// after the copy that holds it ends.
func TestRegisteredBufferIsRegisteredOnceAndDroppedAtUnmapAfterItsCopies(t *testing.T) {
	b, drv, _ := fakeKernelBackend(t, nil)
	defer b.Close()
	ctx := context.Background()
	m := newTestMmap(t, 1<<16)
	v := frsOf(m)
	for _, part := range [][]fr.Element{v, v[:100], v[len(v)/2:]} {
		release, ok := b.registered(ctx, part)
		if !ok {
			t.Fatalf("a vector of %d elements in an Mmap was not registered", len(part))
		}
		release()
	}
	if ev := drv.RegisterEvents(); len(ev) != 1 || !strings.HasSuffix(ev[0], fmt.Sprint(1<<16)) {
		t.Fatalf("registrations %v, want one of the whole buffer (%d bytes)", ev, 1<<16)
	}
	if bytes, n := b.registeredBytes(); bytes != 1<<16 || n != 1 {
		t.Errorf("registeredBytes = %d bytes in %d buffers, want %d in 1", bytes, n, 1<<16)
	}

	// A copy holds the registration: the unmap waits for it.
	release, ok := b.registered(ctx, v[:10])
	if !ok {
		t.Fatal("second hold refused")
	}
	freed := make(chan error)
	go func() { freed <- m.Free() }()
	select {
	case err := <-freed:
		t.Fatalf("Free returned (%v) while a copy held the registration", err)
	case <-time.After(50 * time.Millisecond):
	}
	if n := countPrefix(drv.RegisterEvents(), "unregister"); n != 0 {
		t.Fatalf("unregistered while a copy held it (%v)", drv.RegisterEvents())
	}
	release()
	if err := <-freed; err != nil {
		t.Fatal(err)
	}
	if ev := drv.RegisterEvents(); countPrefix(ev, "unregister") != 1 || len(drv.Registered()) != 0 {
		t.Errorf("after the unmap: events %v, still registered %v; want one unregistration", ev, drv.Registered())
	}
	if _, n := b.registeredBytes(); n != 0 {
		t.Errorf("%d buffers still counted as registered after their unmap", n)
	}
	if _, ok := b.registered(ctx, v[:10]); ok {
		t.Error("a vector of an unmapped buffer was registered")
	}
}

// A buffer the driver refuses is staged for its life without asking the
// driver again; memory outside any Mmap is never registered.
func TestRegisteredFallsBackOnRefusalAndOutsideAnMmap(t *testing.T) {
	b, drv, rec := fakeKernelBackend(t, nil)
	defer b.Close()
	ctx := context.Background()
	drv.RefuseRegister = errors.New("CUDA_ERROR_NOT_PERMITTED")
	m := newTestMmap(t, 1<<16)
	for range 3 {
		if _, ok := b.registered(ctx, frsOf(m)); ok {
			t.Fatal("a refused buffer was used as registered")
		}
	}
	if n := strings.Count(spanNames(rec), semconv.SpanCUDAHostRegister); n != 1 {
		t.Errorf("%d cuda.host_register spans for a refused buffer asked 3 times, want 1", n)
	}
	if _, ok := b.registered(ctx, make([]fr.Element, 1024)); ok {
		t.Error("a Go heap slice was used as registered")
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if ev := drv.RegisterEvents(); len(ev) != 0 {
		t.Errorf("driver events %v, want none", ev)
	}
}

// Close unregisters what is still registered while the device context
// lives; the buffer's later unmap does not unregister it again.
func TestCloseUnregistersBeforeTheBuffersAreUnmapped(t *testing.T) {
	b, drv, _ := fakeKernelBackend(t, nil)
	m := newTestMmap(t, 1<<16)
	release, ok := b.registered(context.Background(), frsOf(m))
	if !ok {
		t.Fatal("not registered")
	}
	release()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if ev := drv.RegisterEvents(); countPrefix(ev, "register") != 1 || countPrefix(ev, "unregister") != 1 {
		t.Errorf("events %v, want one registration and one unregistration", ev)
	}
}

// spansUnder returns the spans named name in the trace of the span job.
func spansNamed(rec *tracetest.SpanRecorder, trace [16]byte, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == trace && s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Whole proofs with pooled buffers (release mode pool) in the registered
// mode: the first proof registers its buffers, later proofs register
// none and copy a, b, c, H and the MSM scalars by DMA from them (their
// cuda.memcpy spans say cuzk.host_copy registered); closing the pool
// unregisters each buffer exactly once.
func TestPooledProofsRegisterTheirBuffersOnce(t *testing.T) {
	b, drv, rec := fakeProvingBackend(t, nil)
	b.hostCopy = backend.HostCopyRegistered
	b.stagedFrom = 1 // the test circuit's vectors are small
	rel, err := buffer.NewReleaser(buffer.ReleasePool, buffer.WithTracerProvider(b.tp))
	if err != nil {
		t.Fatal(err)
	}
	f := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	prove := func() [16]byte {
		ctx, job := b.tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
		_, err := groth16.Prove(ctx, f.CCS, f.PK, f.Witness, groth16.WithBackend(b), groth16.WithKeyID("k"),
			groth16.WithReleaser(rel), prover.WithTracerProvider(b.tp))
		job.End()
		if err != nil {
			t.Fatalf("prove: %v", err)
		}
		return job.SpanContext().TraceID()
	}
	first := prove()
	regs := countPrefix(drv.RegisterEvents(), "register")
	if regs == 0 || len(spansNamed(rec, first, semconv.SpanCUDAHostRegister)) != regs {
		t.Fatalf("first proof: %d registrations, %d cuda.host_register spans; want > 0 and equal",
			regs, len(spansNamed(rec, first, semconv.SpanCUDAHostRegister)))
	}
	for i := range 2 {
		warm := prove()
		if n := len(spansNamed(rec, warm, semconv.SpanCUDAHostRegister)); n != 0 {
			t.Errorf("warm proof %d: %d cuda.host_register spans, want none", i+1, n)
		}
		if n := len(spansNamed(rec, warm, semconv.SpanHostStage)); n != 0 {
			t.Errorf("warm proof %d: %d cuda.host_stage spans, want none (all copies from registered buffers)", i+1, n)
		}
		names := map[string]bool{}
		for _, name := range []string{semconv.SpanMemcpyHtoD, semconv.SpanMemcpyDtoH} {
			for _, s := range spansNamed(rec, warm, name) {
				var mode, buf string
				for _, a := range s.Attributes() {
					switch a.Key {
					case semconv.KeyHostCopyMode:
						mode = a.Value.AsString()
					case semconv.KeyBufferName:
						buf = a.Value.AsString()
					}
				}
				if mode == string(backend.HostCopyRegistered) {
					names[buf] = true
				}
			}
		}
		for _, want := range []string{"a", "b", "c", "h", "msm.scalars"} {
			if !names[want] {
				t.Errorf("warm proof %d: no cuda.memcpy span of %s with cuzk.host_copy registered (got %v)", i+1, want, names)
			}
		}
	}
	if n := countPrefix(drv.RegisterEvents(), "register"); n != regs {
		t.Errorf("%d registrations after three proofs, %d after the first: warm proofs registered", n, regs)
	}
	if err := rel.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := drv.RegisterEvents()
	if un := countPrefix(ev, "unregister"); un != regs || len(drv.Registered()) != 0 {
		t.Errorf("after the pool's close: %d unregistrations of %d registrations, %d still registered", un, regs, len(drv.Registered()))
	}
}

// Two backends (two devices) share one registration of a buffer, which
// is portable: the second copies from it without registering; closing the
// first unregisters it once the second's copy is done, and the second
// then registers it on its own device.
func TestBackendsShareARegistrationAcrossDevices(t *testing.T) {
	b1, drv1, _ := fakeKernelBackend(t, nil)
	b2, drv2, _ := fakeKernelBackend(t, nil)
	defer b2.Close()
	ctx := context.Background()
	m := newTestMmap(t, 1<<16)
	v := frsOf(m)
	release1, ok := b1.registered(ctx, v)
	if !ok {
		t.Fatal("first backend: not registered")
	}
	release1()
	release2, ok := b2.registered(ctx, v[:64])
	if !ok {
		t.Fatal("second backend: the registered buffer was not used")
	}
	if ev := drv2.RegisterEvents(); len(ev) != 0 {
		t.Fatalf("second device registered %v, want nothing (the registration is portable)", ev)
	}
	closed := make(chan error)
	go func() { closed <- b1.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the other backend's copy held the registration", err)
	case <-time.After(50 * time.Millisecond):
	}
	release2()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if ev := drv1.RegisterEvents(); countPrefix(ev, "register") != 1 || countPrefix(ev, "unregister") != 1 {
		t.Errorf("first device: events %v, want one registration and one unregistration", ev)
	}
	release, ok := b2.registered(ctx, v)
	if !ok {
		t.Fatal("second backend after the first closed: not registered")
	}
	release()
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if ev := drv2.RegisterEvents(); countPrefix(ev, "register") != 1 || countPrefix(ev, "unregister") != 1 {
		t.Errorf("second device: events %v, want its own registration, dropped at the unmap", ev)
	}
}
