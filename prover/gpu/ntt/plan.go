package ntt

import (
	"context"
	"fmt"
	"math/big"
	"math/bits"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Decimation selects the orders of an NTT, as gnark-crypto's fft.DIF and
// fft.DIT: DIF takes natural order and returns bit-reversed order, DIT takes
// bit-reversed order and returns natural order.
type Decimation int

const (
	// DIF is decimation in frequency (Gentleman-Sande): natural in,
	// bit-reversed out.
	DIF Decimation = iota
	// DIT is decimation in time (Cooley-Tukey): bit-reversed in, natural out.
	DIT
)

func (d Decimation) String() string {
	if d == DIT {
		return "DIT"
	}
	return "DIF"
}

// MaxLogN is the largest NTT size (log2) the kernels index: element indices
// are 32-bit in the kernels.
const MaxLogN = 31

// Scale modes of a pass (ntt.cuh ScaleMode).
const (
	scaleNone      = 0
	scaleConst     = 1
	scaleTable     = 2
	scaleTableBrev = 3
)

// logTile is ntt.cuh LOG_TILE: the log2 of the elements one block holds in
// shared memory.
const logTile = 10

// maxHighStages bounds the stages of a pass whose sub-transforms are strided
// (half-size >= 2^logTile): 2^(logTile-7) = 8 consecutive elements (256
// bytes) per load keeps the loads coalesced.
const maxHighStages = 7

// nttPass is one launch of the ntt_pass kernel: t stages whose smallest
// half-size is 2^logMMin.
type nttPass struct {
	logMMin, t uint
}

// planNTT splits the logn radix-2 stages of a 2^logn-point NTT into passes,
// in execution order: one pass of the min(logn, logTile) smallest stages
// (contiguous tiles), and the other stages in passes of at most
// maxHighStages, as even as possible. DIF runs large half-sizes first, DIT
// small first.
func planNTT(logn uint, dec Decimation) []nttPass {
	if logn == 0 {
		return nil
	}
	low := min(logn, uint(logTile))
	passes := []nttPass{{logMMin: 0, t: low}}
	rest := logn - low
	if rest > 0 {
		groups := (rest + maxHighStages - 1) / maxHighStages
		at := low
		for g := uint(0); g < groups; g++ {
			t := rest / groups
			if g < rest%groups {
				t++
			}
			passes = append(passes, nttPass{logMMin: at, t: t})
			at += t
		}
	}
	if dec == DIF {
		for i, j := 0, len(passes)-1; i < j; i, j = i+1, j-1 {
			passes[i], passes[j] = passes[j], passes[i]
		}
	}
	return passes
}

// scaling is a per-element multiplication fused into the load or store of a
// pass.
type scaling[B any] struct {
	mode  int
	table B
	c     fr.Element
}

// nttKernels runs the NTT kernels of ntt.cu on buffers of type B (device
// pointers on the GPU, slices in the host emulation used by tests). Lengths
// are in elements.
type nttKernels[B any] interface {
	// pass launches ntt_pass over the 2^logn elements of data.
	pass(ctx context.Context, data, tw B, logn uint, p nttPass, dec Decimation, in, out scaling[B]) error
	// powers launches ntt_powers: out[i] = first·base^i for i < n.
	powers(ctx context.Context, out B, n int, base, first fr.Element) error
	// pointwise launches groth16_pointwise over n elements.
	pointwise(ctx context.Context, a, b, c B, n int, den fr.Element) error
	// slice returns the sub-buffer of n elements starting at element off.
	slice(b B, off, n int) B
}

// nttTables are the per-domain tables of the kernels: twiddles for both
// directions (ntt.cuh layout, n-1 elements used) and the coset tables
// g^j and g^-j/n (n elements), g = the domain's FrMultiplicativeGen.
type nttTables[B any] struct {
	logn                    uint
	twFwd, twInv            B
	coset, cosetInvN        B
	nInv                    fr.Element
	generator, generatorInv fr.Element
}

// buildTables fills tables that hold at least n elements each, on the
// device, from the domain's generators (n = 2^logn).
func buildTables[B any](ctx context.Context, k nttKernels[B], t *nttTables[B], w, wInv, g, gInv fr.Element) error {
	n := 1 << t.logn
	var one fr.Element
	one.SetOne()
	t.nInv.SetUint64(uint64(n))
	t.nInv.Inverse(&t.nInv)
	t.generator, t.generatorInv = w, wInv
	for hlog := uint(0); hlog < t.logn; hlog++ {
		h := 1 << hlog
		// w_{2h} = w^(n/2h)
		e := big.NewInt(int64(n / (2 * h)))
		var bf, bi fr.Element
		bf.Exp(w, e)
		bi.Exp(wInv, e)
		if err := k.powers(ctx, k.slice(t.twFwd, h-1, h), h, bf, one); err != nil {
			return fmt.Errorf("gpu: twiddles: %w", err)
		}
		if err := k.powers(ctx, k.slice(t.twInv, h-1, h), h, bi, one); err != nil {
			return fmt.Errorf("gpu: inverse twiddles: %w", err)
		}
	}
	if err := k.powers(ctx, t.coset, n, g, one); err != nil {
		return fmt.Errorf("gpu: coset table: %w", err)
	}
	if err := k.powers(ctx, t.cosetInvN, n, gInv, t.nInv); err != nil {
		return fmt.Errorf("gpu: inverse coset table: %w", err)
	}
	return nil
}

// runNTT transforms the 2^logn elements of data in place: forward (w) or
// inverse (w⁻¹, scaled by 1/n), optionally on the coset g·H, with the orders
// of dec. It computes exactly what gnark-crypto's Domain.FFT (forward) and
// Domain.FFTInverse (inverse) compute with the same decimation and
// fft.OnCoset().
func runNTT[B any](ctx context.Context, k nttKernels[B], t *nttTables[B], data B, dec Decimation, inverse, coset bool) error {
	passes := planNTT(t.logn, dec)
	if len(passes) == 0 {
		return nil // a 1-point NTT is the identity (also inverse and on a coset: g^0 = 1, 1/n = 1)
	}
	tw := t.twFwd
	if inverse {
		tw = t.twInv
	}
	var none scaling[B]
	in, out := none, none
	switch {
	case !inverse && coset && dec == DIF:
		in = scaling[B]{mode: scaleTable, table: t.coset}
	case !inverse && coset && dec == DIT:
		in = scaling[B]{mode: scaleTableBrev, table: t.coset}
	case inverse && !coset:
		out = scaling[B]{mode: scaleConst, c: t.nInv}
	case inverse && coset && dec == DIF:
		out = scaling[B]{mode: scaleTableBrev, table: t.cosetInvN}
	case inverse && coset && dec == DIT:
		out = scaling[B]{mode: scaleTable, table: t.cosetInvN}
	}
	for i, p := range passes {
		pin, pout := none, none
		if i == 0 {
			pin = in
		}
		if i == len(passes)-1 {
			pout = out
		}
		if err := k.pass(ctx, data, tw, t.logn, p, dec, pin, pout); err != nil {
			return err
		}
	}
	return nil
}

// cosetDen returns 1/(g^n − 1), the inverse of the vanishing polynomial
// Xⁿ − 1 on the coset g·H (constant there), as gnark's computeH.
func cosetDen(g fr.Element, n int) fr.Element {
	var den, one fr.Element
	one.SetOne()
	den.Exp(g, big.NewInt(int64(n)))
	den.Sub(&den, &one).Inverse(&den)
	return den
}

// Log2 returns log2(n) for a power of two n ≥ 1, or an error.
func Log2(n int) (uint, error) {
	if n < 1 || n&(n-1) != 0 {
		return 0, fmt.Errorf("gpu: NTT size %d is not a power of two", n)
	}
	l := uint(bits.TrailingZeros(uint(n)))
	if l > MaxLogN {
		return 0, fmt.Errorf("gpu: NTT size 2^%d exceeds 2^%d", l, MaxLogN)
	}
	return l, nil
}

// computeHSteps runs groth16's compute_h on a, b, c (each 2^t.logn elements,
// evaluations on the domain in natural order) as gnark's computeH
// (backend/groth16/bls12-381/prove.go): inverse NTT (DIF), coset NTT (DIT),
// a = (a·b − c)·den with den = 1/(gⁿ − 1), inverse coset NTT (DIF). On
// return a holds H's coefficients in bit-reversed order, which is what
// gnark's computeH returns and what the bit-reversed pk.G1.Z expects. step
// wraps each step in a span (names from otelcuzk/semconv/names.go).
func computeHSteps[B any](ctx context.Context, k nttKernels[B], t *nttTables[B], a, b, c B, den fr.Element,
	step func(ctx context.Context, name string, fn func(ctx context.Context) error) error) error {
	n := 1 << t.logn
	// One span per vector and transform, as otelcuzk/semconv/names.go defines them.
	for _, x := range []B{a, b, c} {
		err := step(ctx, semconv.SpanNTTInverse, func(ctx context.Context) error {
			return runNTT(ctx, k, t, x, DIF, true, false)
		})
		if err != nil {
			return err
		}
	}
	for _, x := range []B{a, b, c} {
		err := step(ctx, semconv.SpanNTTCoset, func(ctx context.Context) error {
			return runNTT(ctx, k, t, x, DIT, false, true)
		})
		if err != nil {
			return err
		}
	}
	err := step(ctx, semconv.SpanPointwise, func(ctx context.Context) error {
		return k.pointwise(ctx, a, b, c, n, den)
	})
	if err != nil {
		return err
	}
	return step(ctx, semconv.SpanNTTInverseCoset, func(ctx context.Context) error {
		return runNTT(ctx, k, t, a, DIF, true, true)
	})
}
