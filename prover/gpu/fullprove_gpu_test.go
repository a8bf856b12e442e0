package gpu

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// needDevice skips the test on a host without a CUDA driver or device,
// before any costly setup.
func needDevice(t *testing.T) {
	t.Helper()
	if _, err := cudaspans.Devices(); errors.Is(err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
}

// proveFixture is a built-in circuit compiled and set up once per binary.
type proveFixture struct {
	ccs constraint.ConstraintSystem
	pk  gnarkgroth16.ProvingKey
	vk  gnarkgroth16.VerifyingKey
	w   witness.Witness
	pub witness.Witness
}

// newProveFixture is circuitstest's fixture of a built-in circuit (seed 7).
func newProveFixture(t *testing.T, name string, n int) *proveFixture {
	t.Helper()
	f := circuitstest.Setup(t, name, n, 7)
	return &proveFixture{ccs: f.CCS, pk: f.PK, vk: f.VK, w: f.Witness, pub: f.Public}
}

// openBackend opens the CUDA backend with a Releaser of mode, both
// recording into rec; it skips without a device.
func openBackend(t *testing.T, mode buffer.ReleaseMode) (*Backend, *buffer.Releaser, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	needDevice(t)
	rec, tp := spantest.New()
	rel, err := buffer.NewReleaser(mode, buffer.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), backend.Options{TracerProvider: tp, Releaser: rel})
	if errors.Is(err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		rel.Close(context.Background())
	})
	return b, rel, rec, tp
}

func fixedRandomness() (r, s fr.Element) {
	r.SetUint64(0x1234_5678_9abc)
	s.SetString("31415926535897932384626433832795028841971693993751")
	return r, s
}

func sameProof(t *testing.T, what string, got, want gnarkgroth16.Proof) {
	t.Helper()
	g, w := got.(*groth16_bls12381.Proof), want.(*groth16_bls12381.Proof)
	if !g.Ar.Equal(&w.Ar) || !g.Bs.Equal(&w.Bs) || !g.Krs.Equal(&w.Krs) {
		t.Fatalf("%s: proof differs from the CPU backend's for the same witness, r and s", what)
	}
}

// TestFullProveGPUVerifiesAndEqualsCPU: at 2^16 constraints, for mulchain
// and merkle, every host copy mode (registered with buffers freed after
// each proof: registered and unregistered per proof) and both G2 MSM
// placements, the CUDA backend's proof verifies with gnark and is the CPU
// backend's proof for the same witness and r, s; a second proof over the
// now-resident bases is equal too.
func TestFullProveGPUVerifiesAndEqualsCPU(t *testing.T) {
	b, _, _, tp := openBackend(t, buffer.ReleaseSync)
	ctx := context.Background()
	r, s := fixedRandomness()
	for _, name := range []string{"mulchain", "merkle"} {
		f := newProveFixture(t, name, 1<<16)
		start := time.Now()
		want, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, prover.WithRandomness(r, s))
		if err != nil {
			t.Fatal(err)
		}
		cpuTime := time.Since(start)
		if err := gnarkgroth16.Verify(want, f.vk, f.pub); err != nil {
			t.Fatalf("%s: CPU backend proof does not verify: %v", name, err)
		}
		modes := []backend.HostCopy{backend.HostCopyStaged, backend.HostCopyRegister, backend.HostCopyRegistered, backend.HostCopyPageable, backend.HostCopyStaged}
		for i, mode := range modes {
			if err := b.SetHostCopy(mode); err != nil {
				t.Fatal(err)
			}
			// The last pass puts the G2 MSM on the CPU.
			g2 := backend.G2OnGPU
			if i == len(modes)-1 {
				g2 = backend.G2OnCPU
			}
			if err := b.SetMSMG2(g2); err != nil {
				t.Fatal(err)
			}
			mode := backend.HostCopy(string(mode) + ", G2 on " + string(g2))
			for round := 0; round < 2; round++ {
				start := time.Now()
				got, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, groth16.WithBackend(b), prover.WithRandomness(r, s),
					groth16.WithKeyID(name+"-2^16"), prover.WithTracerProvider(tp))
				if err != nil {
					t.Fatalf("%s, %s copies, round %d: %v", name, mode, round, err)
				}
				el := time.Since(start)
				if err := gnarkgroth16.Verify(got, f.vk, f.pub); err != nil {
					t.Fatalf("%s, %s copies, round %d: CUDA proof does not verify: %v", name, mode, round, err)
				}
				sameProof(t, fmt.Sprintf("%s, %s copies, round %d", name, mode, round), got, want)
				t.Logf("%s 2^16, %s copies, round %d: CUDA proof verifies, equal to CPU (cuda %v, cpu %v)",
					name, mode, round, el.Round(time.Microsecond), cpuTime.Round(time.Microsecond))
			}
		}
	}
}

