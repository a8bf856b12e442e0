package fixedbase

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
	"github.com/otelcuzk/otelcuzk/prover/setup"
)

// Sizes of the device types (ec.cuh, ff.cuh), bytes.
const (
	scalarBytes   = 32
	g1AffineBytes = 96
	g1XYZZBytes   = 192
	g2AffineBytes = 192
	g2XYZZBytes   = 384
)

// Defaults: the window of the tables and the run length of the affine
// conversion (FB_MAX_GROUP bounds it), and the most scalars of one pass.
const (
	DefaultWindowBits = 12
	defaultGroup      = 16
	maxGroup          = 32 // FB_MAX_GROUP
	defaultChunk      = 1 << 23
	minChunk          = 1 << 14
	threads           = 128
)

var _ setup.Multiplier = (*Engine)(nil)

// Engine multiplies the generators of G1 and G2 by vectors of scalars on
// one device (setup.Multiplier). Its methods serialise on a mutex; it is
// safe for concurrent use. The tables stay on the device until Close.
type Engine struct {
	c      *cudaspans.Context
	owned  bool // Open made c: Close closes it
	tracer trace.Tracer
	window int
	group  int
	chunk  int

	mu     sync.Mutex
	closed bool
	g1, g2 *group
}

// group is the kernels and the table of G1 or G2.
type group struct {
	name                   string
	mod                    *cudaspans.Module
	mul, affine            *cudaspans.Function
	table                  *cudaspans.DeviceBuffer
	affineBytes, xyzzBytes int
}

// Option configures New and Open.
type Option interface{ apply(*config) }

