package msm

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
)

// ---- host-side parts (no GPU) ----

func TestMSMWindowCombinationMatchesGnark(t *testing.T) {
	// Window sums as XYZZ with random Z, combined by Horner, against
	// Σ 2^(c·w)·S_w computed with gnark's scalar multiplication.
	const c, nwin = 13, 20
	g, _, _, _ := curve.Generators()
	ws := make([]msmXYZZ, nwin)
	var want curve.G1Jac
	for w := range ws {
		var s fr.Element
		s.SetRandom()
		var p curve.G1Jac
		p.ScalarMultiplication(&g, s.BigInt(new(big.Int)))
		if w == 3 { // one empty window
			p = curve.G1Jac{}
			p.X.SetOne()
			p.Y.SetOne()
		}
		ws[w] = msmXYZZFromJac(&p)
		var term curve.G1Jac
		term.ScalarMultiplication(&p, new(big.Int).Lsh(big.NewInt(1), uint(c*w)))
		want.AddAssign(&term)
	}
	got := combineWindows[curve.G1Jac, *curve.G1Jac](ws, c)
	if !got.Equal(&want) {
		t.Fatalf("combined windows = %s, want %s", got.String(), want.String())
	}
}

func TestMSMWindowCombinationMatchesGnarkG2(t *testing.T) {
	const c, nwin = 11, 24
	_, g, _, _ := curve.Generators()
	ws := make([]msmXYZZ2, nwin)
	want := infinity[curve.G2Jac, msmXYZZ2]()
	for w := range ws {
		var s fr.Element
		s.SetRandom()
		var p curve.G2Jac
		p.ScalarMultiplication(&g, s.BigInt(new(big.Int)))
		if w == 5 { // one empty window
			p = infinity[curve.G2Jac, msmXYZZ2]()
		}
		// XYZZ with a random rescaling λ ∈ Fp2: (X·λ², Y·λ³, (Zλ)², (Zλ)³).
		var l, l2, l3, z curve.E2
		l.A0, l.A1 = msmRandFp(), msmRandFp()
		l2.Square(&l)
		l3.Mul(&l2, &l)
		ws[w].X.Mul(&p.X, &l2)
		ws[w].Y.Mul(&p.Y, &l3)
		z.Mul(&p.Z, &l)
		ws[w].ZZ.Square(&z)
		ws[w].ZZZ.Mul(&ws[w].ZZ, &z)
		var term curve.G2Jac
		term.ScalarMultiplication(&p, new(big.Int).Lsh(big.NewInt(1), uint(c*w)))
		want.AddAssign(&term)
	}
	got := combineWindows[curve.G2Jac, *curve.G2Jac](ws, c)
	if !got.Equal(&want) {
		t.Fatalf("combined windows = %s, want %s", got.String(), want.String())
	}
}

func msmRandFp() fp.Element {
	var x fp.Element
	x.SetRandom()
	return x
}

// msmXYZZFromJac returns p as XYZZ with a random rescaling λ (X·λ², Y·λ³,
// ZZ = (Zλ)², ZZZ = (Zλ)³).
func msmXYZZFromJac(p *curve.G1Jac) msmXYZZ {
	var r msmXYZZ
	var l, l2, l3 = msmRandFp(), msmRandFp(), msmRandFp()
	l2.Square(&l)
	l3.Mul(&l2, &l)
	r.X.Mul(&p.X, &l2)
	r.Y.Mul(&p.Y, &l3)
	var z = p.Z
	z.Mul(&z, &l)
	r.ZZ.Square(&z)
	r.ZZZ.Mul(&r.ZZ, &z)
	return r
}