// TestFullProveGPUVerifiesAt2To20: full proofs on the CUDA backend at 2^20
// constraints verify, for mulchain and merkle (staged copies, several
// staging chunks per vector).
func TestFullProveGPUVerifiesAt2To20(t *testing.T) {
	if testing.Short() {
		t.Skip("2^20 setup takes a while; -short")
	}
	b, _, _, tp := openBackend(t, buffer.ReleaseSync)
	for _, name := range []string{"mulchain", "merkle"} {
		t.Run(name, func(t *testing.T) { proveAt2To20(t, b, tp, name) })
	}
}

func proveAt2To20(t *testing.T, b *Backend, tp *sdktrace.TracerProvider, name string) {
	ctx := context.Background()
	{
		f := newProveFixture(t, name, 1<<20)
		for round := 0; round < 2; round++ {
			start := time.Now()
			proof, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, groth16.WithBackend(b), groth16.WithKeyID(name+"-2^20"),
				prover.WithTracerProvider(tp))
			if err != nil {
				t.Fatalf("%s 2^20: %v", name, err)
			}
			el := time.Since(start)
			if err := gnarkgroth16.Verify(proof, f.vk, f.pub); err != nil {
				t.Fatalf("%s 2^20, round %d: CUDA proof does not verify: %v", name, round, err)
			}
			t.Logf("%s 2^20 round %d: CUDA proof verifies (prove %v, synthesis included)", name, round, el.Round(time.Millisecond))
		}
	}
}

// TestComputeHGPUStagedEqualsPageable: the staged copies (several chunks
// both ways at 2^22) and registered copies give the same H as pageable
// copies, on fresh random vectors.
func TestComputeHGPUStagedEqualsPageable(t *testing.T) {
	b, _, _, _ := openBackend(t, buffer.ReleaseSync)
	ctx := context.Background()
	const logn = 22
	n := 1 << logn
	d := fft.NewDomain(uint64(n))
	a, bv, c := fastRandomVector(n, 1), fastRandomVector(n, 2), fastRandomVector(n, 3)
	var want []fr.Element
	for _, mode := range []backend.HostCopy{backend.HostCopyPageable, backend.HostCopyStaged, backend.HostCopyRegister} {
		if err := b.SetHostCopy(mode); err != nil {
			t.Fatal(err)
		}
		got := append([]fr.Element(nil), a...)
		b0, c0 := append([]fr.Element(nil), bv...), append([]fr.Element(nil), c...)
		start := time.Now()
		if err := b.ComputeH(ctx, "", d, got, b0, c0); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		el := time.Since(start)
		gputest.SameVectors(t, "b after compute_h", b0, bv)
		gputest.SameVectors(t, "c after compute_h", c0, c)
		if want == nil {
			want = got
		} else {
			gputest.SameVectors(t, fmt.Sprintf("compute_h 2^%d with %s copies", logn, mode), got, want)
		}
		t.Logf("compute_h 2^%d, %s copies: %v", logn, mode, el.Round(time.Microsecond))
	}
}

// fastRandomVector draws n canonical field elements from a seeded PRNG
// (top limb below 2^61 < the modulus' top limb), far faster than
// crypto/rand at 2^22 elements.
func fastRandomVector(n int, seed uint64) []fr.Element {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	v := make([]fr.Element, n)
	for i := range v {
		v[i] = fr.Element{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64() >> 3}
	}
	return v
}

type spanIndex struct {
	spans []sdktrace.ReadOnlySpan
	byID  map[trace.SpanID]sdktrace.ReadOnlySpan
}

