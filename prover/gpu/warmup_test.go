package gpu

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
)

// slowWarm makes the fake backend's warm-up take d and count its calls;
// the first fails times warm-ups fail with errWarm.
func slowWarm(b *Backend, d time.Duration, fails int) *atomic.Int32 {
	var calls atomic.Int32
	b.ready.Store(false)
	b.warm = func(ctx context.Context) error {
		n := calls.Add(1)
		time.Sleep(d)
		if int(n) <= fails {
			return errWarm
		}
		return nil
	}
	return &calls
}

var errWarm = errors.New("fake compile error")

func TestWarmupCompilesOnceForConcurrentCallersAndRetriesAfterAnError(t *testing.T) {
	b, _, rec := fakeKernelBackend(t, nil)
	calls := slowWarm(b, 20*time.Millisecond, 1)
	ctx := context.Background()
	if err := b.Warmup(ctx); !errors.Is(err, errWarm) {
		t.Fatalf("first Warmup = %v, want the compile error", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = b.Warmup(ctx) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Warmup after the failed one: %v", err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d compiles for 1 failed and 8 concurrent Warmups, want 2", n)
	}
	if err := b.Warmup(ctx); err != nil || calls.Load() != 2 {
		t.Errorf("Warmup when ready: %v, %d compiles", err, calls.Load())
	}
	// Every caller that was not ready has a gpu.warmup span: two compiled
	// (one failed), the others waited for the second and say so.
	var compiled, failed, shared int
	for _, s := range rec.Ended() {
		if s.Name() != semconv.SpanGPUWarmup {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == semconv.KeyWarmupShared {
				if kv.Value.AsBool() {
					shared++
				} else {
					compiled++
				}
			}
		}
		if s.Status().Code.String() == "Error" {
			failed++
		}
	}
	if compiled != 2 || failed != 1 || shared > 7 {
		t.Errorf("gpu.warmup spans: %d compiled (%d failed), %d shared; want 2 (1), at most 7", compiled, failed, shared)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	b.ready.Store(false)
	if err := b.Warmup(cancelled); !errors.Is(err, context.Canceled) || calls.Load() != 2 {
		t.Errorf("Warmup with a done context = %v after %d compiles; want context.Canceled, no compile", err, calls.Load())
	}
}

// A proof warms the backend before it waits for the device: gpu.warmup
// ends before gpu.lock starts, and the device session (gpu.total) starts
// after the compile, so the compile is never counted as device time.
func TestBeginProofWarmsUpBeforeTheLockAndTheDeviceSession(t *testing.T) {
	b, _, rec := fakeKernelBackend(t, nil)
	slowWarm(b, 30*time.Millisecond, 0)
	ctx, root := b.tracer.Start(context.Background(), semconv.SpanGroth16Prove)
	pctx, end := b.BeginProof(ctx)
	if _, err := b.MSMG1(pctx, backend.Call{Span: semconv.SpanMSMG1A}, gputest.BaseSet("", 10), make([]fr.Element, 10)); err != nil {
		t.Fatal(err)
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
	root.End()
	byName := map[string][2]time.Time{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = [2]time.Time{s.StartTime(), s.EndTime()}
	}
	w, lock, total := byName[semconv.SpanGPUWarmup], byName[semconv.SpanGPULock], byName[semconv.SpanGPUTotal]
	if w[0].IsZero() || lock[0].IsZero() || total[0].IsZero() {
		t.Fatalf("spans gpu.warmup %v, gpu.lock %v, gpu.total %v: want all three", w, lock, total)
	}
	if lock[0].Before(w[1]) || total[0].Before(w[1]) {
		t.Errorf("gpu.warmup ends at %v, after gpu.lock (%v) or gpu.total (%v) started", w[1], lock[0], total[0])
	}
	if d := total[1].Sub(total[0]); d >= 30*time.Millisecond {
		t.Errorf("gpu.total %v covers the 30 ms compile", d)
	}
}

// A proof whose warm-up failed fails at its first device call with the
// warm-up's error, without compiling again for each call.
func TestAFailedWarmupFailsTheProofOnceWithItsError(t *testing.T) {
	b, _, _ := fakeKernelBackend(t, nil)
	calls := slowWarm(b, 0, 100)
	pctx, end := b.BeginProof(context.Background())
	defer end()
	d := fft.NewDomain(4)
	v := func() []fr.Element { return make([]fr.Element, 4) }
	if err := b.ComputeH(pctx, "", d, v(), v(), v()); !errors.Is(err, errWarm) {
		t.Errorf("ComputeH after a failed warm-up = %v, want the compile error", err)
	}
	if _, err := b.MSMG1(pctx, backend.Call{Span: semconv.SpanMSMG1A}, gputest.BaseSet("", 4), v()); !errors.Is(err, errWarm) {
		t.Errorf("MSMG1 after a failed warm-up = %v, want the compile error", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d compiles in one proof, want 1 (BeginProof's)", n)
	}
}

// A caller that stops waiting (its ctx ends) gets its ctx's error at once;
// the compile goes on and the next Warmup shares it instead of starting
// another; Close waits for it.
func TestWarmupCallerWhoseContextEndsStopsWaitingNotTheCompile(t *testing.T) {
	b, _, _ := fakeKernelBackend(t, nil)
	release := make(chan struct{})
	var calls atomic.Int32
	b.ready.Store(false)
	b.warm = func(context.Context) error {
		calls.Add(1)
		<-release
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { errc <- b.Warmup(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Warmup after its ctx ended = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Warmup kept waiting after its ctx ended")
	}
	go func() { errc <- b.Warmup(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if err := <-errc; err != nil || calls.Load() != 1 {
		t.Fatalf("second Warmup = %v after %d compiles, want nil after 1 (the first one's)", err, calls.Load())
	}
}