func TestMSMPlanLayoutIsDisjointAndAligned(t *testing.T) {
	for _, tc := range []struct{ n, c int }{{1, 6}, {1000, 6}, {1 << 16, 11}, {1 << 20, 15}, {1<<24 + 7, 16}} {
		for _, v := range []struct{ withBases, g2 bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			withBases := v.withBases
			p := newMSMPlan(tc.n, tc.c, withBases, v.g2)
			affine, xyzz := msmAffineBytes, msmXYZZBytes
			if v.g2 {
				affine, xyzz = msmAffine2Bytes, msmXYZZ2Bytes
			}
			if p.nwin*p.c < 256 {
				t.Errorf("n=%d c=%d: %d windows cover %d bits, need 256", tc.n, tc.c, p.nwin, p.nwin*p.c)
			}
			if p.nb%p.m != 0 || p.nslices*p.m != p.nb {
				t.Errorf("n=%d c=%d: %d buckets not split into slices of %d", tc.n, tc.c, p.nb, p.m)
			}
			regions := [][2]int{
				{p.offScalars, tc.n * msmScalarBytes},
				{p.offCounts, p.nwin * p.nb * 4}, {p.offBoff, p.nwin * p.nb * 4}, {p.offCursor, p.nwin * p.nb * 4},
				{p.offSegOff, p.nwin * (p.nb + 1) * 4}, {p.offSorted, p.nwin * tc.n * 4},
				{p.offPartials, p.nwin * p.segCap * xyzz}, {p.offSegB, p.nwin * p.segCap * 4},
				{p.offParts, p.nwin * p.nslices * xyzz}, {p.offWSums, p.nwin * xyzz},
			}
			if withBases {
				regions = append(regions, [2]int{p.offBases, tc.n * affine})
			}
			for i, a := range regions {
				if a[0]%256 != 0 || a[0]+a[1] > p.bytes {
					t.Errorf("n=%d c=%d: region %d at %d+%d misaligned or past %d", tc.n, tc.c, i, a[0], a[1], p.bytes)
				}
				for j, b := range regions[:i] {
					if a[0] < b[0]+b[1] && b[0] < a[0]+a[1] {
						t.Errorf("n=%d c=%d: regions %d and %d overlap", tc.n, tc.c, i, j)
					}
				}
			}
		}
	}
}

func TestMSMWindowBitsGrowWithSizeWithinBounds(t *testing.T) {
	prev := 0
	for lg := 0; lg <= 30; lg++ {
		c := msmWindowBits(1 << lg)
		if c < 6 || c > 16 || c < prev {
			t.Fatalf("msmWindowBits(2^%d) = %d (previous %d)", lg, c, prev)
		}
		prev = c
	}
}

// ---- GPU tests: skipped without a device ----

type msmFixture struct {
	ctx    context.Context
	c      *cudaspans.Context
	msm    *MSM
	stream *cudaspans.Stream
	bases  *DeviceBases
	err    error
}

var (
	msmGPUOnce sync.Once
	msmGPUFix  msmFixture
)

// openMSMGPU opens device 0 and compiles the MSM once per test binary; it
// skips the test when there is no device.
func openMSMGPU(t testing.TB) *msmFixture {
	t.Helper()
	msmGPUOnce.Do(func() {
		f := &msmGPUFix
		f.ctx = context.Background()
		f.c, f.err = cudaspans.Open(0)
		if f.err != nil {
			return
		}
		if f.msm, f.err = New(f.ctx, f.c); f.err != nil {
			return
		}
		if f.stream, f.err = f.c.NewStream(); f.err != nil {
			return
		}
		f.bases, f.err = NewDeviceBases(f.ctx, f.c)
	})
	if errors.Is(msmGPUFix.err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", msmGPUFix.err)
	}
	if msmGPUFix.err != nil {
		t.Fatal(msmGPUFix.err)
	}
	return &msmGPUFix
}

var (
	msmRandBasesOnce sync.Once
	msmRandBases     []curve.G1Affine
)

// msmTestBases returns n random points of G1 (a prefix of one random set of
// 2^22, made once with gnark's batch scalar multiplication).
func msmTestBases(t testing.TB, n int) []curve.G1Affine {
	msmRandBasesOnce.Do(func() {
		_, _, g, _ := curve.Generators()
		msmRandBases = curve.BatchScalarMultiplicationG1(&g, msmRandScalars(1<<22))
	})
	if n <= len(msmRandBases) {
		return msmRandBases[:n]
	}
	out := make([]curve.G1Affine, n)
	for i := range out {
		out[i] = msmRandBases[i%len(msmRandBases)]
	}
	return out
}

func msmRandScalars(n int) []fr.Element {
	s := make([]fr.Element, n)
	var wg sync.WaitGroup
	per := (n + runtime.NumCPU() - 1) / runtime.NumCPU()
	for lo := 0; lo < n; lo += per {
		wg.Add(1)
		go func(part []fr.Element) {
			defer wg.Done()
			for i := range part {
				part[i].SetRandom()
			}
		}(s[lo:min(lo+per, n)])
	}
	wg.Wait()
	return s
}

