package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
)

func init() {
	prover.RegisterBackend("cuda", func(ctx context.Context, o prover.BackendOptions) (prover.Backend, error) {
		return Open(ctx, o)
	})
}

// Backend is the prover.Backend on one CUDA device: ComputeH with the NTT
// kernels of this package, MSMG1 with the Pippenger MSM kernels (msm.go),
// MSMG2 on the CPU with gnark-crypto (concurrently with the GPU work when
// the prove algorithm runs them together). Device work is serialised on one
// stream; waiting for it is a gpu.lock span. Safe for concurrent use.
type Backend struct {
	c        *cudaspans.Context
	s        *cudaspans.Stream
	ntt      *NTT
	msm      *MSM
	keys     *ResidentKeys
	cpu      *prover.CPU
	releaser *cudaspans.Releaser
	tracer   trace.Tracer

	mu sync.Mutex // the device: one operation at a time on s
}

var _ prover.Backend = (*Backend)(nil)

// Open opens the CUDA backend on device o.DeviceOrdinal: the device's
// primary context, one stream, and the NTT and MSM kernels (compiled by
// NVRTC, or taken from the kernel cache). Without a driver or device it
// returns an error wrapping prover.ErrBackendUnavailable and
// cudaspans.ErrNoDevice that says why in one line.
func Open(ctx context.Context, o prover.BackendOptions) (*Backend, error) {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	c, err := cudaspans.Open(o.DeviceOrdinal, cudaspans.WithTracerProvider(tp))
	if err != nil {
		if errors.Is(err, cudaspans.ErrNoDevice) {
			return nil, fmt.Errorf("%w: cuda: %w", prover.ErrBackendUnavailable, err)
		}
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	b := &Backend{c: c, cpu: prover.NewCPU(tp), releaser: o.Releaser, tracer: tp.Tracer(otelcuzk.ScopeName)}
	fail := func(err error) (*Backend, error) {
		b.Close()
		return nil, err
	}
	if b.s, err = c.NewStream(); err != nil {
		return fail(fmt.Errorf("cuda backend: stream: %w", err))
	}
	if b.ntt, err = NewNTT(ctx, c, tp); err != nil {
		return fail(err)
	}
	mopts := []MSMOption{WithMSMTracerProvider(tp)}
	if o.Releaser != nil {
		mopts = append(mopts, WithMSMReleaser(o.Releaser))
	}
	if b.msm, err = NewMSM(ctx, c, mopts...); err != nil {
		return fail(err)
	}
	kopts := []KeysOption{WithKeysTracerProvider(tp)}
	if o.Releaser != nil {
		kopts = append(kopts, WithKeysReleaser(o.Releaser))
	}
	if b.keys, err = NewResidentKeys(c, kopts...); err != nil {
		return fail(err)
	}
	return b, nil
}

// Name returns "cuda".
func (*Backend) Name() string { return "cuda" }

// Context returns the device context of the backend.
func (b *Backend) Context() *cudaspans.Context { return b.c }

// Keys returns the proving-key bases resident on the device (preload,
// evict, accounting; keys.go).
func (b *Backend) Keys() *ResidentKeys { return b.keys }

// lock takes the device, as a gpu.lock span.
func (b *Backend) lock(ctx context.Context) func() {
	_, span := b.tracer.Start(ctx, otelcuzk.SpanGPULock)
	b.mu.Lock()
	span.End()
	return b.mu.Unlock
}

// ComputeH implements prover.Backend.ComputeH on the GPU, as gnark's
// computeH: a, b and c (each domain.Cardinality elements) are copied to the
// device, transformed there (NTT.ComputeH: ntt.inverse, ntt.coset,
// groth16.pointwise, ntt.inverse_coset spans with their kernels), and H's
// coefficients come back into a in bit-reversed order, element for element
// what gnark's computeH and the CPU backend return; b and c are left
// unchanged. The three device vectors (3·32·n bytes) are released through
// the backend's Releaser (buffer.release spans). Errors: lengths that differ
// from the domain, device memory, driver errors naming the operation.
func (b *Backend) ComputeH(ctx context.Context, domain *fft.Domain, a, bv, c []fr.Element) error {
	n := int(domain.Cardinality)
	if len(a) != n || len(bv) != n || len(c) != n {
		return fmt.Errorf("cuda compute H: vectors of length %d, %d, %d, domain of %d", len(a), len(bv), len(c), n)
	}
	if _, err := log2Exact(n); err != nil {
		return err
	}
	defer b.lock(ctx)()
	bufs := make([]*cudaspans.DeviceBuffer, 0, 3)
	defer func() {
		for i, buf := range bufs {
			b.release(ctx, []string{"a", "b", "c"}[i], buf)
		}
	}()
	for range 3 {
		buf, err := b.deviceBuffer(ctx, n*frBytes)
		if err != nil {
			return fmt.Errorf("cuda compute H: %w", err)
		}
		bufs = append(bufs, buf)
	}
	for i, v := range [][]fr.Element{a, bv, c} {
		if err := cudaspans.HtoD(ctx, b.s, bufs[i].Ptr(), v); err != nil {
			return fmt.Errorf("cuda compute H: upload: %w", err)
		}
	}
	if err := b.ntt.ComputeH(ctx, b.s, domain, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr()); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	if err := cudaspans.DtoH(ctx, b.s, a, bufs[0].Ptr()); err != nil {
		return fmt.Errorf("cuda compute H: download: %w", err)
	}
	if err := b.s.Synchronize(ctx); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	return nil
}

// deviceBuffer returns a pooled device buffer of at least size bytes when
// the Releaser pools, else a fresh allocation.
func (b *Backend) deviceBuffer(ctx context.Context, size int) (*cudaspans.DeviceBuffer, error) {
	if b.releaser != nil {
		if buf, ok := b.releaser.Get("device", size).(*cudaspans.DeviceBuffer); ok && buf != nil {
			return buf, nil
		}
	}
	return b.c.Alloc(ctx, size)
}

func (b *Backend) release(ctx context.Context, name string, buf *cudaspans.DeviceBuffer) {
	if b.releaser != nil {
		_ = b.releaser.Release(ctx, name, buf)
		return
	}
	_ = buf.Free()
}

// MSMG1 implements prover.Backend.MSMG1 on the GPU with the Pippenger MSM
// of msm.go over bases kept resident on the device (uploaded on first use
// of bases.ID, reused by later proofs); span names the span (msm.g1.a, ...).
func (b *Backend) MSMG1(ctx context.Context, span string, bases prover.BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error) {
	if len(scalars) != len(bases.Points) {
		return curve.G1Jac{}, fmt.Errorf("cuda %s: %d scalars for %d bases", span, len(scalars), len(bases.Points))
	}
	defer b.lock(ctx)()
	return b.msm.G1Resident(ctx, span, b.s, b.keys, bases, scalars)
}

// MSMG2 implements prover.Backend.MSMG2 on the CPU with gnark-crypto's
// MultiExp (prover.CPU), taking no device lock, so it runs while the GPU
// works on the G1 MSMs.
func (b *Backend) MSMG2(ctx context.Context, span string, bases prover.BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error) {
	return b.cpu.MSMG2(ctx, span, bases, scalars)
}

// Close evicts the resident keys, frees the kernels and tables and releases
// the device context.
func (b *Backend) Close() error {
	var errs []error
	if b.keys != nil {
		errs = append(errs, b.keys.EvictAll(context.Background()))
	}
	if b.ntt != nil {
		errs = append(errs, b.ntt.Close())
	}
	if b.c != nil {
		errs = append(errs, b.c.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda backend: close: %w", err)
	}
	return nil
}
