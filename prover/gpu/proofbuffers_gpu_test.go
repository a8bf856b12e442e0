package gpu

import (
	"context"
	"strings"
	"testing"

	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// mallocsUnderProve proves f on b with key ID key and returns the proof
// and the number of cuda.malloc spans inside its gnarkgroth16.prove.
func mallocsUnderProve(t *testing.T, b *Backend, rec *tracetest.SpanRecorder, tp *sdktrace.TracerProvider, f *proveFixture, key string) (gnarkgroth16.Proof, int) {
	t.Helper()
	ctx, job := tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
	proof, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, groth16.WithBackend(b), groth16.WithKeyID(key), prover.WithTracerProvider(tp))
	job.End()
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	byID := map[[8]byte]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == job.SpanContext().TraceID() {
			byID[s.SpanContext().SpanID()] = s
		}
	}
	n := 0
	for _, s := range byID {
		if s.Name() != semconv.SpanCUDAMalloc {
			continue
		}
		for p := byID[s.Parent().SpanID()]; p != nil; p = byID[p.Parent().SpanID()] {
			if p.Name() == semconv.SpanGroth16Prove {
				n++
				break
			}
		}
	}
	return proof, n
}

// issue 10 item 7 on the device: a warm proof (second of its circuit)
// makes no cuda.malloc inside gnarkgroth16.prove and verifies; two sizes keep
// their own buffers; evicting a key gives its device memory back
// (cuMemGetInfo's free grows) and its next proof allocates again.
func TestWarmProofAllocatesNoDeviceMemoryGPU(t *testing.T) {
	b, _, rec, tp := openBackend(t, buffer.ReleaseAsync)
	for _, n := range []int{1 << 16, 1 << 18} {
		f := newProveFixture(t, "merkle", n)
		key := "merkle-" + strings.Repeat("x", n>>16)
		if _, first := mallocsUnderProve(t, b, rec, tp, f, key); first == 0 {
			t.Fatalf("2^%d: the first proof allocated nothing on the device", n)
		}
		proof, warm := mallocsUnderProve(t, b, rec, tp, f, key)
		if warm != 0 {
			t.Errorf("%s: %d cuda.malloc spans inside a warm gnarkgroth16.prove, want none", key, warm)
		}
		if err := gnarkgroth16.Verify(proof, f.vk, f.pub); err != nil {
			t.Fatalf("%s: the warm proof, on reused buffers, does not verify: %v", key, err)
		}
	}
	free0, _, err := b.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EvictBases(context.Background(), "merkle-xxxx"); err != nil {
		t.Fatal(err)
	}
	free1, _, err := b.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if free1 <= free0 {
		t.Errorf("evicting a key: device free %d → %d bytes, want more free", free0, free1)
	}
	if ids := strings.Join(b.Bases().ProofBufferIDs(), " "); strings.Contains(ids, "merkle-xxxx:") || !strings.Contains(ids, "merkle-x:") {
		t.Errorf("proof buffers after evicting merkle-xxxx: %s", ids)
	}
	f := newProveFixture(t, "merkle", 1<<18)
	if _, again := mallocsUnderProve(t, b, rec, tp, f, "merkle-xxxx"); again == 0 {
		t.Error("the first proof after the eviction allocated nothing")
	}
}