func gnarkMSM(t testing.TB, bases []curve.G1Affine, scalars []fr.Element) curve.G1Jac {
	t.Helper()
	var r curve.G1Jac
	if _, err := r.MultiExp(bases, scalars, ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	return r
}

var msmSetSeq int

func msmPreload(t testing.TB, f *msmFixture, bases []curve.G1Affine) *ResidentBases {
	t.Helper()
	msmSetSeq++
	rb, err := f.bases.PreloadG1(f.ctx, f.stream, prover.BaseSet[curve.G1Affine]{ID: fmt.Sprintf("test-%d", msmSetSeq), Points: bases})
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

func checkMSMAgainstGnark(t *testing.T, f *msmFixture, name string, bases []curve.G1Affine, scalars []fr.Element) {
	t.Helper()
	rb := msmPreload(t, f, bases)
	got, err := f.msm.G1(f.ctx, "", f.stream, rb, scalars)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := gnarkMSM(t, bases, scalars)
	if !got.Equal(&want) {
		t.Fatalf("%s: GPU MSM = %s, gnark MultiExp = %s", name, got.String(), want.String())
	}
}

func TestMSMG1GPUMatchesGnarkOnRandomInputs(t *testing.T) {
	f := openMSMGPU(t)
	for _, lg := range []int{10, 16, 20, 22} {
		n := 1 << lg
		checkMSMAgainstGnark(t, f, fmt.Sprintf("2^%d", lg), msmTestBases(t, n), msmRandScalars(n))
	}
}

func TestMSMG1GPUMatchesGnarkOnEdgeInputs(t *testing.T) {
	f := openMSMGPU(t)
	var one, rm1 fr.Element
	one.SetOne()
	rm1.Neg(&one) // r − 1
	b := msmTestBases(t, 8)
	p, q := b[0], b[1]
	var negP curve.G1Affine
	negP.Neg(&p)
	inf := curve.G1Affine{}

	checkMSMAgainstGnark(t, f, "size 1, scalar 0", []curve.G1Affine{p}, []fr.Element{{}})
	checkMSMAgainstGnark(t, f, "size 1, scalar 1", []curve.G1Affine{p}, []fr.Element{one})
	checkMSMAgainstGnark(t, f, "size 1, scalar r-1", []curve.G1Affine{p}, []fr.Element{rm1})
	checkMSMAgainstGnark(t, f, "size 1, base at infinity", []curve.G1Affine{inf}, []fr.Element{rm1})
	checkMSMAgainstGnark(t, f, "P + P", []curve.G1Affine{p, p}, []fr.Element{one, one})
	checkMSMAgainstGnark(t, f, "P + (-P)", []curve.G1Affine{p, negP}, []fr.Element{one, one})
	checkMSMAgainstGnark(t, f, "mixed", []curve.G1Affine{q, p, p, inf, negP}, []fr.Element{{}, one, rm1, one, rm1})

	// Every scalar r−1 on one repeated base: all points in one bucket per
	// window (the heavy-bucket path, segments merged pairwise).
	for _, n := range []int{5000, 1<<16 + 1} {
		s := make([]fr.Element, n)
		bs := make([]curve.G1Affine, n)
		for i := range s {
			s[i], bs[i] = rm1, p
		}
		checkMSMAgainstGnark(t, f, fmt.Sprintf("heavy bucket %d", n), bs, s)
	}

	// Sizes that are not powers of two, with zeros, ones, r−1, infinity,
	// repeated bases and opposite pairs mixed in.
	for _, n := range []int{3, 1000, 65537, 300001} {
		s := msmRandScalars(n)
		bs := append([]curve.G1Affine(nil), msmTestBases(t, n)...)
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
		checkMSMAgainstGnark(t, f, fmt.Sprintf("mixed %d", n), bs, s)
	}
	// Fewer scalars than bases: the prefix.
	bs := msmTestBases(t, 5000)
	rb := msmPreload(t, f, bs)
	s := msmRandScalars(3000)
	got, err := f.msm.G1(f.ctx, "", f.stream, rb, s)
	if err != nil {
		t.Fatal(err)
	}
	want := gnarkMSM(t, bs[:3000], s)
	if !got.Equal(&want) {
		t.Fatal("prefix MSM differs from gnark")
	}
}

func TestMSMG1GPUChunkedAndHostBasesMatchGnark(t *testing.T) {
	f := openMSMGPU(t)
	chunked, err := New(f.ctx, f.c, WithMaxChunk(1<<12))
	if err != nil {
		t.Fatal(err)
	}
	n := 3*(1<<12) + 77
	bases, scalars := msmTestBases(t, n), msmRandScalars(n)
	want := gnarkMSM(t, bases, scalars)
	rb := msmPreload(t, f, bases)
	got, err := chunked.G1(f.ctx, "", f.stream, rb, scalars)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&want) {
		t.Fatal("chunked MSM differs from gnark")
	}
	got, err = chunked.G1Host(f.ctx, "", f.stream, bases, scalars)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&want) {
		t.Fatal("chunked MSM over host bases differs from gnark")
	}
	for _, c := range []int{8, 13, 16, 18} {
		m, err := New(f.ctx, f.c, WithWindowBits(c))
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.G1(f.ctx, "", f.stream, rb, scalars)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(&want) {
			t.Fatalf("MSM with c=%d differs from gnark", c)
		}
	}
}

