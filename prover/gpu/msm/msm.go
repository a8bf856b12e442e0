package msm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// MSM computes multi-scalar multiplications on G1 and G2 of BLS12-381 on
// one GPU with Pippenger's bucket method (kernels/msm.cuh describes the steps):
// signed c-bit digits computed on the GPU from the Montgomery-form scalars,
// points counting-sorted by bucket, buckets summed in XYZZ coordinates (or
// by batched affine additions, WithAffineBuckets),
// windows reduced by running sums, and the W window sums combined on the
// host. Scalars and bases are gnark-crypto values, copied to the device
// byte for byte.
//
// An MSM runs one multiplication at a time (its methods serialise on a
// mutex); it is safe for concurrent use.
type MSM struct {
	c        *cudaspans.Context
	releaser *buffer.Releaser
	tracer   trace.Tracer
	maxChunk int
	window   int
	compile  cudaspans.CompileOptions
	// The affine bucket sums' tails of G1 and G2; 0: XYZZ (WithAffineBuckets).
	affineG1, affineG2 int
	// affineMaxG2 > 0: G2 chunks of more points sum in XYZZ (the default's limit).
	affineMaxG2 int

	mu     sync.Mutex
	closed bool
	scalar *msmScalarKernels
	g1     *msmGroup
	g2     *msmGroup // compiled on the first G2 MSM, or by CompileG2
}

// New compiles the MSM kernels of G1 for c's device (NVRTC, cached on
// disk by cudaspans; the modules of msm.cu's parts compile in parallel)
// and returns an MSM; the G2 kernels compile on the first G2 MSM, at
// CompileG2, or here with WithG2. Options: WithTracerProvider,
// WithReleaser, WithMaxChunk, WithWindowBits, WithCompileOptions, WithG2,
// WithAffineBuckets.
// Errors: compile errors (a *cudaspans.CompileError with the log),
// cudaspans.ErrNoCompiler, a bad option.
func New(ctx context.Context, c *cudaspans.Context, opts ...Option) (*MSM, error) {
	cfg, err := newMSMConfig(opts)
	if err != nil {
		return nil, err
	}
	m := &MSM{c: c, releaser: cfg.releaser, tracer: semconv.Tracer(cfg.tp),
		maxChunk: cfg.maxChunk, window: cfg.window, compile: cfg.compile}
	m.affineG1, m.affineG2, m.affineMaxG2 = cfg.affineTails()
	var g2 *msmGroup
	var sk *msmScalarKernels
	var g1 *msmGroup
	jobs := []func() error{
		func() (err error) { sk, err = compileMSMScalar(ctx, c, cfg.compile); return err },
		func() (err error) { g1, err = compileMSMGroup(ctx, c, false, cfg.compile, m.affineG1 > 0); return err },
	}
	if cfg.withG2 {
		jobs = append(jobs, func() (err error) { g2, err = compileMSMGroup(ctx, c, true, cfg.compile, m.affineG2 > 0); return err })
	}
	if err := kernels.Parallel(jobs...); err != nil {
		for _, g := range []*msmGroup{g1, g2} {
			g.close()
		}
		sk.close()
		return nil, err
	}
	m.scalar = sk
	m.g1, m.g2 = g1.with(sk), g2.with(sk)
	return m, nil
}

// FromModules returns an MSM over modules already loaded on c, each
// holding every kernel of its group: g1 is msm.cu compiled without
// MSM_PART, g2 (nil: no G2 MSM) the same with MSM_G2, e.g. precompiled
// images loaded with cudaspans.Context.LoadModuleData on a host without
// NVRTC. The MSM's Close unloads them. Options as New's (compile options
// have no effect). Errors: a bad option, a kernel missing from a module.
func FromModules(c *cudaspans.Context, g1, g2 *cudaspans.Module, opts ...Option) (*MSM, error) {
	cfg, err := newMSMConfig(opts)
	if err != nil {
		return nil, err
	}
	fn := func(mod *cudaspans.Module, names []string) ([]*cudaspans.Function, error) {
		fs := make([]*cudaspans.Function, len(names))
		for i, n := range names {
			if fs[i], err = mod.Function(n); err != nil {
				return nil, fmt.Errorf("msm: %w", err)
			}
		}
		return fs, nil
	}
	fs, err := fn(g1, msmScalarPart.kernels)
	if err != nil {
		return nil, err
	}
	sk := &msmScalarKernels{mod: g1, fill: fs[0], digits: fs[1], scan: fs[2], scatter: fs[3], affineScan: fs[4]}
	m := &MSM{c: c, releaser: cfg.releaser, tracer: semconv.Tracer(cfg.tp),
		maxChunk: cfg.maxChunk, window: cfg.window, scalar: sk}
	m.affineG1, m.affineG2, m.affineMaxG2 = cfg.affineTails()
	for _, g := range []struct {
		mod *cudaspans.Module
		g2  bool
	}{{g1, false}, {g2, true}} {
		if g.mod == nil {
			continue
		}
		grp := &msmGroup{g2: g.g2, affineBytes: msmAffineBytes, xyzzBytes: msmXYZZBytes}
		if g.g2 {
			grp.affineBytes, grp.xyzzBytes = msmAffine2Bytes, msmXYZZ2Bytes
			grp.mods = []*cudaspans.Module{g.mod} // g1's is the scalar module's
		}
		var names []string
		for _, p := range msmPointParts {
			names = append(names, p.module(g.g2, cudaspans.CompileOptions{}).Kernels...)
		}
		fs, err := fn(g.mod, names)
		if err != nil {
			return nil, err
		}
		k := 0
		for _, part := range grp.pointTargets() {
			for _, t := range part {
				*t = fs[k]
				k++
			}
		}
		if g.g2 {
			m.g2 = grp.with(sk)
		} else {
			m.g1 = grp.with(sk)
		}
	}
	return m, nil
}

// Context returns the device context the MSM runs on.
func (m *MSM) Context() *cudaspans.Context { return m.c }

// Close unloads the MSM's kernels. The MSM must not be used afterwards;
// resident base sets belong to their DeviceBases (EvictAll frees them).
func (m *MSM) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	err := errors.Join(m.g1.close(), m.g2.close(), m.scalar.close())
	m.g1, m.g2, m.scalar = nil, nil, nil
	if err != nil {
		return fmt.Errorf("msm: unload kernels: %w", err)
	}
	return nil
}
