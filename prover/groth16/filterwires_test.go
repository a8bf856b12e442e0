package groth16

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"go.opentelemetry.io/otel/codes"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// filterWiresSerial is the serial filter filterWires replaced: the
// reference its output must equal element for element.
func filterWiresSerial(wires []fr.Element, infinity []bool) []fr.Element {
	var out []fr.Element
	for i := range wires {
		if !infinity[i] {
			out = append(out, wires[i])
		}
	}
	return out
}

// testWires returns n distinct wires (wire i is i+1 in the field, so a
// wire copied to the wrong place or twice is seen).
func testWires(n int) []fr.Element {
	w := make([]fr.Element, n)
	for i := range w {
		w[i].SetUint64(uint64(i) + 1)
	}
	return w
}

// testMasks returns the infinity masks of length n the tests run: all at
// infinity, none, alternating from either parity, random at three
// densities, and long runs of each.
func testMasks(n int, rng *rand.Rand) map[string][]bool {
	masks := map[string][]bool{}
	gen := func(name string, f func(i int) bool) {
		m := make([]bool, n)
		for i := range m {
			m[i] = f(i)
		}
		masks[name] = m
	}
	gen("all-infinite", func(int) bool { return true })
	gen("all-finite", func(int) bool { return false })
	gen("alternating-even", func(i int) bool { return i%2 == 0 })
	gen("alternating-odd", func(i int) bool { return i%2 == 1 })
	for _, p := range []float64{0.1, 0.5, 0.9} {
		gen(fmt.Sprintf("random-%.1f", p), func(int) bool { return rng.Float64() < p })
	}
	gen("runs-of-1000", func(i int) bool { return (i/1000)%3 == 0 })
	return masks
}

func countTrue(m []bool) int {
	k := 0
	for _, b := range m {
		if b {
			k++
		}
	}
	return k
}