func TestMSMG1GPUErrors(t *testing.T) {
	f := openMSMGPU(t)
	bases := msmTestBases(t, 100)
	rb := msmPreload(t, f, bases)
	if _, err := f.msm.G1(f.ctx, "", f.stream, rb, msmRandScalars(101)); err == nil {
		t.Error("more scalars than bases: no error")
	}
	if _, err := f.msm.G1(f.ctx, "", f.stream, nil, msmRandScalars(1)); err == nil {
		t.Error("nil base set: no error")
	}
	if _, err := f.bases.Evict(f.ctx, rb.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.msm.G1(f.ctx, "", f.stream, rb, msmRandScalars(10)); !errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("MSM over an evicted set: %v, want ErrBaseSetEvicted", err)
	}
	if _, err := New(f.ctx, f.c, WithWindowBits(30)); err == nil {
		t.Error("window of 30 bits accepted")
	}
}

func TestMSMG1GPUSplitsIntoChunksWhenMemoryIsShortAndFailsClearlyWhenNone(t *testing.T) {
	f := openMSMGPU(t)
	n := 1 << 20
	bases, scalars := msmTestBases(t, n), msmRandScalars(n)
	want := gnarkMSM(t, bases, scalars)
	// Leave about 256 MiB free: the 2^20 workspace (bases included,
	// about 300 MB) must be split.
	release := msmFillDevice(t, f, 256<<20)
	got, err := f.msm.G1Host(f.ctx, "", f.stream, bases, scalars)
	release()
	if err != nil {
		t.Fatalf("MSM with 256 MiB free: %v", err)
	}
	if !got.Equal(&want) {
		t.Fatal("MSM split for lack of memory differs from gnark")
	}
	release = msmFillDevice(t, f, 0)
	_, err = f.msm.G1Host(f.ctx, "", f.stream, bases, scalars)
	release()
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, cudaspans.ErrOutOfMemory) {
		t.Fatalf("MSM on a full device: %v, want ErrTooLarge and ErrOutOfMemory", err)
	}
}

// msmFillDevice allocates device memory in pieces (one allocation of all
// free memory fails) until about leave bytes stay free, or nothing of
// 64 KiB fits; the returned function frees the pieces.
func msmFillDevice(t *testing.T, f *msmFixture, leave uint64) func() {
	t.Helper()
	var pieces []*cudaspans.DeviceBuffer
	release := func() {
		for _, p := range pieces {
			p.Free()
		}
	}
	piece := uint64(4 << 30)
	for piece >= 64<<10 {
		free, _, err := f.c.MemInfo()
		if err != nil {
			release()
			t.Fatal(err)
		}
		if free <= leave+(64<<10) {
			break
		}
		size := min(piece, free-leave)
		buf, err := f.c.Alloc(f.ctx, int(size))
		if err != nil {
			if !errors.Is(err, cudaspans.ErrOutOfMemory) {
				release()
				t.Fatal(err)
			}
			piece /= 2
			continue
		}
		pieces = append(pieces, buf)
	}
	return release
}

