package msm

import (
	"fmt"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// GPU tests of the G2 MSM (msm.cu compiled with MSM_G2) against
// gnark-crypto's G2Jac.MultiExp; skipped without a device.

// msmTestBasesG2 returns n points of G2: a prefix of 2^16 random points made
// once with gnark's batch scalar multiplication, repeated past 2^16 (the
// MSM's work does not depend on the points being distinct, and random G2
// points are slow to make).
func msmTestBasesG2(t testing.TB, n int) []curve.G2Affine { return g2Bases.first(n) }

var g2Bases = &baseSet[curve.G2Affine]{gen: func() []curve.G2Affine {
	_, _, _, g := curve.Generators()
	return curve.BatchScalarMultiplicationG2(&g, msmRandScalars(1<<16))
}}

func TestMSMG2GPUMatchesGnarkOnRandomInputs(t *testing.T) {
	f := openMSMGPU(t)
	for _, lg := range []int{10, 16, 20} {
		n := 1 << lg
		msmG2.check(t, f, fmt.Sprintf("2^%d", lg), msmTestBasesG2(t, n), msmRandScalars(n))
	}
}

func TestMSMG2GPUMatchesGnarkOnEdgeInputs(t *testing.T) {
	f := openMSMGPU(t)
	checkEdgeInputs(t, f, msmG2, msmTestBasesG2, []int{5000}, []int{3, 1000, 65537})
}

func TestMSMG2GPUChunkedHostBasesAndWindowsMatchGnark(t *testing.T) {
	checkChunkedHostAndWindows(t, openMSMGPU(t), msmG2, msmTestBasesG2, 2*(1<<12)+33, []int{8, 13, 16})
}

func TestMSMG2GPURefusesTheOtherGroupsSetAndEvictedSets(t *testing.T) {
	f := openMSMGPU(t)
	rb1 := msmG1.preloadSet(t, f, msmTestBases(t, 10))
	rb2 := msmG2.preloadSet(t, f, msmTestBasesG2(t, 10))
	if _, err := f.msm.G2(f.ctx, backend.Call{}, f.stream, rb1, msmRandScalars(10)); err == nil {
		t.Error("a G2 MSM over G1 bases gave no error")
	}
	if _, err := f.msm.G1(f.ctx, backend.Call{}, f.stream, rb2, msmRandScalars(10)); err == nil {
		t.Error("a G1 MSM over G2 bases gave no error")
	}
	if _, err := f.bases.PreloadG1(f.ctx, f.stream, backend.BaseSet[curve.G1Affine]{ID: rb2.ID(), Points: msmTestBases(t, 10)}); err == nil {
		t.Error("a G1 preload under a resident G2 set's ID gave no error")
	}
	msmG2.checkTooManyScalarsAndEvicted(t, f, rb2, 10)
}

// TestMSMG2GPUResidentRecordsSpans: G2Resident twice over one key set: the
// first call uploads (keys.preload, cache_hit false), the second reuses
// it; both give gnark's result, with kernel spans under msm.g2.b.
func TestMSMG2GPUResidentRecordsSpans(t *testing.T) {
	f := openMSMGPU(t)
	tf := openTracedMSMGPU(t)
	rec, m, resident, stream := tf.rec, tf.msm, tf.bases, tf.stream
	n := 3000
	set := backend.BaseSet[curve.G2Affine]{ID: "g2test:g2.b", Points: msmTestBasesG2(t, n)}
	for round := range 2 {
		scalars := msmRandScalars(n)
		got, err := m.G2Resident(f.ctx, backend.Call{Span: semconv.SpanMSMG2B}, stream, resident, set, scalars)
		if err != nil {
			t.Fatal(err)
		}
		if want := msmG2.gnark(t, set.Points, scalars); !got.Equal(&want) {
			t.Fatalf("round %d: G2Resident differs from gnark", round)
		}
	}
	var msmSpans, preloads, hits int
	parents := map[trace.SpanID]bool{}
	for _, s := range rec.Ended() {
		switch s.Name() {
		case semconv.SpanMSMG2B:
			msmSpans++
			parents[s.SpanContext().SpanID()] = true
		case semconv.SpanKeysPreload:
			preloads++
			for _, a := range s.Attributes() {
				if a.Key == semconv.KeyKeyCacheHit && a.Value.AsBool() {
					hits++
				}
			}
		}
	}
	if msmSpans != 2 || preloads != 2 || hits != 1 {
		t.Errorf("spans: %d msm.g2.b, %d keys.preload (%d cache hits); want 2, 2, 1", msmSpans, preloads, hits)
	}
	kernels := map[string]int{}
	for _, s := range rec.Ended() {
		if parents[s.Parent().SpanID()] {
			kernels[s.Name()]++
		}
	}
	// The bucket sums' kernel is the one of the G2 default at this size:
	// XYZZ accumulate, or the affine sums' finish (the levels themselves
	// only where a bucket holds more than the tail).
	sums := "msm_bucket_accumulate_g2"
	if m.affineTail(true, n) > 0 {
		sums = "msm_affine_finish_g2"
	}
	for _, k := range []string{"msm_digits_count", "msm_scatter", sums, "msm_bucket_reduce_g2",
		"msm_window_sum_g2", semconv.SpanMemcpyHtoD, semconv.SpanKeysPreload} {
		if kernels[k] == 0 {
			t.Errorf("msm.g2.b has no %s child (children: %v)", k, kernels)
		}
	}
	if resident.Bytes() != int64(n*msmAffine2Bytes) {
		t.Errorf("resident bytes %d, want %d", resident.Bytes(), n*msmAffine2Bytes)
	}
}

// BenchmarkMSMG2: the G2 MSM on the GPU (bases resident, scalars from Go
// memory) against gnark-crypto's G2 MultiExp on all host cores, at 2^20
// and 2^22 (MSM_BENCH_MAX_LOG caps the size).
func BenchmarkMSMG2(b *testing.B) { benchMSM(b, msmG2, msmTestBasesG2, 22, 20, 22) }
