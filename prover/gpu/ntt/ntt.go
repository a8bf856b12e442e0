package ntt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// frBytes is the size of an fr.Element on the host and of fr_t on the device.
const frBytes = 32

// passParams mirrors ntt.cuh PassParams (six 4-byte fields, C layout).
type passParams struct {
	LogN, LogMMin, T     uint32
	DIT, InMode, OutMode int32
}

// Engine runs NTTs over the BLS12-381 scalar field on one device: forward,
// inverse and on a coset, sizes 2^0 to 2^MaxLogN (as device memory allows),
// in gnark-crypto's element layout and orders (Decimation). Twiddle and
// coset tables are built on the device once per domain and kept until
// Close (4·n elements, 128·n bytes). Safe for concurrent use; launches go to
// the stream the caller gives.
type Engine struct {
	c      *cudaspans.Context
	mod    *cudaspans.Module
	fPass  *cudaspans.Function
	fPow   *cudaspans.Function
	fPoint *cudaspans.Function
	tracer trace.Tracer

	mu     sync.Mutex
	tables map[tableKey]*deviceTables
}

type tableKey struct {
	logn uint
	w, g fr.Element
}

type deviceTables struct {
	nttTables[cudaspans.DevicePtr]
	bufs []*cudaspans.DeviceBuffer
}

// Option configures New.
type Option interface{ apply(*config) }

type config struct {
	defines map[string]string
	tp      trace.TracerProvider
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithDefines sets preprocessor macros of the NTT kernels, over the
// defaults in kernels/ntt.cu and ntt.cuh (the fastest variant measured on
// the H200, bench/ntt.md): NTT_MIN_BLOCKS (blocks of 256 threads per
// multiprocessor the register budget must allow, default 4),
// NTT_SKIP_UNIT_TWIDDLE (skip the multiply by w^0, default 1),
// FF_PTX_ADDSUB (PTX carry chains for add and sub, default 1). For tuning
// (bench/nttbench -variants); results do not change.
func WithDefines(d map[string]string) Option {
	return optionFunc(func(c *config) {
		for k, v := range d {
			c.defines[k] = v
		}
	})
}

// Module is the NVRTC compile of the NTT kernels with defines (nil: the
// defaults), as New hands it to cudaspans.
func Module(defines map[string]string) kernels.Module {
	return kernels.Module{Name: "ntt", Source: kernels.NTT, Opts: cudaspans.CompileOptions{
		Headers: map[string]string{"ff.cuh": kernels.FF, "ntt.cuh": kernels.NTTHeader},
		Flags:   []string{"-std=c++17"},
		Defines: defines,
	}, Kernels: []string{"ntt_pass", "ntt_powers", "groth16_pointwise"}}
}

// New compiles the NTT kernels for c's device (NVRTC, or the kernel cache
// on a second start) and returns the engine (options: WithTracerProvider
// for the step spans, WithDefines). Errors name the failing compile or
// lookup.
func New(ctx context.Context, c *cudaspans.Context, opts ...Option) (*Engine, error) {
	cfg := newConfig(opts)
	km := Module(cfg.defines)
	mod, err := c.Compile(ctx, km.Name, km.Source, km.Opts)
	if err != nil {
		return nil, fmt.Errorf("gpu: compile NTT kernels: %w", err)
	}
	return fromModule(c, mod, cfg.tp)
}

// newConfig applies opts; the provider defaults to the global one.
func newConfig(opts []Option) config {
	cfg := config{defines: map[string]string{}}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	return cfg
}

// FromModule returns an engine over a module already loaded on c that
// holds the NTT kernels (Module's: ntt_pass, ntt_powers,
// groth16_pointwise), e.g. a precompiled image loaded with
// cudaspans.Context.LoadModuleData on a host without NVRTC, or a fake
// device's. The engine's Close unloads it (on an error too). Options as
// New's (WithDefines has no effect). Errors: a kernel missing from mod.
func FromModule(c *cudaspans.Context, mod *cudaspans.Module, opts ...Option) (*Engine, error) {
	return fromModule(c, mod, newConfig(opts).tp)
}

func fromModule(c *cudaspans.Context, mod *cudaspans.Module, tp trace.TracerProvider) (*Engine, error) {
	var err error
	e := &Engine{c: c, mod: mod, tracer: semconv.Tracer(tp), tables: map[tableKey]*deviceTables{}}
	for name, f := range map[string]**cudaspans.Function{"ntt_pass": &e.fPass, "ntt_powers": &e.fPow, "groth16_pointwise": &e.fPoint} {
		if *f, err = mod.Function(name); err != nil {
			mod.Close()
			return nil, fmt.Errorf("gpu: NTT kernel %s: %w", name, err)
		}
	}
	return e, nil
}

// Close frees the tables and unloads the kernels. The engine is unusable
// afterwards.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for k, t := range e.tables {
		for _, b := range t.bufs {
			errs = append(errs, b.Free())
		}
		delete(e.tables, k)
	}
	if e.mod != nil {
		errs = append(errs, e.mod.Close())
		e.mod = nil
	}
	return errors.Join(errs...)
}