func TestMSMG1GPURecordsSpanWithKernelChildren(t *testing.T) {
	f := openMSMGPU(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c, err := cudaspans.Open(0, cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := buffer.NewReleaser(buffer.ReleaseSync, buffer.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(f.ctx, c, WithTracerProvider(tp), WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	resident, err := NewDeviceBases(context.Background(), c, WithTracerProvider(tp), WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	bases, scalars := msmTestBases(t, 1<<14), msmRandScalars(1<<14)
	set := prover.BaseSet[curve.G1Affine]{ID: "spans", Points: bases}
	want := gnarkMSM(t, bases, scalars)
	for range 2 { // the first call uploads the set, the second reuses it
		got, err := m.G1Resident(f.ctx, otelcuzk.SpanMSMG1A, s, resident, set, scalars)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(&want) {
			t.Fatal("MSM differs from gnark")
		}
	}
	if resident.Bytes() != int64(len(bases))*96 {
		t.Errorf("resident bytes %d, want %d", resident.Bytes(), len(bases)*96)
	}
	if _, err := resident.Evict(f.ctx, "spans"); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	var msm sdktrace.ReadOnlySpan
	for _, sp := range spans {
		if sp.Name() == otelcuzk.SpanMSMG1A && msm == nil {
			msm = sp // the first call's
		}
	}
	if msm == nil {
		t.Fatal("no msm.g1.a span")
	}
	children := map[string]int{}
	for _, sp := range spans {
		if sp.Parent().SpanID() == msm.SpanContext().SpanID() {
			children[sp.Name()]++
			if sp.StartTime().Before(msm.StartTime()) || sp.EndTime().After(msm.EndTime()) {
				t.Errorf("child %s not inside msm.g1.a", sp.Name())
			}
		}
	}
	for _, k := range []string{"msm_digits_count", "msm_scatter", "msm_bucket_accumulate", "msm_bucket_reduce",
		"msm_window_sum", otelcuzk.SpanMemcpyHtoD, otelcuzk.SpanBufferRelease, otelcuzk.SpanKeysPreload} {
		if children[k] == 0 {
			t.Errorf("msm.g1.a has no %s child (children: %v)", k, children)
		}
	}
	var hits []bool
	var releases int
	for _, sp := range spans {
		switch sp.Name() {
		case otelcuzk.SpanKeysPreload:
			for _, a := range sp.Attributes() {
				if a.Key == otelcuzk.KeyKeyCacheHit {
					hits = append(hits, a.Value.AsBool())
				}
			}
		case otelcuzk.SpanBufferRelease:
			releases++
		}
	}
	if len(hits) != 2 || hits[0] || !hits[1] {
		t.Errorf("keys.preload cache hits %v, want [false true]", hits)
	}
	if releases != 3 { // two workspaces and the evicted set
		t.Errorf("%d buffer.release spans, want 3", releases)
	}
}

// ---- benchmarks: GPU against gnark-crypto on the same host ----

// BenchmarkMSMG1 times Σ sᵢ·Pᵢ at 2^20, 2^22 and 2^24 (MSM_BENCH_MAX_LOG
// caps the size) on the GPU (bases resident, scalars copied from Go
// memory each time, result on the host) and with gnark-crypto's MultiExp
// on all cores.
func BenchmarkMSMG1(b *testing.B) {
	maxLog := 24
	if v := os.Getenv("MSM_BENCH_MAX_LOG"); v != "" {
		fmt.Sscan(v, &maxLog)
	}
	for _, lg := range []int{20, 22, 24} {
		if lg > maxLog {
			continue
		}
		n := 1 << lg
		bases, scalars := msmTestBases(b, n), msmRandScalars(n)
		b.Run(fmt.Sprintf("gpu/2^%d", lg), func(b *testing.B) {
			f := openMSMGPU(b)
			rb := msmPreload(b, f, bases)
			if _, err := f.msm.G1(f.ctx, "", f.stream, rb, scalars); err != nil { // warm up
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := f.msm.G1(f.ctx, "", f.stream, rb, scalars); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("cpu/2^%d", lg), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				gnarkMSM(b, bases, scalars)
			}
		})
	}
}
