package groth16

import (
	"context"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/backend/groth16"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

func TestProveRecordsEveryLayerNestedUnderItsParent(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	tp, exp := spantest.NewMemory()
	ctx, root := tp.Tracer("test").Start(context.Background(), "caller")
	proof, err := Prove(ctx, f.CCS, f.PK, f.Witness, WithTracerProvider(tp))
	root.End()
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proof, f.VK, f.Public); err != nil {
		t.Fatal(err)
	}
	tree := spantest.NewTree(exp.GetSpans())
	wantParent := map[string]string{
		semconv.SpanPipelineSynthesize: "caller",
		semconv.SpanGroth16Prove:       "caller",
		semconv.SpanComputeH:           semconv.SpanGroth16Prove,
		semconv.SpanNTTInverse:         semconv.SpanComputeH,
		semconv.SpanNTTCoset:           semconv.SpanComputeH,
		semconv.SpanPointwise:          semconv.SpanComputeH,
		semconv.SpanNTTInverseCoset:    semconv.SpanComputeH,
		semconv.SpanMSMG1A:             semconv.SpanGroth16Prove,
		semconv.SpanMSMG1B:             semconv.SpanGroth16Prove,
		semconv.SpanMSMG1K:             semconv.SpanGroth16Prove,
		semconv.SpanMSMG1H:             semconv.SpanGroth16Prove,
		semconv.SpanMSMG2B:             semconv.SpanGroth16Prove,
		semconv.SpanGroth16Assemble:    semconv.SpanGroth16Prove,
		semconv.SpanBufferRelease:      semconv.SpanGroth16Prove, // sync by default
	}
	for name, parent := range wantParent {
		spans := tree.Named(name)
		if len(spans) == 0 {
			t.Errorf("no %s span", name)
			continue
		}
		for _, s := range spans {
			p, ok := tree.Parent(s)
			if !ok || p.Name != parent {
				t.Errorf("%s: parent %q, want %q", name, p.Name, parent)
				continue
			}
			if s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime) {
				t.Errorf("%s [%v, %v] not inside %s [%v, %v]", name, s.StartTime, s.EndTime, p.Name, p.StartTime, p.EndTime)
			}
		}
	}
	if n := len(tree.Named(semconv.SpanNTTInverse)); n != 3 {
		t.Errorf("%d ntt.inverse spans, want 3 (a, b, c)", n)
	}
	// Synthesis comes before the prove.
	syn, pr := tree.Named(semconv.SpanPipelineSynthesize)[0], tree.Named(semconv.SpanGroth16Prove)[0]
	if syn.EndTime.After(pr.StartTime) {
		t.Error("groth16.prove started before pipeline.synthesize ended")
	}
	if v, _ := spantest.StubValue(tree.Named(semconv.SpanMSMG1K)[0], string(semconv.KeyMSMSize)); v == "" || v == "0" {
		t.Errorf("msm.g1.k has no size: %q", v)
	}
}