func indexSpans(spans []sdktrace.ReadOnlySpan) *spanIndex {
	x := &spanIndex{spans: spans, byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, sp := range spans {
		x.byID[sp.SpanContext().SpanID()] = sp
	}
	return x
}

func (x *spanIndex) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range x.spans {
		if sp.Name() == name {
			out = append(out, sp)
		}
	}
	return out
}

func (x *spanIndex) parentName(sp sdktrace.ReadOnlySpan) string {
	if p, ok := x.byID[sp.Parent().SpanID()]; ok {
		return p.Name()
	}
	return ""
}

// under reports whether sp has an ancestor named name.
func (x *spanIndex) under(sp sdktrace.ReadOnlySpan, name string) bool {
	for p, ok := x.byID[sp.Parent().SpanID()]; ok; p, ok = x.byID[p.Parent().SpanID()] {
		if p.Name() == name {
			return true
		}
	}
	return false
}

// TestFullProveGPUSpans: one CUDA proof records gpu.lock and gpu.total as
// children of gnarkgroth16.prove (gpu.total inside it, with its op count), each
// MSM (the four on G1 and msm.g2.b) with kernel spans below it, host-to-device copies with cuda.bytes
// and cuda.gbps, and buffer.release spans for device memory in every
// release mode and for pinned memory (registered copies).
func TestFullProveGPUSpans(t *testing.T) {
	needDevice(t)
	f := newProveFixture(t, "mulchain", 1<<16)
	for _, mode := range []buffer.ReleaseMode{buffer.ReleaseSync, buffer.ReleaseAsync, buffer.ReleasePool} {
		t.Run(string(mode), func(t *testing.T) {
			b, rel, rec, tp := openBackend(t, mode)
			if err := b.SetHostCopy(backend.HostCopyRegister); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Twice: the second proof reuses the resident bases (and pooled buffers).
			for range 2 {
				proof, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, groth16.WithBackend(b), prover.WithReleaser(rel),
					groth16.WithKeyID("spans"), prover.WithTracerProvider(tp))
				if err != nil {
					t.Fatal(err)
				}
				if err := gnarkgroth16.Verify(proof, f.vk, f.pub); err != nil {
					t.Fatal(err)
				}
			}
			// A proof with a key ID keeps its device buffers (compute_h
			// vectors, MSM workspace) for the key's next proof
			// (msm.DeviceBases.ProofBuffer): none is released under either
			// gnarkgroth16.prove; evicting the key releases them.
			if ids := b.Bases().ProofBufferIDs(); len(ids) == 0 {
				t.Error("no proof buffer kept for key spans after two proofs")
			}
			evictCtx, evict := tp.Tracer("test").Start(ctx, "test.evict")
			if _, err := b.Bases().EvictKeySets(evictCtx, "spans"); err != nil {
				t.Fatal(err)
			}
			evict.End()
			if ids := b.Bases().ProofBufferIDs(); len(ids) != 0 {
				t.Errorf("proof buffers %v kept after EvictKeySets", ids)
			}
			if err := rel.Close(ctx); err != nil {
				t.Fatal(err)
			}
			x := indexSpans(rec.Ended())
			proves := x.named(semconv.SpanGroth16Prove)
			if len(proves) != 2 {
				t.Fatalf("%d gnarkgroth16.prove spans, want 2", len(proves))
			}
			for _, name := range []string{semconv.SpanGPULock, semconv.SpanGPUTotal} {
				got := x.named(name)
				if len(got) != 2 {
					t.Fatalf("%d %s spans for 2 proofs, want 2", len(got), name)
				}
				for _, sp := range got {
					if x.parentName(sp) != semconv.SpanGroth16Prove {
						t.Errorf("%s is a child of %q, want gnarkgroth16.prove", name, x.parentName(sp))
					}
				}
			}
			for _, sp := range x.named(semconv.SpanGPUTotal) {
				p := x.byID[sp.Parent().SpanID()]
				if sp.StartTime().Before(p.StartTime()) || sp.EndTime().After(p.EndTime()) {
					t.Errorf("gpu.total [%v, %v] outside gnarkgroth16.prove [%v, %v]", sp.StartTime(), sp.EndTime(), p.StartTime(), p.EndTime())
				}
				if ops, _ := spantest.Attr(sp, semconv.KeyCUDAOpCount); ops == nil || ops.(int64) < 10 {
					t.Errorf("gpu.total covers %v device operations, want the proof's (>= 10)", ops)
				}
				t.Logf("gpu.total %v of gnarkgroth16.prove %v", sp.EndTime().Sub(sp.StartTime()), p.EndTime().Sub(p.StartTime()))
			}
			for _, msm := range []string{semconv.SpanMSMG1A, semconv.SpanMSMG1B, semconv.SpanMSMG1K, semconv.SpanMSMG1H, semconv.SpanMSMG2B} {
				spans := x.named(msm)
				if len(spans) != 2 {
					t.Fatalf("%d %s spans, want 2", len(spans), msm)
				}
				for _, m := range spans {
					kernels := 0
					for _, sp := range x.spans {
						if _, ok := spantest.Attr(sp, semconv.KeyCUDAKernelName); ok && x.byID[sp.Parent().SpanID()] != nil &&
							sp.Parent().SpanID() == m.SpanContext().SpanID() {
							kernels++
						}
					}
					if kernels == 0 {
						t.Errorf("%s has no kernel span as a child", msm)
					}
					// The scalar counts of A, B, K (prover.MSMScalarAttributes):
					// mulchain's wires are full-width but for the constant 1.
					zero, okZ := spantest.Attr(m, semconv.KeyMSMScalarsZero)
					one, okO := spantest.Attr(m, semconv.KeyMSMScalarsOne)
					size, _ := spantest.Attr(m, semconv.KeyMSMSize)
					if wantCounts := msm != semconv.SpanMSMG1H; okZ != wantCounts || okO != wantCounts {
						t.Errorf("%s: scalar counts present %v/%v, want %v", msm, okZ, okO, wantCounts)
					} else if wantCounts && (zero.(int64)+one.(int64) > size.(int64) || one.(int64) < 0) {
						t.Errorf("%s: %v zero and %v one scalars of %v", msm, zero, one, size)
					}
				}
			}
			copies := 0
			for _, sp := range x.named(semconv.SpanMemcpyHtoD) {
				if !x.under(sp, semconv.SpanGroth16Prove) {
					continue
				}
				bytes, okB := spantest.Attr(sp, semconv.KeyCUDABytes)
				gbps, okG := spantest.Attr(sp, semconv.KeyCUDAGBPerSecond)
				if !okB || !okG || bytes.(int64) <= 0 || gbps.(float64) <= 0 {
					t.Errorf("copy span without cuda.bytes and cuda.gbps: %v", sp.Attributes())
				}
				copies++
			}
			if copies == 0 {
				t.Error("no cuda.memcpy.htod span under gnarkgroth16.prove")
			}
			kinds := map[string]int{}
			evicted := 0
			for _, sp := range x.named(semconv.SpanBufferRelease) {
				k, _ := spantest.Attr(sp, semconv.KeyBufferKind)
				m, _ := spantest.Attr(sp, semconv.KeyReleaseMode)
				// Device memory is freed at once in every mode, and pool
				// mode keeps only mmap buffers (buffer.Releaser).
				want := string(mode)
				if k == "device" || (mode == buffer.ReleasePool && k != "mmap") {
					want = string(buffer.ReleaseSync)
				}
				if m != want {
					t.Errorf("buffer.release of %v memory in mode %v, want %s", k, m, want)
				}
				kinds[fmt.Sprint(k)]++
				if k == "device" {
					if x.under(sp, semconv.SpanGroth16Prove) {
						t.Errorf("device memory released under gnarkgroth16.prove: the key's proof buffers are kept")
					}
					if x.under(sp, "test.evict") {
						evicted++
					}
				}
			}
			if evicted == 0 {
				t.Errorf("no buffer.release of device memory under the key's eviction (kinds %v)", kinds)
			}
			if mode == buffer.ReleaseSync && kinds["pinned"] == 0 {
				t.Errorf("no buffer.release of pinned memory with registered copies (kinds %v)", kinds)
			}
			if kinds["mmap"] == 0 {
				t.Errorf("no buffer.release of the mmap'd assignment (kinds %v)", kinds)
			}
			t.Logf("%s: buffer.release by kind %v, %d htod copies", mode, kinds, copies)
		})
	}
}
