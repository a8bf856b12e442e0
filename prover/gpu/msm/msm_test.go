package msm

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"runtime"
	"slices"
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
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// ---- host-side parts (no GPU) ----

func TestMSMWindowCombinationMatchesGnark(t *testing.T) {
	// Window sums as XYZZ with random Z, combined by Horner, against
	// Σ 2^(c·w)·S_w computed with gnark's scalar multiplication.
	g1, g2, _, _ := curve.Generators()
	t.Run("G1", func(t *testing.T) {
		testWindowCombination(t, 13, 20, 3, g1, func(p *curve.G1Jac) msmXYZZ {
			var r msmXYZZ
			r.X, r.Y, r.ZZ, r.ZZZ = rescaledXYZZ(&p.X, &p.Y, &p.Z, msmRandFp())
			return r
		})
	})
	t.Run("G2", func(t *testing.T) {
		testWindowCombination(t, 11, 24, 5, g2, func(p *curve.G2Jac) msmXYZZ2 {
			var r msmXYZZ2
			r.X, r.Y, r.ZZ, r.ZZZ = rescaledXYZZ(&p.X, &p.Y, &p.Z, curve.E2{A0: msmRandFp(), A1: msmRandFp()})
			return r
		})
	})
}

// testJacobian is what the window test uses of gnark's Jacobian points.
type testJacobian[J any] interface {
	jacobian[J]
	ScalarMultiplication(*J, *big.Int) *J
	Equal(*J) bool
	String() string
}

// testWindowCombination combines nwin window sums of c bits (window empty
// at infinity), each a random multiple of g as XYZZ (fromXYZZ), and
// compares with gnark.
func testWindowCombination[J any, PJ testJacobian[J], X windowSum[J]](t *testing.T, c, nwin, empty int, g J, fromJac func(*J) X) {
	ws := make([]X, nwin)
	want := infinity[J, X]()
	for w := range ws {
		var s fr.Element
		s.SetRandom()
		var p J
		PJ(&p).ScalarMultiplication(&g, s.BigInt(new(big.Int)))
		if w == empty {
			p = infinity[J, X]()
		}
		ws[w] = fromJac(&p)
		var term J
		PJ(&term).ScalarMultiplication(&p, new(big.Int).Lsh(big.NewInt(1), uint(c*w)))
		PJ(&want).AddAssign(&term)
	}
	got := combineWindows[J, PJ](ws, c)
	if !PJ(&got).Equal(&want) {
		t.Fatalf("combined windows = %s, want %s", PJ(&got).String(), PJ(&want).String())
	}
}

func msmRandFp() fp.Element {
	var x fp.Element
	x.SetRandom()
	return x
}

// fieldOps is what rescaledXYZZ uses of gnark's Fp and Fp2 elements.
type fieldOps[F any] interface {
	*F
	Square(*F) *F
	Mul(*F, *F) *F
}

// rescaledXYZZ returns the Jacobian point (x, y, z) as XYZZ rescaled by l:
// (x·l², y·l³, (z·l)², (z·l)³).
func rescaledXYZZ[F any, PF fieldOps[F]](x, y, z *F, l F) (X, Y, ZZ, ZZZ F) {
	var l2, l3, zl F
	PF(&l2).Square(&l)
	PF(&l3).Mul(&l2, &l)
	PF(&X).Mul(x, &l2)
	PF(&Y).Mul(y, &l3)
	PF(&zl).Mul(z, &l)
	PF(&ZZ).Square(&zl)
	PF(&ZZZ).Mul(&ZZ, &zl)
	return X, Y, ZZ, ZZZ
}