func TestEachReleaseModeEmitsBufferReleaseWithBytesAndMode(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	wantBufs := []string{"b", "c", "h", "wires", "wires.a", "wires.b", "backend.scratch"}
	for _, mode := range []buffer.ReleaseMode{buffer.ReleaseSync, buffer.ReleaseAsync, buffer.ReleasePool} {
		t.Run(string(mode), func(t *testing.T) {
			tp, exp := spantest.NewMemory()
			rel, err := buffer.NewReleaser(mode, buffer.WithTracerProvider(tp))
			if err != nil {
				t.Fatal(err)
			}
			tr := tp.Tracer("test")
			jobCtx, job := tr.Start(context.Background(), semconv.SpanEngineJob)
			proveCtx, pp := tr.Start(jobCtx, semconv.SpanPipelineProve)
			backend := releasingBackend{cpu.New(tp), rel}
			proof, err := Prove(buffer.WithReleaseParent(proveCtx, jobCtx), f.CCS, f.PK, f.Witness, WithTracerProvider(tp), WithReleaser(rel), WithBackend(backend))
			pp.End()
			if err != nil {
				t.Fatal(err)
			}
			if err := rel.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			job.End()
			if err := groth16.Verify(proof, f.VK, f.Public); err != nil {
				t.Fatal(err)
			}
			tree := spantest.NewTree(exp.GetSpans())
			got := map[string]bool{}
			for _, s := range tree.Named(semconv.SpanBufferRelease) {
				name, _ := spantest.StubValue(s, string(semconv.KeyBufferName))
				got[name] = true
				if m, _ := spantest.StubValue(s, string(semconv.KeyReleaseMode)); m != string(mode) {
					t.Errorf("%s: mode %q", name, m)
				}
				if b, _ := spantest.StubValue(s, string(semconv.KeyBufferBytes)); b == "" || b == "0" {
					t.Errorf("%s: bytes %q", name, b)
				}
				inProve := tree.Under(s, semconv.SpanPipelineProve)
				switch mode {
				case buffer.ReleaseAsync:
					if inProve {
						t.Errorf("async release of %s is inside pipeline.prove", name)
					}
					if p, _ := tree.Parent(s); p.Name != semconv.SpanEngineJob {
						t.Errorf("async release of %s: parent %q, want engine.job", name, p.Name)
					}
				default:
					want := semconv.SpanGroth16Prove
					if name == "backend.scratch" {
						want = semconv.SpanComputeH // released inside the step that used it
					}
					if p, _ := tree.Parent(s); p.Name != want {
						t.Errorf("%s release of %s: parent %q, want %s", mode, name, p.Name, want)
					}
				}
			}
			for _, b := range wantBufs {
				if !got[b] {
					t.Errorf("no buffer.release for %s (got %v)", b, got)
				}
			}
		})
	}
}

func TestPoolModeReusesBuffersForTheNextProof(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	rel, err := buffer.NewReleaser(buffer.ReleasePool)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close(context.Background())
	// First proof fills the pool.
	if _, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, WithReleaser(rel)); err != nil {
		t.Fatal(err)
	}
	// It left six buffers (b, c, h, wires, wires.a, wires.b) in the pool.
	pooled := map[*buffer.Mmap]bool{}
	var held []buffer.Buffer
	for b := rel.Reuse(1); b != nil; b = rel.Reuse(1) {
		pooled[b] = true
		held = append(held, b)
	}
	if len(pooled) != 6 {
		t.Fatalf("%d buffers pooled after one proof, want 6", len(pooled))
	}
	for _, b := range held {
		rel.Release(context.Background(), "back", b)
	}
	asg, err := Synthesize(context.Background(), f.CCS, f.Witness, WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range asg.slots() {
		if !pooled[*s.b] {
			t.Errorf("buffer %s was mapped anew, not taken from the pool", s.name)
		}
	}
	// Pooled buffers hold the last proof's values: the padding must be
	// zeroed again.
	for i := asg.NbConstraints; i < asg.DomainSize; i++ {
		if !asg.A[i].IsZero() || !asg.B[i].IsZero() || !asg.C[i].IsZero() {
			t.Fatalf("padding at %d not zero in a reused buffer", i)
		}
	}
	proof, err := ProveAssignment(context.Background(), f.PK, asg, WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proof, f.VK, f.Public); err != nil {
		t.Fatalf("proof from pooled buffers: %v", err)
	}
}

// releasingBackend is the CPU backend with a scratch buffer of its own in
// ComputeH, released through the proof's Releaser as the CUDA backend
// releases its device buffers: in async mode its span must land where the
// prove's own async releases do.
type releasingBackend struct {
	*cpu.Backend
	rel *buffer.Releaser
}

func (b releasingBackend) ComputeH(ctx context.Context, keyID string, d *fft.Domain, x, y, z []fr.Element) error {
	scratch, err := buffer.NewMmap(1 << 12)
	if err != nil {
		return err
	}
	if err := b.Backend.ComputeH(ctx, "", d, x, y, z); err != nil {
		return err
	}
	return b.rel.Release(ctx, "backend.scratch", scratch)
}
