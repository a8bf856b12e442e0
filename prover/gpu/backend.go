package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
)

var _ backend.BaseEvicter = (*Backend)(nil)

func init() {
	backend.Register("cuda", func(ctx context.Context, o backend.Options) (backend.Backend, error) {
		return Open(ctx, o)
	})
}

// Backend is the backend.Backend on one CUDA device: ComputeH with the NTT
// kernels of prover/gpu/ntt, MSMG1 and MSMG2 with the Pippenger MSM
// kernels of prover/gpu/msm over bases kept resident on the device; MSMG2 can run on the
// CPU with gnark-crypto instead (backend.Options.Device.MSMG2, SetMSMG2), concurrently
// with the GPU work. Device work is serialised on one stream; waiting for
// it is a gpu.lock span. Safe for concurrent use.
type Backend struct {
	c        *cudaspans.Context
	s        *cudaspans.Stream
	bases    *msm.DeviceBases
	cpu      *cpu.Backend
	releaser *buffer.Releaser
	tp       trace.TracerProvider
	tracer   trace.Tracer

	warmMu   sync.Mutex // guards inflight
	inflight *warmRun   // the warm-up running now, nil when none
	// ntt and msm are set by the warm-up goroutine before it sets ready,
	// and read after ready.
	ntt   *ntt.Engine
	msm   *msm.MSM
	batch *msm.BatchAdd // batchadd.go
	ready atomic.Bool
	// warm compiles what is not yet loaded (Backend.compileModules; tests
	// replace it).
	warm func(ctx context.Context) error

	mu      sync.Mutex // the device: one operation at a time on s
	proofMu sync.Mutex // the device for one whole proof (BeginProof)

	hostCopy backend.HostCopy
	g2OnCPU  bool
	stage    [2]*cudaspans.PinnedBuffer // ComputeH's double buffer (staged mode), under mu
	// scratch holds the MSM scalars (staged mode) per proving key
	// (backend.Call.KeyID, ComputeH's keyID; "" for proofs without one), grown to the key's
	// largest MSM, freed with the key (EvictBases) and at Close; under mu.
	scratch map[string]*cudaspans.PinnedBuffer
	// regsClosed is set by Close: no more registrations of host buffers
	// (HostCopyRegistered, registered.go).
	regsClosed atomic.Bool
	// stagedFrom, when > 0, replaces minPinnedCopy for the staged mode
	// (tests only).
	stagedFrom int
	// h is the H that the last ComputeH left on the device for the H MSM
	// (keptH.go), under mu.
	h keptH

	// fault is the first sticky CUDA error (cudaspans.ErrSticky) seen on
	// this device, wrapped with backend.ErrDeviceFault; once set, every
	// later call fails with it at once: the device is fenced off.
	fault atomic.Pointer[error]
}

var _ backend.Backend = (*Backend)(nil)

// Open opens the CUDA backend on device o.DeviceOrdinal: the device's
// primary context and one stream, copying host vectors and placing the G2
// MSM as o.Device says (settings no parse could make are refused before
// the device is touched: DeviceSettings.Check). It compiles nothing: the kernel modules
// are compiled by NVRTC (or taken from the kernel cache) by Warmup, which
// the first proof calls if nobody did before. Without a driver or device
// it returns a *backend.UnavailableError wrapping cudaspans.ErrNoDevice
// ("cuda backend unavailable: no CUDA device: REASON"); every other error
// names the backend once too ("cuda backend: REASON"), so the factory's
// callers (prover.New, the daemon's per-GPU "cuda:N") pass it on as it is.
func Open(ctx context.Context, o backend.Options) (*Backend, error) {
	return open(ctx, o)
}