// Tables returns (building on first use, on stream s) the device tables of
// domain. Building 2^24 takes a few ms on an H200.
func (e *Engine) tablesFor(ctx context.Context, s *cudaspans.Stream, domain *fft.Domain) (*deviceTables, error) {
	logn, err := Log2(int(domain.Cardinality))
	if err != nil {
		return nil, err
	}
	key := tableKey{logn: logn, w: domain.Generator, g: domain.FrMultiplicativeGen}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.tables[key]; ok {
		return t, nil
	}
	n := 1 << logn
	t := &deviceTables{}
	t.logn = logn
	for _, p := range []*cudaspans.DevicePtr{&t.twFwd, &t.twInv, &t.coset, &t.cosetInvN} {
		b, err := e.c.Alloc(ctx, n*frBytes)
		if err != nil {
			for _, b := range t.bufs {
				b.Free()
			}
			return nil, fmt.Errorf("gpu: NTT tables of 2^%d: %w", logn, err)
		}
		t.bufs = append(t.bufs, b)
		*p = b.Ptr()
	}
	k := &deviceKernels{e: e, s: s}
	if err := buildTables(ctx, k, &t.nttTables, domain.Generator, domain.GeneratorInv, domain.FrMultiplicativeGen, domain.FrMultiplicativeGenInv); err != nil {
		for _, b := range t.bufs {
			b.Free()
		}
		return nil, err
	}
	e.tables[key] = t
	return t, nil
}

// Prepare builds the device tables of domain now (on stream s), as the
// first Transform or ComputeH over it would: a proving key's loading
// calls it so that its first proof allocates none. A no-op when they are
// built. Errors: a domain size that is not a power of two in range, the
// tables' allocation (cudaspans.ErrOutOfMemory, wrapped) or kernels.
func (e *Engine) Prepare(ctx context.Context, s *cudaspans.Stream, domain *fft.Domain) error {
	_, err := e.tablesFor(ctx, s, domain)
	return err
}

// Transform runs one NTT in place on the domain.Cardinality elements at
// data (device memory, fr.Element layout) on stream s: forward (Domain.FFT)
// or inverse (Domain.FFTInverse, scaled by 1/n), on the coset
// FrMultiplicativeGen·H when coset is set, with the orders of dec. The
// result equals gnark-crypto's for the same arguments. The work is queued
// on s; synchronize s before reading data.
func (e *Engine) Transform(ctx context.Context, s *cudaspans.Stream, domain *fft.Domain, data cudaspans.DevicePtr, dec Decimation, inverse, coset bool) error {
	t, err := e.tablesFor(ctx, s, domain)
	if err != nil {
		return err
	}
	return runNTT(ctx, &deviceKernels{e: e, s: s}, &t.nttTables, data, dec, inverse, coset)
}