// checkFilter runs filterWiresOn on every mask of length n and compares
// with the serial filter.
func checkFilter(t *testing.T, n, chunk, workers int, rng *rand.Rand) {
	t.Helper()
	wires := testWires(n)
	for name, mask := range testMasks(n, rng) {
		want := filterWiresSerial(wires, mask)
		hb, got, err := filterWiresOn(nil, wires, mask, countTrue(mask), chunk, workers)
		if err != nil {
			t.Fatalf("n=%d chunk=%d workers=%d %s: %v", n, chunk, workers, name, err)
		}
		if len(want) == 0 {
			if hb != nil || got != nil {
				t.Errorf("n=%d %s: no finite wire, got a buffer of %d wires", n, name, len(got))
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("n=%d chunk=%d workers=%d %s: output differs from the serial filter", n, chunk, workers, name)
		}
		if hb == nil || hb.Size() != len(want)*fr.Bytes {
			t.Errorf("n=%d %s: buffer of %v bytes for %d wires", n, name, hb, len(want))
		}
		if err := hb.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFilterWiresEqualsSerialFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// The production chunk and goroutine count, at the chunk boundaries.
	for _, n := range []int{0, 1, 2, filterChunk - 1, filterChunk, filterChunk + 1, 3*filterChunk + 5} {
		checkFilter(t, n, filterChunk, 4, rng)
	}
	// Small chunks, so that many chunks meet few goroutines, unequal work.
	for _, n := range []int{0, 1, 6, 7, 8, 13, 14, 15, 100, 1001} {
		for _, workers := range []int{1, 2, 3, 8} {
			checkFilter(t, n, 7, workers, rng)
		}
	}
	// filterWires itself (GOMAXPROCS goroutines).
	wires := testWires(5*filterChunk + 3)
	for name, mask := range testMasks(len(wires), rng) {
		hb, got, err := filterWires(nil, wires, mask, countTrue(mask))
		if err != nil {
			t.Fatal(err)
		}
		if want := filterWiresSerial(wires, mask); !slices.Equal(got, want) {
			t.Errorf("filterWires %s: output differs from the serial filter", name)
		}
		if hb != nil {
			hb.Free()
		}
	}
}

func TestCountFiniteCountsEveryFlag(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	flags := make([]bool, 100)
	for i := range flags {
		flags[i] = rng.IntN(2) == 0
	}
	// Every length and start, so the eight-at-a-time loop meets every
	// alignment and tail.
	for lo := 0; lo < 9; lo++ {
		for hi := lo; hi <= len(flags); hi++ {
			want := (hi - lo) - countTrue(flags[lo:hi])
			if got := countFinite(flags[lo:hi]); got != want {
				t.Fatalf("countFinite(flags[%d:%d]) = %d, want %d", lo, hi, got, want)
			}
		}
	}
	all := make([]bool, 1000)
	if got := countFinite(all); got != 1000 {
		t.Errorf("countFinite(1000 false) = %d", got)
	}
	for i := range all {
		all[i] = true
	}
	if got := countFinite(all); got != 0 {
		t.Errorf("countFinite(1000 true) = %d", got)
	}
}

func TestFilterWiresRejectsACountTheKeyDisagreesWith(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 3*filterChunk + 1
	wires := testWires(n)
	mask := testMasks(n, rng)["random-0.5"]
	inf := countTrue(mask)
	size := (n - inf) * fr.Bytes
	cases := []struct {
		name       string
		mask       []bool
		nbInfinity int
		msg        string
	}{
		{"key says one more at infinity", mask, inf + 1, fmt.Sprintf("%d finite bases counted, key says %d", n-inf, n-inf-1)},
		{"key says one fewer at infinity", mask, inf - 1, fmt.Sprintf("%d finite bases counted, key says %d", n-inf, n-inf+1)},
		{"key says every wire at infinity", mask, n, fmt.Sprintf("%d finite bases counted, key says 0", n-inf)},
		{"key says more at infinity than wires", mask, n + 1, fmt.Sprintf("%d finite bases counted, key says -1", n-inf)},
		{"no wire at infinity, key says one", make([]bool, n), 1, fmt.Sprintf("%d finite bases counted, key says %d", n, n-1)},
		{"flags short of the wires", mask[:n-1], inf, fmt.Sprintf("%d infinity flags for %d wires", n-1, n)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A pool holding a buffer of the right size: the failed filter
			// must leave it in the pool, neither take nor leak it.
			rel, err := buffer.NewReleaser(buffer.ReleasePool)
			if err != nil {
				t.Fatal(err)
			}
			defer rel.Close(context.Background())
			pooled, err := buffer.NewMmap(size)
			if err != nil {
				t.Fatal(err)
			}
			if err := rel.Release(context.Background(), "wires.a", pooled); err != nil {
				t.Fatal(err)
			}
			hb, got, err := filterWires(rel, wires, c.mask, c.nbInfinity)
			if !errors.Is(err, ErrKeyMismatch) {
				t.Fatalf("err = %v, want ErrKeyMismatch", err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err = %q, want it to say %q", err, c.msg)
			}
			if hb != nil || got != nil {
				t.Errorf("error with a buffer of %d wires", len(got))
			}
			if back := rel.Reuse(size); back != pooled {
				t.Errorf("pooled buffer not in the pool after the error (got %p, want %p)", back, pooled)
			}
		})
	}
}

// A key whose [B] infinity count disagrees with its flags fails the proof
// in groth16.filter_wires, a child of groth16.prove with the error, and
// the wires.a buffer already made is released.
func TestProveFailsInFilterWiresAndReleasesItsBuffers(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	bad := *f.PK.(*groth16_bls12381.ProvingKey) // shallow: the fixture's key is shared
	bad.NbInfinityB++
	tp, exp := spantest.NewMemory()
	rel, err := buffer.NewReleaser(buffer.ReleasePool, buffer.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close(context.Background())
	_, err = Prove(context.Background(), f.CCS, &bad, f.Witness, WithTracerProvider(tp), WithReleaser(rel))
	if !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("err = %v, want ErrKeyMismatch", err)
	}
	if !strings.Contains(err.Error(), "filter wires") {
		t.Errorf("err = %q does not name the step", err)
	}
	tree := spantest.NewTree(exp.GetSpans())
	spans := tree.Named(semconv.SpanFilterWires)
	if len(spans) != 1 {
		t.Fatalf("%d %s spans, want 1", len(spans), semconv.SpanFilterWires)
	}
	fs := spans[0]
	if p, _ := tree.Parent(fs); p.Name != semconv.SpanGroth16Prove {
		t.Errorf("%s: parent %q, want %s", fs.Name, p.Name, semconv.SpanGroth16Prove)
	}
	if fs.Status.Code != codes.Error {
		t.Errorf("%s status %v, want Error", fs.Name, fs.Status.Code)
	}
	if v, _ := spantest.StubValue(fs, string(semconv.KeyErrorType)); v != semconv.ErrorTypeKeyMismatch {
		t.Errorf("%s error.type %q, want %q", fs.Name, v, semconv.ErrorTypeKeyMismatch)
	}
	released := map[string]bool{}
	for _, s := range tree.Named(semconv.SpanBufferRelease) {
		v, _ := spantest.StubValue(s, string(semconv.KeyBufferName))
		released[v] = true
	}
	for _, name := range []string{"wires.a", "wires", "h", "b", "c"} {
		if !released[name] {
			t.Errorf("buffer %s not released after the failed proof (released: %v)", name, released)
		}
	}
	if released["wires.b"] {
		t.Error("wires.b released, but the failed filter made no such buffer")
	}
}

// groth16.filter_wires is a child of groth16.prove, runs inside it and
// carries the three vectors' lengths: the finite [A]₁ and [B]₁ bases, and
// the private wires for K.
func TestFilterWiresSpanCarriesTheCounts(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	tp, exp := spantest.NewMemory()
	if _, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	pk := f.PK.(*groth16_bls12381.ProvingKey)
	tree := spantest.NewTree(exp.GetSpans())
	spans := tree.Named(semconv.SpanFilterWires)
	if len(spans) != 1 {
		t.Fatalf("%d %s spans, want 1", len(spans), semconv.SpanFilterWires)
	}
	fs := spans[0]
	p, _ := tree.Parent(fs)
	if p.Name != semconv.SpanGroth16Prove {
		t.Fatalf("%s: parent %q, want %s", fs.Name, p.Name, semconv.SpanGroth16Prove)
	}
	if fs.StartTime.Before(p.StartTime) || fs.EndTime.After(p.EndTime) {
		t.Errorf("%s not inside %s", fs.Name, p.Name)
	}
	nbWires := len(pk.InfinityA)
	for key, want := range map[string]int{
		string(semconv.KeyWiresA): nbWires - int(pk.NbInfinityA),
		string(semconv.KeyWiresB): nbWires - int(pk.NbInfinityB),
		string(semconv.KeyWiresK): len(pk.G1.K),
	} {
		if v, _ := spantest.StubValue(fs, key); v != fmt.Sprint(want) {
			t.Errorf("%s %s = %q, want %d", fs.Name, key, v, want)
		}
	}
	if fs.Status.Code == codes.Error {
		t.Errorf("%s failed: %s", fs.Name, fs.Status.Description)
	}
}

// BenchmarkFilterWires times the serial filter (serialFilterIntoMmap)
// against filterWires on the same wires and mask, both into a fresh mmap'd
// buffer (a sync Releaser's case), interleaved in each iteration and in
// alternating order, and reports both and their ratio: serial-ms,
// parallel-ms, serial/parallel; one-goroutine-ms is filterWires' code on
// one goroutine (what the run-at-a-time copy gains without the cores).
// Masks: none at infinity (merkle's [A]₁: 0.3 % at infinity), and a
// random third at infinity (merkle's [B]₁ share, in short runs).
//
//	go test ./prover -run '^$' -bench BenchmarkFilterWires -benchtime 30x
func BenchmarkFilterWires(b *testing.B) {
	for _, logN := range []int{20, 22} {
		n := 1 << logN
		wires := testWires(n)
		for _, m := range []struct {
			name string
			p    float64
		}{{"none-infinite", 0}, {"random-third-infinite", 1.0 / 3}} {
			rng := rand.New(rand.NewPCG(5, uint64(logN)))
			mask := make([]bool, n)
			for i := range mask {
				mask[i] = rng.Float64() < m.p
			}
			inf := countTrue(mask)
			variants := []func() (*buffer.Mmap, []fr.Element, error){
				func() (*buffer.Mmap, []fr.Element, error) { return serialFilterIntoMmap(wires, mask, inf) },
				func() (*buffer.Mmap, []fr.Element, error) { return filterWires(nil, wires, mask, inf) },
				func() (*buffer.Mmap, []fr.Element, error) {
					return filterWiresOn(nil, wires, mask, inf, filterChunk, 1)
				},
			}
			b.Run(fmt.Sprintf("wires=2^%d/%s", logN, m.name), func(b *testing.B) {
				b.ReportAllocs()
				var total [3]time.Duration
				iter := 0
				for b.Loop() {
					for k := range variants {
						v := (k + iter) % len(variants) // each variant first in turn
						t0 := time.Now()
						hb, _, err := variants[v]()
						if err != nil {
							b.Fatal(err)
						}
						total[v] += time.Since(t0)
						hb.Free()
					}
					iter++
				}
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(iter) }
				b.ReportMetric(ms(total[0]), "serial-ms")
				b.ReportMetric(ms(total[1]), "parallel-ms")
				b.ReportMetric(ms(total[2]), "one-goroutine-ms")
				b.ReportMetric(float64(total[0])/float64(total[1]), "serial/parallel")
			})
		}
	}
}

// serialFilterIntoMmap is the filterWires of before the parallel one
// (one loop into a fresh mmap'd buffer), for the benchmark.
func serialFilterIntoMmap(wires []fr.Element, infinity []bool, nbInfinity int) (*buffer.Mmap, []fr.Element, error) {
	n := len(wires) - nbInfinity
	hb, out, _, err := newFrBuffer(nil, n)
	if err != nil {
		return nil, nil, err
	}
	j := 0
	for i := range wires {
		if !infinity[i] {
			out[j] = wires[i]
			j++
		}
	}
	if j != n {
		hb.Free()
		return nil, nil, fmt.Errorf("%w: %d finite bases counted, key says %d", ErrKeyMismatch, j, n)
	}
	return hb, out, nil
}