// open is Open with more options for cudaspans.Open after the
// TracerProvider (tests give a fake device: cudaspans.WithDriver).
func open(ctx context.Context, o backend.Options, copts ...cudaspans.Option) (*Backend, error) {
	if err := o.Device.Check(); err != nil {
		return nil, err
	}
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	c, err := cudaspans.Open(o.DeviceOrdinal, append([]cudaspans.Option{cudaspans.WithTracerProvider(tp)}, copts...)...)
	if err != nil {
		if errors.Is(err, cudaspans.ErrNoDevice) {
			return nil, backend.Unavailable("cuda", err)
		}
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	return openOn(ctx, c, o)
}

// openOn is Open on an opened device context c, which the backend owns
// from here (closed on failure too); tests give it a fake device.
func openOn(ctx context.Context, c *cudaspans.Context, o backend.Options) (*Backend, error) {
	if err := o.Device.Check(); err != nil {
		c.Close()
		return nil, err
	}
	hc, g2OnCPU := o.Device.HostCopy, o.Device.MSMG2 == backend.G2OnCPU
	if hc == "" {
		hc = backend.HostCopyRegistered
	}
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	b := &Backend{c: c, cpu: cpu.New(tp), releaser: buffer.OrSync(o.Releaser, tp), tp: tp, tracer: semconv.Tracer(tp),
		hostCopy: hc, g2OnCPU: g2OnCPU}
	b.warm = b.compileModules
	fail := func(err error) (*Backend, error) {
		b.Close()
		return nil, err
	}
	var err error
	if b.s, err = c.NewStream(); err != nil {
		return fail(fmt.Errorf("cuda backend: stream: %w", err))
	}
	if b.bases, err = msm.NewDeviceBases(ctx, c, msm.WithTracerProvider(tp), msm.WithReleaser(b.releaser)); err != nil {
		return fail(fmt.Errorf("cuda backend: %w", err))
	}
	return b, nil
}

// Name returns "cuda".
func (*Backend) Name() string { return "cuda" }

// Context returns the device context of the backend.
func (b *Backend) Context() *cudaspans.Context { return b.c }

// MemInfo returns the device's free and total memory in bytes
// (cuMemGetInfo), for the daemon's device memory metrics.
func (b *Backend) MemInfo() (free, total uint64, err error) { return b.c.MemInfo() }

// Bases returns the proving-key bases resident on the device (preload,
// evict, accounting; msm.DeviceBases).
func (b *Backend) Bases() *msm.DeviceBases { return b.bases }

// EvictBases implements backend.BaseEvicter: the proving key's base sets leave
// the device (DeviceBases.EvictKeySets); sets in use by a running MSM are
// freed when it ends.
func (b *Backend) EvictBases(ctx context.Context, keyID string) error {
	_, err := b.bases.EvictKeySets(ctx, keyID)
	// The key's pinned scalar buffer, once no operation uses it.
	b.mu.Lock()
	sc := b.scratch[keyID]
	delete(b.scratch, keyID)
	b.mu.Unlock()
	if sc != nil {
		b.release(ctx, "msm.scalars", sc)
	}
	return err
}

// Close evicts the resident bases, frees the kernels and tables and releases
// the device context.
func (b *Backend) Close() error {
	var errs []error
	// The pinned staging memory, after the device work that reads it.
	if b.c != nil {
		errs = append(errs, b.c.Flush(context.Background()))
	}
	b.mu.Lock()
	b.dropH()
	b.mu.Unlock()
	// Registered host buffers (HostCopyRegistered) are unregistered
	// while the context lives; their owners unmap them later.
	errs = append(errs, b.closeRegs(context.Background()))
	// Freed here, not through the Releaser: an async or pool Releaser
	// could free them after the context is gone.
	pinned := b.stage[:]
	for _, p := range b.scratch {
		pinned = append(pinned, p)
	}
	for _, p := range pinned {
		if p != nil {
			errs = append(errs, b.c.Free(context.Background(), p))
		}
	}
	b.stage, b.scratch = [2]*cudaspans.PinnedBuffer{}, nil
	if b.bases != nil {
		errs = append(errs, b.bases.EvictAll(context.Background()))
	}
	b.waitWarm() // its modules are loaded on this context
	if b.ntt != nil {
		errs = append(errs, b.ntt.Close())
	}
	if b.msm != nil {
		errs = append(errs, b.msm.Close())
	}
	if b.batch != nil {
		errs = append(errs, b.batch.Close())
	}
	b.ntt, b.msm, b.batch = nil, nil, nil
	b.ready.Store(false)
	if b.c != nil {
		errs = append(errs, b.c.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda backend: close: %w", err)
	}
	return nil
}
