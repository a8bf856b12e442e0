package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/fakedevice"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// fakeProvingBackend is fakeKernelBackend with an NTT engine over a dummy
// module, so whole proofs run on the fake device (their values are wrong:
// its kernels do nothing; their allocations are what a device's are).
func fakeProvingBackend(t *testing.T, drv *fakedevice.Driver) (*Backend, *fakedevice.Driver, *tracetest.SpanRecorder) {
	t.Helper()
	b, drv, rec := fakeKernelBackend(t, drv)
	mod, err := b.c.LoadModuleData(context.Background(), "ntt", []byte("\x7fELF fake"))
	if err != nil {
		t.Fatal(err)
	}
	if b.ntt, err = ntt.FromModule(b.c, mod, ntt.WithTracerProvider(b.tp)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, drv, rec
}

// proveOnFake proves fixture f on b with key ID key and returns the
// cuda.malloc spans under its groth16.prove.
func proveOnFake(t *testing.T, b *Backend, rec *tracetest.SpanRecorder, f *circuitstest.Fixture, key string) []sdktrace.ReadOnlySpan {
	t.Helper()
	ctx, job := b.tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
	_, err := groth16.Prove(ctx, f.CCS, f.PK, f.Witness, groth16.WithBackend(b), groth16.WithKeyID(key), prover.WithTracerProvider(b.tp))
	job.End()
	if err != nil {
		t.Fatalf("prove on the fake device: %v", err)
	}
	ended := rec.Ended()
	byID := map[[8]byte]sdktrace.ReadOnlySpan{}
	var prove sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.SpanContext().TraceID() != job.SpanContext().TraceID() {
			continue
		}
		byID[s.SpanContext().SpanID()] = s
		if s.Name() == semconv.SpanGroth16Prove {
			prove = s
		}
	}
	if prove == nil {
		t.Fatal("no groth16.prove span")
	}
	var mallocs []sdktrace.ReadOnlySpan
	for _, s := range byID {
		if s.Name() != semconv.SpanCUDAMalloc {
			continue
		}
		for p := byID[s.Parent().SpanID()]; p != nil; p = byID[p.Parent().SpanID()] {
			if p == prove {
				mallocs = append(mallocs, s)
				break
			}
		}
	}
	return mallocs
}

// issue 10 item 7: the per-proof device buffers (compute_h's vectors, the
// MSM workspace) come from the key's pool, so a second proof of the same
// circuit makes no cuda.malloc inside groth16.prove; two circuits of two
// sizes keep buffers of their own; evicting a key frees its buffers, and
// its next proof allocates them again.
func TestAWarmProofAllocatesNoDeviceMemory(t *testing.T) {
	b, drv, rec := fakeProvingBackend(t, nil)
	small := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	large := circuitstest.Setup(t, "mulchain", 1<<10, 7)
	if first := proveOnFake(t, b, rec, small, "small"); len(first) == 0 {
		t.Fatal("the first proof made no cuda.malloc: the test cannot see allocations")
	}
	if warm := proveOnFake(t, b, rec, small, "small"); len(warm) != 0 {
		t.Errorf("second proof of the same circuit: %d cuda.malloc spans inside groth16.prove, want none", len(warm))
	}
	proveOnFake(t, b, rec, large, "large")
	if warm := proveOnFake(t, b, rec, large, "large"); len(warm) != 0 {
		t.Errorf("second proof of the larger circuit: %d cuda.malloc spans inside groth16.prove, want none", len(warm))
	}
	ids := strings.Join(b.Bases().ProofBufferIDs(), " ")
	for _, want := range []string{"small:compute_h.a", "small:compute_h.c", "small:msm.workspace", "large:compute_h.b", "large:msm.workspace"} {
		if !strings.Contains(ids, want) {
			t.Errorf("proof buffers %s: no %s", ids, want)
		}
	}
	if warm := proveOnFake(t, b, rec, small, "small"); len(warm) != 0 {
		t.Errorf("the small circuit after the large one: %d cuda.malloc spans, want none (each key keeps its own)", len(warm))
	}

	usedBefore, _, _ := drv.Stats()
	bytesBefore := b.Bases().Bytes()
	if err := b.EvictBases(context.Background(), "large"); err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(b.Bases().ProofBufferIDs(), " "); strings.Contains(ids, "large:") || !strings.Contains(ids, "small:") {
		t.Errorf("after evicting large: proof buffers %s, want small's only", ids)
	}
	used, _, _ := drv.Stats()
	if freed := int64(usedBefore - used); freed != bytesBefore-b.Bases().Bytes() || freed == 0 {
		t.Errorf("eviction freed %d device bytes, the resident count fell by %d: they must agree and be > 0",
			freed, bytesBefore-b.Bases().Bytes())
	}
	if again := proveOnFake(t, b, rec, large, "large"); len(again) == 0 {
		t.Error("the first proof after the eviction allocated nothing: the buffers were not freed")
	}
}

