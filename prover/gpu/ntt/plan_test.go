package ntt

import (
	"context"
	"fmt"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/hostarith"
)

// hostKernels runs the kernels' block functions serially on the host
// (hostarith compiles ntt.cuh as C++), so these tests check the pass plan,
// the index arithmetic and the scalings of the GPU NTT without a GPU.
type hostKernels struct{ launches int }

func (h *hostKernels) pass(_ context.Context, data, tw []fr.Element, logn uint, p nttPass, dec Decimation, in, out scaling[[]fr.Element]) error {
	h.launches++
	return hostarith.NTTPass(data, tw, hostarith.Pass{LogN: logn, LogMMin: p.logMMin, T: p.t, DIT: dec == DIT, InMode: in.mode, OutMode: out.mode},
		in.table, in.c, out.table, out.c)
}

func (h *hostKernels) powers(_ context.Context, out []fr.Element, n int, base, first fr.Element) error {
	h.launches++
	hostarith.Powers(out[:n], base, first)
	return nil
}

func (h *hostKernels) pointwise(_ context.Context, a, b, c []fr.Element, n int, den fr.Element) error {
	h.launches++
	return hostarith.Pointwise(a[:n], b[:n], c[:n], den)
}

func (h *hostKernels) slice(b []fr.Element, off, n int) []fr.Element { return b[off : off+n] }

func hostTables(t *testing.T, k *hostKernels, d *fft.Domain) *nttTables[[]fr.Element] {
	t.Helper()
	logn, err := Log2(int(d.Cardinality))
	if err != nil {
		t.Fatal(err)
	}
	n := int(d.Cardinality)
	tab := &nttTables[[]fr.Element]{
		logn: logn, twFwd: make([]fr.Element, n), twInv: make([]fr.Element, n),
		coset: make([]fr.Element, n), cosetInvN: make([]fr.Element, n),
	}
	if err := buildTables(context.Background(), k, tab, d.Generator, d.GeneratorInv, d.FrMultiplicativeGen, d.FrMultiplicativeGenInv); err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestPlanCoversEveryStageOnce(t *testing.T) {
	for logn := uint(1); logn <= MaxLogN; logn++ {
		for _, dec := range []Decimation{DIF, DIT} {
			seen := make([]int, logn)
			for _, p := range planNTT(logn, dec) {
				if p.t == 0 || p.t > logTile || (p.logMMin > 0 && p.t > maxHighStages) {
					t.Fatalf("2^%d %v: pass %+v out of bounds", logn, dec, p)
				}
				for s := p.logMMin; s < p.logMMin+p.t; s++ {
					seen[s]++
				}
			}
			for s, c := range seen {
				if c != 1 {
					t.Fatalf("2^%d %v: stage %d run %d times", logn, dec, s, c)
				}
			}
		}
	}
	if got := len(planNTT(24, DIF)); got != 3 {
		t.Errorf("2^24 takes %d passes, want 3", got)
	}
}

// TestHostNTTMatchesGnarkCrypto checks every transform the NTT offers
// (forward/inverse × DIF/DIT × coset or not) against gnark-crypto's fft on
// random inputs, at every size from 2^0 to 2^13 (several passes from 2^11).
func TestHostNTTMatchesGnarkCrypto(t *testing.T) {
	ctx := context.Background()
	maxLog := 13
	if testing.Short() {
		maxLog = 11
	}
	for logn := 0; logn <= maxLog; logn++ {
		n := 1 << logn
		d := fft.NewDomain(uint64(n))
		k := &hostKernels{}
		tab := hostTables(t, k, d)
		for _, dec := range []Decimation{DIF, DIT} {
			for _, inverse := range []bool{false, true} {
				for _, coset := range []bool{false, true} {
					name := fmt.Sprintf("2^%d/%v/inverse=%v/coset=%v", logn, dec, inverse, coset)
					in := gputest.RandomVector(n)
					want := gnarkTransform(d, in, dec, inverse, coset)
					got := append([]fr.Element(nil), in...)
					if err := runNTT(ctx, k, tab, got, dec, inverse, coset); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s: element %d differs: got %s, want %s", name, i, got[i].String(), want[i].String())
						}
					}
				}
			}
		}
	}
}

// gnarkComputeH is gnark v0.14.0's computeH (backend/groth16/bls12-381,
// prove.go), the reference of the CUDA backend's ComputeH.
func gnarkComputeH(a, b, c []fr.Element, domain *fft.Domain) []fr.Element {
	domain.FFTInverse(a, fft.DIF)
	domain.FFTInverse(b, fft.DIF)
	domain.FFTInverse(c, fft.DIF)
	domain.FFT(a, fft.DIT, fft.OnCoset())
	domain.FFT(b, fft.DIT, fft.OnCoset())
	domain.FFT(c, fft.DIT, fft.OnCoset())
	den := cosetDen(domain.FrMultiplicativeGen, int(domain.Cardinality))
	for i := range a {
		a[i].Mul(&a[i], &b[i]).Sub(&a[i], &c[i]).Mul(&a[i], &den)
	}
	domain.FFTInverse(a, fft.DIF, fft.OnCoset())
	return a
}

func TestHostComputeHMatchesGnark(t *testing.T) {
	ctx := context.Background()
	for _, logn := range []int{1, 5, 12} {
		n := 1 << logn
		d := fft.NewDomain(uint64(n))
		k := &hostKernels{}
		tab := hostTables(t, k, d)
		a, b, c := gputest.RandomVector(n), gputest.RandomVector(n), gputest.RandomVector(n)
		ga, gb, gc := append([]fr.Element(nil), a...), append([]fr.Element(nil), b...), append([]fr.Element(nil), c...)
		want := gnarkComputeH(ga, gb, gc, d)
		var steps []string
		step := func(ctx context.Context, name string, fn func(context.Context) error) error {
			steps = append(steps, name)
			return fn(ctx)
		}
		if err := computeHSteps(ctx, k, tab, a, b, c, cosetDen(d.FrMultiplicativeGen, n), step); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if a[i] != want[i] {
				t.Fatalf("2^%d: H[%d] = %s, want %s", logn, i, a[i].String(), want[i].String())
			}
		}
		if len(steps) != 8 {
			t.Errorf("steps %v, want 3 inverse, 3 coset, pointwise, inverse coset", steps)
		}
	}
}

func TestLog2ExactRejectsBadSizes(t *testing.T) {
	for _, n := range []int{0, -4, 3, 6, 1 << 20 * 3} {
		if _, err := Log2(n); err == nil {
			t.Errorf("Log2(%d) accepted", n)
		}
	}
	if l, err := Log2(1 << 20); err != nil || l != 20 {
		t.Errorf("Log2(2^20) = %d, %v", l, err)
	}
}
