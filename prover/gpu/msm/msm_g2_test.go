package msm

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
)

// GPU tests of the G2 MSM (msm.cu compiled with MSM_G2) against
// gnark-crypto's G2Jac.MultiExp; skipped without a device.

var (
	msmRandBases2Once sync.Once
	msmRandBases2     []curve.G2Affine
)

// msmTestBasesG2 returns n points of G2: a prefix of 2^16 random points made
// once with gnark's batch scalar multiplication, repeated past 2^16 (the
// MSM's work does not depend on the points being distinct, and random G2
// points are slow to make).
func msmTestBasesG2(t testing.TB, n int) []curve.G2Affine {
	msmRandBases2Once.Do(func() {
		_, _, _, g := curve.Generators()
		msmRandBases2 = curve.BatchScalarMultiplicationG2(&g, msmRandScalars(1<<16))
	})
	if n <= len(msmRandBases2) {
		return msmRandBases2[:n]
	}
	out := make([]curve.G2Affine, n)
	for i := range out {
		out[i] = msmRandBases2[i%len(msmRandBases2)]
	}
	return out
}

func gnarkMSMG2(t testing.TB, bases []curve.G2Affine, scalars []fr.Element) curve.G2Jac {
	t.Helper()
	var r curve.G2Jac
	if _, err := r.MultiExp(bases, scalars, ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	return r
}

func msmPreloadG2(t testing.TB, f *msmFixture, bases []curve.G2Affine) *ResidentBases {
	t.Helper()
	msmSetSeq++
	rb, err := f.bases.PreloadG2(f.ctx, f.stream, prover.BaseSet[curve.G2Affine]{ID: fmt.Sprintf("test-g2-%d", msmSetSeq), Points: bases})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := f.bases.Evict(f.ctx, rb.ID()); err != nil {
			t.Error(err)
		}
	})
	return rb
}

func checkMSMG2AgainstGnark(t *testing.T, f *msmFixture, name string, bases []curve.G2Affine, scalars []fr.Element) {
	t.Helper()
	rb := msmPreloadG2(t, f, bases)
	got, err := f.msm.G2(f.ctx, "", f.stream, rb, scalars)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := gnarkMSMG2(t, bases, scalars)
	if !got.Equal(&want) {
		t.Fatalf("%s: GPU G2 MSM = %s, gnark MultiExp = %s", name, got.String(), want.String())
	}
}

func TestMSMG2GPUMatchesGnarkOnRandomInputs(t *testing.T) {
	f := openMSMGPU(t)
	for _, lg := range []int{10, 16, 20} {
		n := 1 << lg
		checkMSMG2AgainstGnark(t, f, fmt.Sprintf("2^%d", lg), msmTestBasesG2(t, n), msmRandScalars(n))
	}
}

func TestMSMG2GPUMatchesGnarkOnEdgeInputs(t *testing.T) {
	f := openMSMGPU(t)
	var one, rm1 fr.Element
	one.SetOne()
	rm1.Neg(&one) // r − 1
	b := msmTestBasesG2(t, 8)
	p, q := b[0], b[1]
	var negP curve.G2Affine
	negP.Neg(&p)
	inf := curve.G2Affine{}

	checkMSMG2AgainstGnark(t, f, "size 1, scalar 0", []curve.G2Affine{p}, []fr.Element{{}})
	checkMSMG2AgainstGnark(t, f, "size 1, scalar 1", []curve.G2Affine{p}, []fr.Element{one})
	checkMSMG2AgainstGnark(t, f, "size 1, scalar r-1", []curve.G2Affine{p}, []fr.Element{rm1})
	checkMSMG2AgainstGnark(t, f, "size 1, base at infinity", []curve.G2Affine{inf}, []fr.Element{rm1})
	checkMSMG2AgainstGnark(t, f, "P + P", []curve.G2Affine{p, p}, []fr.Element{one, one})
	checkMSMG2AgainstGnark(t, f, "P + (-P)", []curve.G2Affine{p, negP}, []fr.Element{one, one})
	checkMSMG2AgainstGnark(t, f, "mixed", []curve.G2Affine{q, p, p, inf, negP}, []fr.Element{{}, one, rm1, one, rm1})

	// One heavy bucket per window (all scalars r−1, one base).
	n := 5000
	s := make([]fr.Element, n)
	bs := make([]curve.G2Affine, n)
	for i := range s {
		s[i], bs[i] = rm1, p
	}
	checkMSMG2AgainstGnark(t, f, "heavy bucket", bs, s)

	// Sizes that are not powers of two with zeros, ones, r−1, infinity,
	// repeated bases and opposite pairs mixed in.
	for _, n := range []int{3, 1000, 65537} {
		s := msmRandScalars(n)
		bs := append([]curve.G2Affine(nil), msmTestBasesG2(t, n)...)
		for i := range s {
			switch i % 10 {
			case 1:
				s[i] = fr.Element{}
			case 2:
				s[i] = one
			case 3:
				s[i] = rm1
			case 4:
				bs[i] = inf
			case 5:
				bs[i] = bs[i-5]
			case 6:
				bs[i].Neg(&bs[i-6])
				s[i] = s[i-6]
			}
		}
		checkMSMG2AgainstGnark(t, f, fmt.Sprintf("mixed %d", n), bs, s)
	}
}