func TestMSMPlanLayoutIsDisjointAndAligned(t *testing.T) {
	for _, tc := range []struct{ n, c int }{{1, 6}, {1000, 6}, {1 << 16, 11}, {1 << 20, 15}, {1<<24 + 7, 16}} {
		for _, v := range []struct {
			withBases, g2 bool
			affine        int
		}{{false, false, 0}, {true, false, 0}, {false, true, 0}, {true, true, 0}, {false, false, 16}, {true, true, 16}} {
			withBases := v.withBases
			p := newMSMPlan(tc.n, tc.c, withBases, v.g2, v.affine)
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
			if v.affine > 0 {
				// Every level's output of a window fits its stride: the
				// first in r1, the later ones in r2 (msmaffine.cuh's bound).
				if p.r1 < (tc.n+1)/2+p.nb || p.r2 < (tc.n+3)/4+p.nb {
					t.Errorf("n=%d c=%d: affine strides %d, %d too small", tc.n, tc.c, p.r1, p.r2)
				}
				wb := p.nwin * p.nb * 4
				regions = append(regions, [2]int{p.offX, p.nwin * p.r1 * affine}, [2]int{p.offY, p.nwin * p.r2 * affine},
					[2]int{p.offCntA, wb}, [2]int{p.offOffA, wb}, [2]int{p.offTot, p.nwin * 4}, [2]int{p.offMax, 4})
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

// tracedMSM is a second device context, MSM, DeviceBases and stream, all
// recording into rec through one TracerProvider and a synchronous
// Releaser.
type tracedMSM struct {
	rec    *tracetest.SpanRecorder
	msm    *MSM
	bases  *DeviceBases
	stream *cudaspans.Stream
}

// openTracedMSMGPU opens a tracedMSM (after openMSMGPU, which skips
// without a device); it is closed when the test ends.
func openTracedMSMGPU(t *testing.T) *tracedMSM {
	t.Helper()
	ctx := context.Background()
	rec, tp := spantest.New()
	c, err := cudaspans.Open(0, cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rel, err := buffer.NewReleaser(buffer.ReleaseSync, buffer.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(ctx, c, WithTracerProvider(tp), WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	bases, err := NewDeviceBases(ctx, c, WithTracerProvider(tp), WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bases.EvictAll(ctx) })
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	return &tracedMSM{rec: rec, msm: m, bases: bases, stream: s}
}

// msmTestBases returns n random points of G1 (a prefix of one random set of
// 2^22, made once with gnark's batch scalar multiplication).
func msmTestBases(t testing.TB, n int) []curve.G1Affine { return g1Bases.first(n) }

var g1Bases = &baseSet[curve.G1Affine]{gen: func() []curve.G1Affine {
	_, _, g, _ := curve.Generators()
	return curve.BatchScalarMultiplicationG1(&g, msmRandScalars(1<<22))
}}

// baseSet is a set of test bases made once, on first use, by gen.
type baseSet[A any] struct {
	once   sync.Once
	points []A
	gen    func() []A
}

// first returns the first n points of the set, repeated past its length.
func (b *baseSet[A]) first(n int) []A {
	b.once.Do(func() { b.points = b.gen() })
	if n <= len(b.points) {
		return b.points[:n]
	}
	out := make([]A, n)
	for i := range out {
		out[i] = b.points[i%len(b.points)]
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

// multiExp is what the GPU tests use of gnark's Jacobian points (*G1Jac,
// *G2Jac): the reference MSM and the comparison.
type multiExp[J, A any] interface {
	*J
	MultiExp([]A, []fr.Element, ecc.MultiExpConfig) (*J, error)
	Equal(*J) bool
	String() string
}

// testGroup is one group under test: its name in messages and set ids,
// and its methods (method expressions) that preload a base set and run the
// device MSM over resident and host bases.
type testGroup[A, J any, PJ multiExp[J, A]] struct {
	name     string
	preload  func(*DeviceBases, context.Context, *cudaspans.Stream, backend.BaseSet[A]) (*ResidentBases, error)
	resident func(*MSM, context.Context, backend.Call, *cudaspans.Stream, *ResidentBases, []fr.Element) (J, error)
	hostMSM  func(*MSM, context.Context, backend.Call, *cudaspans.Stream, []A, []fr.Element) (J, error)
}

var (
	msmG1 = testGroup[curve.G1Affine, curve.G1Jac, *curve.G1Jac]{"G1", (*DeviceBases).PreloadG1, (*MSM).G1, (*MSM).G1Host}
	msmG2 = testGroup[curve.G2Affine, curve.G2Jac, *curve.G2Jac]{"G2", (*DeviceBases).PreloadG2, (*MSM).G2, (*MSM).G2Host}
)

// run is m's MSM of scalars over the resident set rb, on f's stream.
func (g testGroup[A, J, PJ]) run(m *MSM, f *msmFixture, rb *ResidentBases, scalars []fr.Element) (J, error) {
	return g.resident(m, f.ctx, backend.Call{}, f.stream, rb, scalars)
}

// host is m's MSM of scalars over bases in host memory, on f's stream.
func (g testGroup[A, J, PJ]) host(m *MSM, f *msmFixture, bases []A, scalars []fr.Element) (J, error) {
	return g.hostMSM(m, f.ctx, backend.Call{}, f.stream, bases, scalars)
}

// gnark is gnark-crypto's MultiExp of bases and scalars.
func (g testGroup[A, J, PJ]) gnark(t testing.TB, bases []A, scalars []fr.Element) J {
	t.Helper()
	var r J
	if _, err := PJ(&r).MultiExp(bases, scalars, ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	return r
}

var msmSetSeq int

// preloadSet makes bases a resident set under a fresh id, evicted when the
// test ends.
func (g testGroup[A, J, PJ]) preloadSet(t testing.TB, f *msmFixture, bases []A) *ResidentBases {
	t.Helper()
	msmSetSeq++
	rb, err := g.preload(f.bases, f.ctx, f.stream, backend.BaseSet[A]{ID: fmt.Sprintf("test-%s-%d", g.name, msmSetSeq), Points: bases})
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

// check runs the device MSM of scalars over bases (preloaded) against gnark.
func (g testGroup[A, J, PJ]) check(t *testing.T, f *msmFixture, name string, bases []A, scalars []fr.Element) {
	t.Helper()
	rb := g.preloadSet(t, f, bases)
	got, err := g.run(f.msm, f, rb, scalars)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := g.gnark(t, bases, scalars)
	if !PJ(&got).Equal(&want) {
		t.Fatalf("%s: GPU %s MSM = %s, gnark MultiExp = %s", name, g.name, PJ(&got).String(), PJ(&want).String())
	}
}

// checkTooManyScalarsAndEvicted checks that g's MSM over rb, a resident
// set of n bases, refuses n+1 scalars, and after rb is evicted fails with
// ErrBaseSetEvicted.
func (g testGroup[A, J, PJ]) checkTooManyScalarsAndEvicted(t *testing.T, f *msmFixture, rb *ResidentBases, n int) {
	t.Helper()
	if _, err := g.run(f.msm, f, rb, msmRandScalars(n+1)); err == nil {
		t.Errorf("%s: more scalars than bases: no error", g.name)
	}
	if _, err := f.bases.Evict(f.ctx, rb.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.run(f.msm, f, rb, msmRandScalars(10)); !errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("%s MSM over an evicted set: %v, want ErrBaseSetEvicted", g.name, err)
	}
}

// checkEdgeInputs checks g's device MSM against gnark on edge inputs: size
// 1 with scalar 0, 1 and r−1 and a base at infinity, P + P, P + (−P), and
// a mix of these; every scalar r−1 on one repeated base at the heavy sizes
// (all points in one bucket per window: the heavy-bucket path, segments
// merged pairwise); and at the mixed sizes, which are not powers of two,
// random scalars and bases with zeros, ones, r−1, infinity, repeated bases
// and opposite pairs mixed in.
func checkEdgeInputs[A, J any, PJ multiExp[J, A], PA interface {
	*A
	Neg(*A) *A
}](t *testing.T, f *msmFixture, g testGroup[A, J, PJ], bases func(testing.TB, int) []A, heavy, mixed []int) {
	t.Helper()
	var one, rm1 fr.Element
	one.SetOne()
	rm1.Neg(&one) // r − 1
	b := bases(t, 8)
	p, q := b[0], b[1]
	var negP, inf A
	PA(&negP).Neg(&p)

	g.check(t, f, "size 1, scalar 0", []A{p}, []fr.Element{{}})
	g.check(t, f, "size 1, scalar 1", []A{p}, []fr.Element{one})
	g.check(t, f, "size 1, scalar r-1", []A{p}, []fr.Element{rm1})
	g.check(t, f, "size 1, base at infinity", []A{inf}, []fr.Element{rm1})
	g.check(t, f, "P + P", []A{p, p}, []fr.Element{one, one})
	g.check(t, f, "P + (-P)", []A{p, negP}, []fr.Element{one, one})
	g.check(t, f, "mixed", []A{q, p, p, inf, negP}, []fr.Element{{}, one, rm1, one, rm1})

	for _, n := range heavy {
		s := make([]fr.Element, n)
		bs := make([]A, n)
		for i := range s {
			s[i], bs[i] = rm1, p
		}
		g.check(t, f, fmt.Sprintf("heavy bucket %d", n), bs, s)
	}
	for _, n := range mixed {
		s := msmRandScalars(n)
		bs := append([]A(nil), bases(t, n)...)
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
				PA(&bs[i]).Neg(&bs[i-6])
				s[i] = s[i-6]
			}
		}
		g.check(t, f, fmt.Sprintf("mixed %d", n), bs, s)
	}
}

func TestMSMG1GPUMatchesGnarkOnRandomInputs(t *testing.T) {
	f := openMSMGPU(t)
	for _, lg := range []int{10, 16, 20, 22} {
		n := 1 << lg
		msmG1.check(t, f, fmt.Sprintf("2^%d", lg), msmTestBases(t, n), msmRandScalars(n))
	}
}

func TestMSMG1GPUMatchesGnarkOnEdgeInputs(t *testing.T) {
	f := openMSMGPU(t)
	checkEdgeInputs(t, f, msmG1, msmTestBases, []int{5000, 1<<16 + 1}, []int{3, 1000, 65537, 300001})
	// Fewer scalars than bases: the prefix.
	bs := msmTestBases(t, 5000)
	rb := msmG1.preloadSet(t, f, bs)
	s := msmRandScalars(3000)
	got, err := f.msm.G1(f.ctx, backend.Call{}, f.stream, rb, s)
	if err != nil {
		t.Fatal(err)
	}
	want := msmG1.gnark(t, bs[:3000], s)
	if !got.Equal(&want) {
		t.Fatal("prefix MSM differs from gnark")
	}
}

func TestMSMG1GPUChunkedAndHostBasesMatchGnark(t *testing.T) {
	checkChunkedHostAndWindows(t, openMSMGPU(t), msmG1, msmTestBases, 3*(1<<12)+77, []int{8, 13, 16, 18})
}

// checkChunkedHostAndWindows checks g's MSM of n points against gnark: in
// chunks of 2^12 over resident and over host bases, at each window size of
// windows, and over a prefix of the resident set.
func checkChunkedHostAndWindows[A, J any, PJ multiExp[J, A]](t *testing.T, f *msmFixture, g testGroup[A, J, PJ], bases func(testing.TB, int) []A, n int, windows []int) {
	t.Helper()
	chunked, err := New(f.ctx, f.c, WithMaxChunk(1<<12))
	if err != nil {
		t.Fatal(err)
	}
	defer chunked.Close()
	points, scalars := bases(t, n), msmRandScalars(n)
	want := g.gnark(t, points, scalars)
	rb := g.preloadSet(t, f, points)
	same := func(what string, got J, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !PJ(&got).Equal(&want) {
			t.Fatalf("%s %s MSM differs from gnark", what, g.name)
		}
	}
	got, err := g.run(chunked, f, rb, scalars)
	same("chunked", got, err)
	got, err = g.host(chunked, f, points, scalars)
	same("chunked, over host bases,", got, err)
	for _, c := range windows {
		m, err := New(f.ctx, f.c, WithWindowBits(c))
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.run(m, f, rb, scalars)
		m.Close()
		same(fmt.Sprintf("c=%d", c), got, err)
	}
	// A prefix of the set.
	got, err = g.run(f.msm, f, rb, scalars[:1234])
	want = g.gnark(t, points[:1234], scalars[:1234])
	same("prefix", got, err)
}

func TestMSMG1GPUErrors(t *testing.T) {
	f := openMSMGPU(t)
	bases := msmTestBases(t, 100)
	if _, err := f.msm.G1(f.ctx, backend.Call{}, f.stream, nil, msmRandScalars(1)); err == nil {
		t.Error("nil base set: no error")
	}
	msmG1.checkTooManyScalarsAndEvicted(t, f, msmG1.preloadSet(t, f, bases), len(bases))
	if _, err := New(f.ctx, f.c, WithWindowBits(30)); err == nil {
		t.Error("window of 30 bits accepted")
	}
}

func TestMSMG1GPUSplitsIntoChunksWhenMemoryIsShortAndFailsClearlyWhenNone(t *testing.T) {
	f := openMSMGPU(t)
	n := 1 << 20
	bases, scalars := msmTestBases(t, n), msmRandScalars(n)
	want := msmG1.gnark(t, bases, scalars)
	// Leave about 256 MiB free: the 2^20 workspace (bases included,
	// about 300 MB) must be split.
	release := msmFillDevice(t, f, 256<<20)
	got, err := f.msm.G1Host(f.ctx, backend.Call{}, f.stream, bases, scalars)
	release()
	if err != nil {
		t.Fatalf("MSM with 256 MiB free: %v", err)
	}
	if !got.Equal(&want) {
		t.Fatal("MSM split for lack of memory differs from gnark")
	}
	release = msmFillDevice(t, f, 0)
	_, err = f.msm.G1Host(f.ctx, backend.Call{}, f.stream, bases, scalars)
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
	tf := openTracedMSMGPU(t)
	rec, m, resident, s := tf.rec, tf.msm, tf.bases, tf.stream
	bases, scalars := msmTestBases(t, 1<<14), msmRandScalars(1<<14)
	set := backend.BaseSet[curve.G1Affine]{ID: "spans", Points: bases}
	want := msmG1.gnark(t, bases, scalars)
	for range 2 { // the first call uploads the set, the second reuses it
		got, err := m.G1Resident(f.ctx, backend.Call{Span: semconv.SpanMSMG1A}, s, resident, set, scalars)
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
		if sp.Name() == semconv.SpanMSMG1A && msm == nil {
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
	for _, k := range []string{"msm_digits_count", "msm_scatter", "msm_bucket_accumulate", "msm_segment_merge", "msm_bucket_reduce",
		"msm_window_sum", semconv.SpanMemcpyHtoD, semconv.SpanBufferRelease, semconv.SpanKeysPreload} {
		if children[k] == 0 {
			t.Errorf("msm.g1.a has no %s child (children: %v)", k, children)
		}
	}
	var hits []bool
	var releases int
	for _, sp := range spans {
		switch sp.Name() {
		case semconv.SpanKeysPreload:
			for _, a := range sp.Attributes() {
				if a.Key == semconv.KeyKeyCacheHit {
					hits = append(hits, a.Value.AsBool())
				}
			}
		case semconv.SpanBufferRelease:
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
func BenchmarkMSMG1(b *testing.B) { benchMSM(b, msmG1, msmTestBases, 24, 20, 22, 24) }

// benchMSM times g's MSM at the log sizes up to MSM_BENCH_MAX_LOG (default
// maxLog) on the GPU (bases resident, scalars copied from Go memory each
// time, result on the host) and with gnark-crypto's MultiExp on all cores.
func benchMSM[A, J any, PJ multiExp[J, A]](b *testing.B, g testGroup[A, J, PJ], bases func(testing.TB, int) []A, maxLog int, logs ...int) {
	if v := os.Getenv("MSM_BENCH_MAX_LOG"); v != "" {
		fmt.Sscan(v, &maxLog)
	}
	for _, lg := range logs {
		if lg > maxLog {
			continue
		}
		n := 1 << lg
		points, scalars := bases(b, n), msmRandScalars(n)
		b.Run(fmt.Sprintf("gpu/2^%d", lg), func(b *testing.B) {
			f := openMSMGPU(b)
			rb := g.preloadSet(b, f, points)
			if _, err := g.run(f.msm, f, rb, scalars); err != nil { // warm up
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := g.run(f.msm, f, rb, scalars); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("cpu/2^%d", lg), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				g.gnark(b, points, scalars)
			}
		})
	}
}

// TestMSMGPUBucketSumVariantsMatchGnarkOnEdgeInputs: the XYZZ bucket sums
// (WithAffineBuckets(0)) and the affine ones with tail 1 (every level, down
// to one point per bucket: the heavy buckets take 13 levels) and 64 (few
// levels, long XYZZ tails) equal gnark-crypto on the edge inputs, G1 and
// G2, as the default (tail MSM_AFFINE_TAIL) does in the tests above.
func TestMSMGPUBucketSumVariantsMatchGnarkOnEdgeInputs(t *testing.T) {
	f := openMSMGPU(t)
	for _, tail := range []int{0, 1, 64} {
		t.Run(fmt.Sprintf("tail %d", tail), func(t *testing.T) {
			m, err := New(f.ctx, f.c, WithAffineBuckets(tail), WithG2())
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			fx := *f
			fx.msm = m
			checkEdgeInputs(t, &fx, msmG1, msmTestBases, []int{5000}, []int{1000, 65537})
			checkEdgeInputs(t, &fx, msmG2, msmTestBasesG2, []int{5000}, []int{1000})
		})
	}
}

// TestAffineBucketsOptionSetsBothGroupsTails: without the option both
// groups sum their buckets by the defaults (G1 XYZZ, G2 affine up to 2^23 points); WithAffineBuckets(t)
// sets both, and a tail below 1 means XYZZ; the workspace grows by the
// levels' buffers; the levels stop at the tail; Modules lists the affine
// part only for a group whose default uses it, AffineModules both.
func TestAffineBucketsOptionSetsBothGroupsTails(t *testing.T) {
	for _, tc := range []struct {
		opts          []Option
		g1, g2, maxG2 int
	}{
		{nil, defaultAffineTailG1, defaultAffineTailG2, defaultAffineMaxG2},
		{[]Option{WithAffineBuckets(16)}, 16, 16, 0},
		{[]Option{WithAffineBuckets(0)}, 0, 0, 0},
		{[]Option{WithAffineBuckets(-3)}, 0, 0, 0},
	} {
		cfg, err := newMSMConfig(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if g1, g2, maxG2 := cfg.affineTails(); g1 != tc.g1 || g2 != tc.g2 || maxG2 != tc.maxG2 {
			t.Errorf("%d options: tails %d, %d (G2 up to %d); want %d, %d (%d)", len(tc.opts), g1, g2, maxG2, tc.g1, tc.g2, tc.maxG2)
		}
	}
	// The G2 default: affine (tail 64) up to 2^23 points, XYZZ above, so
	// its workspace grows by the levels' buffers at 2^22 and not at 2^24;
	// an explicit tail applies at every size.
	def := &MSM{}
	def.affineG1, def.affineG2, def.affineMaxG2 = (&msmConfig{}).affineTails()
	if def.affineTail(true, 1<<22) != 64 || def.affineTail(true, 1<<23) != 64 || def.affineTail(true, 1<<23+1) != 0 ||
		def.affineTail(false, 1<<20) != 0 {
		t.Errorf("default tails: G2 2^22 %d, 2^23 %d, 2^23+1 %d, G1 %d; want 64, 64, 0, 0", def.affineTail(true, 1<<22),
			def.affineTail(true, 1<<23), def.affineTail(true, 1<<23+1), def.affineTail(false, 1<<20))
	}
	plain := &MSM{}
	if w, x := def.WorkspaceBytes(1<<22, true), plain.WorkspaceBytes(1<<22, true); w-x < 9<<30 {
		t.Errorf("G2 2^22 default workspace %d bytes, XYZZ %d: want the affine levels' ~9.9 GB more", w, x)
	}
	if w, x := def.WorkspaceBytes(1<<24, true), plain.WorkspaceBytes(1<<24, true); w != x {
		t.Errorf("G2 2^24 default workspace %d bytes, XYZZ %d: want XYZZ's above 2^23", w, x)
	}
	explicit := &MSM{affineG2: 16}
	if explicit.affineTail(true, 1<<24) != 16 {
		t.Errorf("WithAffineBuckets(16): G2 2^24 tail %d, want 16", explicit.affineTail(true, 1<<24))
	}
	xyzz := (&MSM{}).WorkspaceBytes(1<<20, false)
	affine := (&MSM{affineG1: 16}).WorkspaceBytes(1<<20, false)
	// 16 windows of 2^20 points: the levels hold about 3/4·16·2^20 points.
	if extra := affine - xyzz; extra < 12<<20*msmAffineBytes {
		t.Errorf("affine workspace %d bytes, XYZZ %d: the levels' %d extra bytes are too few", affine, xyzz, extra)
	}
	mods := map[string]bool{}
	for _, m := range Modules(cudaspans.CompileOptions{}) {
		mods[m.Name] = true
	}
	if mods["msm_affine"] != (defaultAffineTailG1 > 0) || mods["msm_affine_g2"] != (defaultAffineTailG2 > 0) {
		t.Errorf("Modules: affine parts %v, %v with default tails %d, %d", mods["msm_affine"], mods["msm_affine_g2"],
			defaultAffineTailG1, defaultAffineTailG2)
	}
	var names []string
	for _, m := range AffineModules(cudaspans.CompileOptions{}) {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"msm_affine", "msm_affine_g2"}) {
		t.Errorf("AffineModules = %v", names)
	}
	for _, tc := range []struct{ max, tail, want int }{{0, 16, 0}, {16, 16, 0}, {17, 16, 1}, {600, 16, 6}, {600, 32, 5}, {1 << 24, 1, 24}} {
		if got := affineLevels(tc.max, tc.tail); got != tc.want {
			t.Errorf("affineLevels(%d, %d) = %d, want %d", tc.max, tc.tail, got, tc.want)
		}
	}
}
