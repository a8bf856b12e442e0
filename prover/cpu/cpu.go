// Package cpu is the CPU backend of the Groth16 prove (backend.Backend,
// registered as "cpu"): gnark-crypto's NTTs and Pippenger MSMs with gnark's
// own task counts (cpu.go), and the batch addition of the bit split
// (batchadd.go). It is the reference the device backends are tested
// against.
package cpu

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"runtime"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// Backend is the backend.Backend on gnark-crypto: fft.Domain for the NTTs and
// Pippenger's MultiExp for the MSMs, with the same decimations and task
// counts as gnark's own groth16.Prove (backend/groth16/bls12-381/prove.go,
// gnark v0.14.0), so its time is gnark's time. Safe for concurrent use.
type Backend struct {
	tracer trace.Tracer
	nbCPU  int
}

// New returns the CPU backend recording spans with tp (nil: global).
func New(tp trace.TracerProvider) *Backend {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Backend{tracer: semconv.Tracer(tp), nbCPU: runtime.NumCPU()}
}

// errNilCPU is returned by the methods of a nil *Backend (New makes one).
var errNilCPU = errors.New("nil *cpu.Backend (make one with cpu.New)")

func init() {
	backend.Register("cpu", func(_ context.Context, o backend.Options) (backend.Backend, error) {
		return New(o.TracerProvider), nil
	})
}

// Name returns "cpu".
func (*Backend) Name() string { return "cpu" }

// Close does nothing: the CPU backend holds no resources.
func (*Backend) Close() error { return nil }

// ComputeH implements Backend.ComputeH as gnark's computeH: inverse NTT
// (DIF) of a, b and c, forward NTT on the coset (DIT), pointwise
// (a·b − c)/(gⁿ − 1) with g the coset generator, inverse NTT on the coset
// (DIF). Each NTT is an ntt.inverse, ntt.coset or ntt.inverse_coset span
// (cuzk.ntt.size, cuzk.buffer.name) and the pointwise step a
// groth16.pointwise span, children of the span in ctx. It returns an error
// when the lengths differ from the domain's cardinality.
func (c *Backend) ComputeH(ctx context.Context, _ string, domain *fft.Domain, a, b, cc []fr.Element) error {
	if c == nil {
		return errNilCPU
	}
	if domain == nil || domain.Cardinality == 0 {
		return errors.New("compute H: nil or empty domain")
	}
	n := int(domain.Cardinality)
	if len(a) != n || len(b) != n || len(cc) != n {
		return fmt.Errorf("compute H: vectors of length %d, %d, %d, domain of %d", len(a), len(b), len(cc), n)
	}
	vecs := []struct {
		name string
		v    []fr.Element
	}{{"a", a}, {"b", b}, {"c", cc}}
	for _, x := range vecs {
		c.step(ctx, semconv.SpanNTTInverse, x.name, n, func() { domain.FFTInverse(x.v, fft.DIF) })
	}
	for _, x := range vecs {
		c.step(ctx, semconv.SpanNTTCoset, x.name, n, func() { domain.FFT(x.v, fft.DIT, fft.OnCoset()) })
	}
	c.step(ctx, semconv.SpanPointwise, "a", n, func() {
		var den, one fr.Element
		one.SetOne()
		den.Exp(domain.FrMultiplicativeGen, big.NewInt(int64(domain.Cardinality)))
		den.Sub(&den, &one).Inverse(&den)
		parallelize(n, c.nbCPU, func(start, end int) {
			for i := start; i < end; i++ {
				a[i].Mul(&a[i], &b[i]).Sub(&a[i], &cc[i]).Mul(&a[i], &den)
			}
		})
	})
	c.step(ctx, semconv.SpanNTTInverseCoset, "a", n, func() { domain.FFTInverse(a, fft.DIF, fft.OnCoset()) })
	return nil
}

func (c *Backend) step(ctx context.Context, name, buf string, n int, f func()) {
	_, span := c.tracer.Start(ctx, name, trace.WithAttributes(
		semconv.KeyNTTSize.Int(n), semconv.KeyBufferName.String(buf), semconv.KeyBackend.String("cpu")))
	f()
	span.End()
}

// MSMG1 implements Backend.MSMG1 with G1Jac.MultiExp on NumCPU/2 tasks, as
// gnark runs its four G1 MSMs two at a time. The span is named call.Span, with call.Attributes
// (and call.Late's when the MSM is done).
func (c *Backend) MSMG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error) {
	var res curve.G1Jac
	if c == nil {
		return res, fmt.Errorf("%s: %w", call.Span, errNilCPU)
	}
	err := c.msm(ctx, call, len(bases.Points), len(scalars), func() error {
		_, err := res.MultiExp(bases.Points, scalars, ecc.MultiExpConfig{NbTasks: c.nbCPU / 2})
		return err
	})
	return res, err
}

// MSMG2 implements Backend.MSMG2 with G2Jac.MultiExp on 2·NumCPU tasks up
// to 16 CPUs and NumCPU above, as gnark does for [B]₂.
func (c *Backend) MSMG2(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error) {
	var res curve.G2Jac
	if c == nil {
		return res, fmt.Errorf("%s: %w", call.Span, errNilCPU)
	}
	nbTasks := c.nbCPU
	if nbTasks <= 16 {
		nbTasks *= 2
	}
	err := c.msm(ctx, call, len(bases.Points), len(scalars), func() error {
		_, err := res.MultiExp(bases.Points, scalars, ecc.MultiExpConfig{NbTasks: nbTasks})
		return err
	})
	return res, err
}

func (c *Backend) msm(ctx context.Context, call backend.Call, nbPoints, nbScalars int, f func() error) error {
	name := call.Span
	if c == nil {
		return fmt.Errorf("%s: %w", name, errNilCPU)
	}
	_, span := c.tracer.Start(ctx, name, trace.WithAttributes(
		semconv.KeyMSMSize.Int(nbScalars), semconv.KeyBackend.String("cpu")),
		trace.WithAttributes(call.Attributes...))
	defer span.End()
	err := f()
	if call.Late != nil {
		span.SetAttributes(call.Late()...)
	}
	if err == nil && nbPoints != nbScalars {
		err = fmt.Errorf("%d bases for %d scalars", nbPoints, nbScalars)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
		semconv.SetError(span, err)
	}
	return err
}

// parallelize runs f over [0, n) split in nbTasks chunks, as gnark's
// internal utils.Parallelize does.
func parallelize(n, nbTasks int, f func(start, end int)) {
	if nbTasks < 1 {
		nbTasks = 1
	}
	if nbTasks > n {
		nbTasks = n
	}
	if nbTasks <= 1 {
		f(0, n)
		return
	}
	per, extra := n/nbTasks, n%nbTasks
	done := make(chan struct{}, nbTasks)
	start := 0
	for i := 0; i < nbTasks; i++ {
		end := start + per
		if i < extra {
			end++
		}
		go func(s, e int) { f(s, e); done <- struct{}{} }(start, end)
		start = end
	}
	for i := 0; i < nbTasks; i++ {
		<-done
	}
}