// ComputeH runs groth16's compute_h on the device vectors a, b, c (each
// domain.Cardinality elements: the R1CS evaluations, natural order) on
// stream s, as gnark's computeH: on return a holds H's coefficients in
// bit-reversed order (what gnark returns and pk.G1.Z is ordered for), b and
// c are scratch. Each step is a span (ntt.inverse ×3, ntt.coset ×3,
// groth16.pointwise, ntt.inverse_coset) with its kernels as children; s is
// synchronized at the end of each step so the kernel spans nest in it.
func (e *Engine) ComputeH(ctx context.Context, s *cudaspans.Stream, domain *fft.Domain, a, b, c cudaspans.DevicePtr) error {
	t, err := e.tablesFor(ctx, s, domain)
	if err != nil {
		return err
	}
	n := int(domain.Cardinality)
	den := cosetDen(domain.FrMultiplicativeGen, n)
	step := func(ctx context.Context, name string, fn func(context.Context) error) error {
		ctx, span := e.tracer.Start(ctx, name, trace.WithAttributes(semconv.KeyNTTSize.Int(n), semconv.KeyBackend.String("cuda")))
		defer span.End()
		err := fn(ctx)
		if err == nil {
			err = s.Synchronize(ctx)
		}
		semconv.SetError(span, err)
		return err
	}
	return computeHSteps(ctx, &deviceKernels{e: e, s: s}, &t.nttTables, a, b, c, den, step)
}

// deviceKernels launches the kernels of ntt.cu on one stream.
type deviceKernels struct {
	e *Engine
	s *cudaspans.Stream
}

func (k *deviceKernels) pass(ctx context.Context, data, tw cudaspans.DevicePtr, logn uint, p nttPass, dec Decimation, in, out scaling[cudaspans.DevicePtr]) error {
	logE := min(logn, uint(logTile))
	threads := min(256, max(1, (1<<logE)/2))
	pp := passParams{LogN: uint32(logn), LogMMin: uint32(p.logMMin), T: uint32(p.t),
		InMode: int32(in.mode), OutMode: int32(out.mode)}
	if dec == DIT {
		pp.DIT = 1
	}
	return k.s.Launch(ctx, k.e.fPass, cudaspans.D1(1<<(logn-logE)), cudaspans.D1(threads), frBytes<<logE,
		data, tw, pp, in.table, in.c, out.table, out.c)
}

func (k *deviceKernels) powers(ctx context.Context, out cudaspans.DevicePtr, n int, base, first fr.Element) error {
	chunks := (n + 31) / 32 // ntt.cuh POWERS_CHUNK
	blocks := min((chunks+127)/128, 65535)
	return k.s.Launch(ctx, k.e.fPow, cudaspans.D1(blocks), cudaspans.D1(128), 0, out, base, first, uint32(n))
}

func (k *deviceKernels) pointwise(ctx context.Context, a, b, c cudaspans.DevicePtr, n int, den fr.Element) error {
	blocks := min((n+255)/256, 65535)
	return k.s.Launch(ctx, k.e.fPoint, cudaspans.D1(blocks), cudaspans.D1(256), 0, a, b, c, den, uint32(n))
}

func (k *deviceKernels) slice(b cudaspans.DevicePtr, off, _ int) cudaspans.DevicePtr {
	return b.Add(off * frBytes)
}

type tracerProviderOption struct{ tp trace.TracerProvider }

func (o tracerProviderOption) apply(c *config) { c.tp = o.tp }

// WithTracerProvider records the step spans (ntt.*, groth16.pointwise)
// with tp (default: the global one). Kernel and copy spans follow the
// cudaspans.Context's provider.
func WithTracerProvider(tp trace.TracerProvider) Option { return tracerProviderOption{tp} }