// A proof without a key ID keeps nothing: its buffers are allocated and
// released within the proof, as before the pool.
func TestAProofWithoutKeyIDKeepsNoProofBuffers(t *testing.T) {
	b, drv, rec := fakeProvingBackend(t, nil)
	f := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	proveOnFake(t, b, rec, f, "")
	if ids := b.Bases().ProofBufferIDs(); len(ids) != 0 {
		t.Errorf("proof buffers %v kept for a proof without a key ID", ids)
	}
	if again := proveOnFake(t, b, rec, f, ""); len(again) == 0 {
		t.Error("a proof without a key ID reused buffers")
	}
	if used, _, _ := drv.Stats(); int64(used) < b.Bases().Bytes() {
		t.Errorf("device bytes %d below the resident count %d", used, b.Bases().Bytes())
	}
}

// A device too small for a circuit's buffers fails its proof with a clear
// error (out of memory) and leaks nothing: the circuit that fits proves
// after it, and closing the backend gives every device byte back.
func TestAProofThatDoesNotFitFailsClearlyAndLeaksNothing(t *testing.T) {
	small := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	large := circuitstest.Setup(t, "mulchain", 1<<11, 7)
	// The device a proof of small leaves in use, measured: with half of
	// it again as room, large (four times the constraints) cannot fit.
	probe, probeDrv, probeRec := fakeProvingBackend(t, nil)
	proveOnFake(t, probe, probeRec, small, "small")
	need, _, _ := probeDrv.Stats()

	drv := fakedevice.New(need + need/2)
	b, _, rec := fakeProvingBackend(t, drv)
	proveOnFake(t, b, rec, small, "small")
	ctx := context.Background()
	_, err := groth16.Prove(ctx, large.CCS, large.PK, large.Witness, groth16.WithBackend(b), groth16.WithKeyID("large"), prover.WithTracerProvider(b.tp))
	if !errors.Is(err, cudaspans.ErrOutOfMemory) && !errors.Is(err, msm.ErrTooLarge) && !errors.Is(err, msm.ErrBaseBudget) {
		t.Fatalf("proof of a circuit too large for the device: %v, want an out-of-memory error", err)
	}
	if !strings.Contains(err.Error(), "memory") && !strings.Contains(err.Error(), "budget") {
		t.Errorf("error %q does not say what ran out", err)
	}
	if _, err := groth16.Prove(ctx, small.CCS, small.PK, small.Witness, groth16.WithBackend(b), groth16.WithKeyID("small"), prover.WithTracerProvider(b.tp)); err != nil {
		t.Fatalf("the circuit that fits, after the failure: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if used, _, _ := drv.Stats(); used != 0 {
		t.Errorf("%d device bytes still allocated after Close", used)
	}
}

// The staged host copy's pinned buffers are kept too: with the vectors
// staged (from 4 KiB here; 1 MiB on a device), a warm proof makes no cuda.malloc,
// pinned or device; the key's pinned scalar buffer goes with the key
// (EvictBases), the staging buffers stay for the device's next proof, and
// Close frees every pinned byte.
func TestAWarmStagedProofAllocatesNoPinnedMemory(t *testing.T) {
	drv := fakedevice.New(1 << 30)
	b, _, rec := fakeProvingBackend(t, drv)
	b.stagedFrom = 4 << 10
	f := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	first := proveOnFake(t, b, rec, f, "k")
	pinnedMallocs := 0
	for _, s := range first {
		for _, kv := range s.Attributes() {
			if kv.Key == semconv.KeyBufferKind && kv.Value.AsString() == "pinned" {
				pinnedMallocs++
			}
		}
	}
	if pinnedMallocs == 0 {
		t.Fatal("the first staged proof allocated no pinned memory: the test does not reach the staged copies")
	}
	if warm := proveOnFake(t, b, rec, f, "k"); len(warm) != 0 {
		t.Errorf("second staged proof: %d cuda.malloc spans inside groth16.prove, want none", len(warm))
	}
	withKey := drv.Pinned()
	if err := b.EvictBases(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	afterEvict := drv.Pinned()
	if afterEvict >= withKey || afterEvict != 2*StageChunk {
		t.Errorf("pinned bytes %d with the key, %d after its eviction; want only the two staging buffers (%d) left",
			withKey, afterEvict, 2*StageChunk)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := drv.Pinned(); n != 0 {
		t.Errorf("%d pinned bytes after Close", n)
	}
}