func TestMSMG2GPUChunkedHostBasesAndWindowsMatchGnark(t *testing.T) {
	f := openMSMGPU(t)
	chunked, err := New(f.ctx, f.c, WithMaxChunk(1<<12))
	if err != nil {
		t.Fatal(err)
	}
	defer chunked.Close()
	n := 2*(1<<12) + 33
	bases, scalars := msmTestBasesG2(t, n), msmRandScalars(n)
	want := gnarkMSMG2(t, bases, scalars)
	rb := msmPreloadG2(t, f, bases)
	got, err := chunked.G2(f.ctx, "", f.stream, rb, scalars)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&want) {
		t.Fatal("chunked G2 MSM differs from gnark")
	}
	if got, err = chunked.G2Host(f.ctx, "", f.stream, bases, scalars); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&want) {
		t.Fatal("chunked G2 MSM over host bases differs from gnark")
	}
	for _, c := range []int{8, 13, 16} {
		m, err := New(f.ctx, f.c, WithWindowBits(c))
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.G2(f.ctx, "", f.stream, rb, scalars)
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(&want) {
			t.Fatalf("G2 MSM with c=%d differs from gnark", c)
		}
	}
	// A prefix of the set.
	if got, err = f.msm.G2(f.ctx, "", f.stream, rb, scalars[:1234]); err != nil {
		t.Fatal(err)
	}
	if want := gnarkMSMG2(t, bases[:1234], scalars[:1234]); !got.Equal(&want) {
		t.Fatal("prefix G2 MSM differs from gnark")
	}
}

func TestMSMG2GPURefusesTheOtherGroupsSetAndEvictedSets(t *testing.T) {
	f := openMSMGPU(t)
	rb1 := msmPreload(t, f, msmTestBases(t, 10))
	rb2 := msmPreloadG2(t, f, msmTestBasesG2(t, 10))
	if _, err := f.msm.G2(f.ctx, "", f.stream, rb1, msmRandScalars(10)); err == nil {
		t.Error("a G2 MSM over G1 bases gave no error")
	}
	if _, err := f.msm.G1(f.ctx, "", f.stream, rb2, msmRandScalars(10)); err == nil {
		t.Error("a G1 MSM over G2 bases gave no error")
	}
	if _, err := f.bases.PreloadG1(f.ctx, f.stream, prover.BaseSet[curve.G1Affine]{ID: rb2.ID(), Points: msmTestBases(t, 10)}); err == nil {
		t.Error("a G1 preload under a resident G2 set's ID gave no error")
	}
	if _, err := f.msm.G2(f.ctx, "", f.stream, rb2, msmRandScalars(11)); err == nil {
		t.Error("more scalars than bases: no error")
	}
	if _, err := f.bases.Evict(f.ctx, rb2.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.msm.G2(f.ctx, "", f.stream, rb2, msmRandScalars(10)); !errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("G2 MSM over an evicted set: %v, want ErrBaseSetEvicted", err)
	}
}

// TestMSMG2GPUResidentRecordsSpans: G2Resident twice over one key set: the
// first call uploads (keys.preload, cache_hit false), the second reuses
// it; both give gnark's result, with kernel spans under msm.g2.b.
func TestMSMG2GPUResidentRecordsSpans(t *testing.T) {
	f := openMSMGPU(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c, err := cudaspans.Open(0, cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := New(f.ctx, c, WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	resident, err := NewDeviceBases(f.ctx, c, WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer resident.EvictAll(f.ctx)
	stream, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	n := 3000
	set := prover.BaseSet[curve.G2Affine]{ID: "g2test:g2.b", Points: msmTestBasesG2(t, n)}
	for round := range 2 {
		scalars := msmRandScalars(n)
		got, err := m.G2Resident(f.ctx, otelcuzk.SpanMSMG2B, stream, resident, set, scalars)
		if err != nil {
			t.Fatal(err)
		}
		if want := gnarkMSMG2(t, set.Points, scalars); !got.Equal(&want) {
			t.Fatalf("round %d: G2Resident differs from gnark", round)
		}
	}
	var msmSpans, preloads, hits int
	parents := map[trace.SpanID]bool{}
	for _, s := range rec.Ended() {
		switch s.Name() {
		case otelcuzk.SpanMSMG2B:
			msmSpans++
			parents[s.SpanContext().SpanID()] = true
		case otelcuzk.SpanKeysPreload:
			preloads++
			for _, a := range s.Attributes() {
				if a.Key == otelcuzk.KeyKeyCacheHit && a.Value.AsBool() {
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
	for _, k := range []string{"msm_digits_count", "msm_scatter", "msm_bucket_accumulate_g2", "msm_bucket_reduce_g2",
		"msm_window_sum_g2", otelcuzk.SpanMemcpyHtoD, otelcuzk.SpanKeysPreload} {
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
func BenchmarkMSMG2(b *testing.B) {
	maxLog := 22
	if v := os.Getenv("MSM_BENCH_MAX_LOG"); v != "" {
		fmt.Sscan(v, &maxLog)
	}
	for _, lg := range []int{20, 22} {
		if lg > maxLog {
			continue
		}
		n := 1 << lg
		bases, scalars := msmTestBasesG2(b, n), msmRandScalars(n)
		b.Run(fmt.Sprintf("gpu/2^%d", lg), func(b *testing.B) {
			f := openMSMGPU(b)
			rb := msmPreloadG2(b, f, bases)
			if _, err := f.msm.G2(f.ctx, "", f.stream, rb, scalars); err != nil { // warm up
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := f.msm.G2(f.ctx, "", f.stream, rb, scalars); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("cpu/2^%d", lg), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				gnarkMSMG2(b, bases, scalars)
			}
		})
	}
}