type config struct {
	tp     trace.TracerProvider
	window int
	group  int
	chunk  int
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider records setup.table with tp (default: the global
// one); kernel, copy and allocation spans follow the device context's.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithWindowBits sets the table's window c (2 ≤ c ≤ 20, default 12:
// 22·2048 points, 4.3 MB in G1 and 8.7 MB in G2; 22 mixed additions per
// scalar).
func WithWindowBits(c int) Option { return optionFunc(func(cfg *config) { cfg.window = c }) }

// WithMaxChunk caps the scalars of one device pass (default 2^23; fewer
// when device memory is short).
func WithMaxChunk(n int) Option { return optionFunc(func(cfg *config) { cfg.chunk = n }) }

// WithGroup sets the points per inversion of the affine conversion
// (1 ≤ g ≤ 32, default 16).
func WithGroup(g int) Option { return optionFunc(func(cfg *config) { cfg.group = g }) }

func newConfig(opts []Option) (config, error) {
	cfg := config{window: DefaultWindowBits, group: defaultGroup, chunk: defaultChunk}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	switch {
	case cfg.window < 2 || cfg.window > 20:
		return cfg, fmt.Errorf("fixedbase: window bits %d out of range [2, 20]", cfg.window)
	case cfg.group < 1 || cfg.group > maxGroup:
		return cfg, fmt.Errorf("fixedbase: group %d out of range [1, %d]", cfg.group, maxGroup)
	case cfg.chunk < 1:
		return cfg, fmt.Errorf("fixedbase: chunk %d is not positive", cfg.chunk)
	}
	return cfg, nil
}

// Modules lists the NVRTC compiles of the engine: fixedbase.cu for G1 and
// with FB_G2 for G2.
func Modules() []kernels.Module {
	mod := func(g2 bool) kernels.Module {
		o := cudaspans.CompileOptions{
			Headers: map[string]string{"fixedbase.cuh": kernels.FixedBaseHeader, "ec.cuh": kernels.EC, "ff.cuh": kernels.FF, "fp2.cuh": kernels.FP2},
			Flags:   []string{"-std=c++17"},
			Defines: map[string]string{},
		}
		m := kernels.Module{Name: "fixedbase", Source: kernels.FixedBase, Opts: o, Kernels: []string{"fb_scalar_mul", "fb_batch_affine"}}
		if g2 {
			o.Defines["FB_G2"] = ""
			m.Name, m.Kernels = "fixedbase_g2", []string{"fb_scalar_mul_g2", "fb_batch_affine_g2"}
		}
		return m
	}
	return []kernels.Module{mod(false), mod(true)}
}

// Open opens device ordinal and returns an Engine on it that owns the
// context (Close closes it). Errors: as New's, and an error wrapping
// cudaspans.ErrNoDevice when there is no usable device.
func Open(ctx context.Context, ordinal int, opts ...Option) (*Engine, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c, err := cudaspans.Open(ordinal, cudaspans.WithTracerProvider(cfg.tp))
	if err != nil {
		return nil, fmt.Errorf("fixedbase: %w", err)
	}
	e, err := New(ctx, c, opts...)
	if err != nil {
		c.Close()
		return nil, err
	}
	e.owned = true
	return e, nil
}

// New compiles the kernels of both groups on c (in parallel; NVRTC's
// images are cached on disk by cudaspans), builds the generators' tables
// and uploads them (a setup.table span). Options: WithTracerProvider,
// WithWindowBits, WithGroup, WithMaxChunk. Errors: a bad option, a
// compile error, an allocation or copy error.
func New(ctx context.Context, c *cudaspans.Context, opts ...Option) (*Engine, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	e := &Engine{c: c, tracer: semconv.Tracer(cfg.tp), window: cfg.window, group: cfg.group, chunk: cfg.chunk,
		g1: &group{name: "G1", affineBytes: g1AffineBytes, xyzzBytes: g1XYZZBytes},
		g2: &group{name: "G2", affineBytes: g2AffineBytes, xyzzBytes: g2XYZZBytes}}
	mods := Modules()
	var t1 []curve.G1Affine
	var t2 []curve.G2Affine
	err = kernels.Parallel(
		func() error { return e.g1.compile(ctx, c, mods[0]) },
		func() error { return e.g2.compile(ctx, c, mods[1]) },
		func() error { t1, t2 = G1Table(cfg.window), G2Table(cfg.window); return nil },
	)
	if err == nil {
		err = e.upload(ctx, t1, t2)
	}
	if err != nil {
		e.release(ctx)
		return nil, err
	}
	return e, nil
}

func (g *group) compile(ctx context.Context, c *cudaspans.Context, m kernels.Module) error {
	mod, fs, err := m.Compile(ctx, c)
	if err != nil {
		return fmt.Errorf("fixedbase: %w", err)
	}
	g.mod, g.mul, g.affine = mod, fs[0], fs[1]
	return nil
}

// upload copies both tables to the device, as one setup.table span.
func (e *Engine) upload(ctx context.Context, t1 []curve.G1Affine, t2 []curve.G2Affine) (err error) {
	ctx, span := e.tracer.Start(ctx, semconv.SpanSetupTable, trace.WithAttributes(
		attribute.Int("cuzk.setup.window_bits", e.window), semconv.KeySetupPoints.Int(len(t1)+len(t2))))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	s, err := e.c.NewStream()
	if err != nil {
		return err
	}
	defer s.Close(ctx)
	if e.g1.table, err = e.c.Alloc(ctx, len(t1)*g1AffineBytes); err != nil {
		return fmt.Errorf("fixedbase: G1 table: %w", err)
	}
	if e.g2.table, err = e.c.Alloc(ctx, len(t2)*g2AffineBytes); err != nil {
		return fmt.Errorf("fixedbase: G2 table: %w", err)
	}
	if err := cudaspans.HtoD(ctx, s, e.g1.table.Ptr(), t1); err != nil {
		return err
	}
	if err := cudaspans.HtoD(ctx, s, e.g2.table.Ptr(), t2); err != nil {
		return err
	}
	return s.Synchronize(ctx)
}

// MulG1 sets out[i] = [scalars[i]]₁ (setup.Multiplier). Errors: lengths
// that differ, a closed engine, ctx's, device memory too short for the
// smallest pass (naming the bytes needed and free, wrapping
// cudaspans.ErrOutOfMemory), a device error.
func (e *Engine) MulG1(ctx context.Context, scalars []fr.Element, out []curve.G1Affine) error {
	return mul(ctx, e, e.g1, scalars, out)
}

// MulG2 sets out[i] = [scalars[i]]₂ (setup.Multiplier); errors as MulG1's.
func (e *Engine) MulG2(ctx context.Context, scalars []fr.Element, out []curve.G2Affine) error {
	return mul(ctx, e, e.g2, scalars, out)
}

// mul is MulG1 or MulG2: out, the affine points of g, checked against
// scalars and handed to run.
func mul[P any](ctx context.Context, e *Engine, g *group, scalars []fr.Element, out []P) error {
	if len(out) != len(scalars) {
		return fmt.Errorf("fixedbase: %d %s outputs for %d scalars", len(out), g.name, len(scalars))
	}
	if len(out) == 0 {
		return nil
	}
	return e.run(ctx, g, scalars, unsafe.Pointer(&out[0]))
}

// ErrClosed is returned by the methods of a closed Engine.
var ErrClosed = semconv.NewError(semconv.ErrorTypeUnavailable, "fixedbase: engine closed")

// run computes the points of scalars into out (len(scalars) affine points
// of g) in passes of at most e.chunk scalars: scalars up, the
// multiplication kernel, the affine kernel, the points down.
func (e *Engine) run(ctx context.Context, g *group, scalars []fr.Element, out unsafe.Pointer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	n := len(scalars)
	per := scalarBytes + g.xyzzBytes + g.affineBytes
	chunk := min(n, e.chunk)
	free, _, err := e.c.MemInfo()
	if err != nil {
		return fmt.Errorf("fixedbase: %w", err)
	}
	// Leave a sixteenth of the free memory to the driver and others.
	for chunk > minChunk && uint64(chunk*per) > free-free/16 {
		chunk /= 2
	}
	if uint64(chunk*per) > free {
		return fmt.Errorf("fixedbase: %d %s points need %s of device memory in passes of %d (%d bytes a point), %s free: %w",
			n, g.name, human.Bytes(uint64(chunk*per)), chunk, per, human.Bytes(uint64(free)), cudaspans.ErrOutOfMemory)
	}
	var bufs []*cudaspans.DeviceBuffer
	defer func() {
		for _, b := range bufs {
			_ = e.c.Free(context.WithoutCancel(ctx), b)
		}
	}()
	alloc := func(bytes int) (*cudaspans.DeviceBuffer, error) {
		b, err := e.c.Alloc(ctx, bytes)
		if err != nil {
			if errors.Is(err, cudaspans.ErrOutOfMemory) {
				return nil, fmt.Errorf("fixedbase: %d %s points need %s of device memory in passes of %d, %s free: %w",
					n, g.name, human.Bytes(uint64(chunk*per)), chunk, human.Bytes(uint64(free)), err)
			}
			return nil, fmt.Errorf("fixedbase: %w", err)
		}
		bufs = append(bufs, b)
		return b, nil
	}
	dScalars, err := alloc(chunk * scalarBytes)
	if err != nil {
		return err
	}
	dSums, err := alloc(chunk * g.xyzzBytes)
	if err != nil {
		return err
	}
	dOut, err := alloc(chunk * g.affineBytes)
	if err != nil {
		return err
	}
	s, err := e.c.NewStream()
	if err != nil {
		return fmt.Errorf("fixedbase: %w", err)
	}
	defer s.Close(context.WithoutCancel(ctx))
	for lo := 0; lo < n; lo += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := min(chunk, n-lo)
		if err := cudaspans.HtoD(ctx, s, dScalars.Ptr(), scalars[lo:lo+m]); err != nil {
			return fmt.Errorf("fixedbase: %w", err)
		}
		if err := s.Launch(ctx, g.mul, cudaspans.D1(blocks(m, threads)), cudaspans.D1(threads), 0,
			dScalars.Ptr(), uint32(m), g.table.Ptr(), uint32(e.window), dSums.Ptr()); err != nil {
			return fmt.Errorf("fixedbase: %w", err)
		}
		runs := (m + e.group - 1) / e.group
		if err := s.Launch(ctx, g.affine, cudaspans.D1(blocks(runs, threads)), cudaspans.D1(threads), 0,
			dSums.Ptr(), uint32(m), uint32(e.group), dOut.Ptr()); err != nil {
			return fmt.Errorf("fixedbase: %w", err)
		}
		dst := unsafe.Add(out, lo*g.affineBytes)
		if err := s.CopyDtoH(ctx, dst, dOut.Ptr(), m*g.affineBytes); err != nil {
			return fmt.Errorf("fixedbase: %w", err)
		}
		if err := s.Synchronize(ctx); err != nil {
			return fmt.Errorf("fixedbase: %w", err)
		}
	}
	return nil
}

func blocks(n, per int) int { return (n + per - 1) / per }

// Close frees the tables and unloads the modules (and closes the device
// context when Open made it). A second Close is a no-op.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.release(context.Background())
}

func (e *Engine) release(ctx context.Context) error {
	var errs []error
	for _, g := range []*group{e.g1, e.g2} {
		if g.table != nil {
			errs = append(errs, e.c.Free(ctx, g.table))
		}
		if g.mod != nil {
			errs = append(errs, g.mod.Close())
		}
	}
	if e.owned {
		errs = append(errs, e.c.Close())
	}
	return errors.Join(errs...)
}
