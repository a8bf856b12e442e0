package msm

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// Constants of kernels/msm.cuh, repeated for the host side of the plan.
const (
	msmSegment       = 128  // MSM_SEGMENT
	msmReduceSlice   = 32   // MSM_REDUCE_SLICE
	msmWindowThreads = 128  // MSM_WINDOW_SUM_THREADS
	msmScanThreads   = 1024 // MSM_SCAN_THREADS
	msmBlock         = 128  // threads per block of the point kernels
	msmMinChunk      = 1 << 12
	msmMaxPoints     = 1<<31 - 1 // point indices are 31 bits in a sorted entry
	msmAffineBytes   = 96        // G1Affine
	msmXYZZBytes     = 192       // ec.cuh g1_xyzz
	msmAffine2Bytes  = 192       // G2Affine
	msmXYZZ2Bytes    = 384       // ec.cuh g2_xyzz
	msmScalarBytes   = 32
)

// MSM computes multi-scalar multiplications on G1 and G2 of BLS12-381 on
// one GPU with Pippenger's bucket method (kernels/msm.cuh describes the steps):
// signed c-bit digits computed on the GPU from the Montgomery-form scalars,
// points counting-sorted by bucket, buckets summed in XYZZ coordinates,
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

	mu     sync.Mutex
	closed bool
	scalar *msmScalarKernels
	g1     *msmGroup
	g2     *msmGroup // compiled on the first G2 MSM, or by CompileG2
}

// msmScalarKernels is the module of msm.cu's part 1 (MSM_PART_SCALAR):
// the digit, scan and scatter kernels, the same for G1 and G2.
type msmScalarKernels struct {
	mod                         *cudaspans.Module
	fill, digits, scan, scatter *cudaspans.Function
}

// msmGroup is the point kernels of one group, G1 or G2 (msm.cu with
// MSM_G2, kernel names with the suffix _g2), each part its own module
// (MSM_PART 2 to 5), with the shared scalar kernels.
type msmGroup struct {
	g2                                   bool
	mods                                 []*cudaspans.Module
	affineBytes, xyzzBytes               int
	fill, digits, scan, scatter          *cudaspans.Function
	accumulate, merge, reduce, windowSum *cudaspans.Function
}

// Option configures an MSM.
type Option interface{ applyMSM(*msmConfig) }

type msmConfig struct {
	sharedConfig
	maxChunk int
	window   int
	compile  cudaspans.CompileOptions
	withG2   bool
}

type msmOptionFunc func(*msmConfig)

func (f msmOptionFunc) applyMSM(c *msmConfig) { f(c) }

// WithMaxChunk caps the points per device pass (default: as many as device
// memory holds). Larger MSMs are split into chunks whose results are added.
func WithMaxChunk(points int) Option {
	return msmOptionFunc(func(c *msmConfig) { c.maxChunk = points })
}

// WithWindowBits fixes Pippenger's window size c (1 < c ≤ 20); the default
// picks it from the chunk size (msmWindowBits).
func WithWindowBits(c int) Option {
	return msmOptionFunc(func(cfg *msmConfig) { cfg.window = c })
}

// WithCompileOptions adds NVRTC options (defines, flags) to the MSM
// modules' compiles, e.g. for experiments with kernel variants.
func WithCompileOptions(o cudaspans.CompileOptions) Option {
	return msmOptionFunc(func(c *msmConfig) { c.compile = o })
}

// WithG2 compiles the G2 kernels in New too, at once with G1's, rather
// than on the first G2 MSM (Backend.Warmup uses it).
func WithG2() Option {
	return msmOptionFunc(func(c *msmConfig) { c.withG2 = true })
}

// newMSMConfig applies opts and fills the defaults.
func newMSMConfig(opts []Option) (msmConfig, error) {
	var cfg msmConfig
	for _, o := range opts {
		o.applyMSM(&cfg)
	}
	if cfg.window != 0 && (cfg.window < 2 || cfg.window > 20) {
		return cfg, fmt.Errorf("msm: window bits %d out of range [2, 20]", cfg.window)
	}
	if cfg.maxChunk < 0 {
		return cfg, fmt.Errorf("msm: negative chunk size %d", cfg.maxChunk)
	}
	cfg.fillShared()
	return cfg, nil
}

// New compiles the MSM kernels of G1 for c's device (NVRTC, cached on
// disk by cudaspans; the modules of msm.cu's parts compile in parallel)
// and returns an MSM; the G2 kernels compile on the first G2 MSM, at
// CompileG2, or here with WithG2. Options: WithTracerProvider,
// WithReleaser, WithMaxChunk, WithWindowBits, WithCompileOptions, WithG2.
// Errors: compile errors (a *cudaspans.CompileError with the log),
// cudaspans.ErrNoCompiler, a bad option.
func New(ctx context.Context, c *cudaspans.Context, opts ...Option) (*MSM, error) {
	cfg, err := newMSMConfig(opts)
	if err != nil {
		return nil, err
	}
	m := &MSM{c: c, releaser: cfg.releaser, tracer: cfg.tp.Tracer(otelcuzk.ScopeName),
		maxChunk: cfg.maxChunk, window: cfg.window, compile: cfg.compile}
	var g2 *msmGroup
	var sk *msmScalarKernels
	var g1 *msmGroup
	jobs := []func() error{
		func() (err error) { sk, err = compileMSMScalar(ctx, c, cfg.compile); return err },
		func() (err error) { g1, err = compileMSMGroup(ctx, c, false, cfg.compile); return err },
	}
	if cfg.withG2 {
		jobs = append(jobs, func() (err error) { g2, err = compileMSMGroup(ctx, c, true, cfg.compile); return err })
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
	sk := &msmScalarKernels{mod: g1, fill: fs[0], digits: fs[1], scan: fs[2], scatter: fs[3]}
	m := &MSM{c: c, releaser: cfg.releaser, tracer: cfg.tp.Tracer(otelcuzk.ScopeName),
		maxChunk: cfg.maxChunk, window: cfg.window, scalar: sk}
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
		grp.accumulate, grp.merge, grp.reduce, grp.windowSum = fs[0], fs[1], fs[2], fs[3]
		if g.g2 {
			m.g2 = grp.with(sk)
		} else {
			m.g1 = grp.with(sk)
		}
	}
	return m, nil
}

// msmCompileOptions returns the NVRTC inputs of a G1 or G2 MSM module,
// with extra's defines, headers and flags added.
func msmCompileOptions(g2 bool, extra cudaspans.CompileOptions) cudaspans.CompileOptions {
	o := extra
	o.Headers = map[string]string{"msm.cuh": kernels.MSMHeader, "ec.cuh": kernels.EC, "ff.cuh": kernels.FF, "fp2.cuh": kernels.FP2}
	for k, v := range extra.Headers {
		o.Headers[k] = v
	}
	o.Defines = map[string]string{}
	for k, v := range extra.Defines {
		o.Defines[k] = v
	}
	if g2 {
		o.Defines["MSM_G2"] = ""
	}
	return o
}

// msmPart is one module of msm.cu (MSM_PART), its kernel names for G1;
// the point parts' G2 kernels carry the suffix _g2.
type msmPart struct {
	name    string
	part    int // MSM_PART
	kernels []string
}

// msmScalarPart and msmPointParts are msm.cu's modules (kernels/msm.cu,
// "Parts"): ptxas compiles a module on one core, so the parts compile in
// parallel; the scalar part is shared by G1 and G2.
var (
	msmScalarPart = msmPart{"msm_scalar", 1, []string{"msm_fill_u32", "msm_digits_count", "msm_bucket_scan", "msm_scatter"}}
	msmPointParts = []msmPart{
		{"msm_accumulate", 2, []string{"msm_bucket_accumulate"}},
		{"msm_merge", 3, []string{"msm_segment_merge"}},
		{"msm_reduce", 4, []string{"msm_bucket_reduce"}},
		{"msm_window_sum", 5, []string{"msm_window_sum"}},
	}
)

// Modules lists every module of the MSM, as New compiles them (extra adds
// NVRTC options): the scalar part, then the point parts of G1 and of G2.
func Modules(extra cudaspans.CompileOptions) []kernels.Module {
	out := []kernels.Module{msmScalarPart.module(false, extra)}
	for _, g2 := range []bool{false, true} {
		for _, p := range msmPointParts {
			out = append(out, p.module(g2, extra))
		}
	}
	return out
}

// module returns the compile of part p for G1 or G2.
func (p msmPart) module(g2 bool, extra cudaspans.CompileOptions) kernels.Module {
	o := msmCompileOptions(g2 && p.part != 1, extra)
	o.Defines["MSM_PART"] = fmt.Sprint(p.part)
	km := kernels.Module{Name: p.name, Source: kernels.MSM, Opts: o, Kernels: p.kernels}
	if g2 && p.part != 1 {
		km.Name += "_g2"
		km.Kernels = nil
		for _, k := range p.kernels {
			km.Kernels = append(km.Kernels, k+"_g2")
		}
	}
	return km
}

// compileMSMScalar compiles the scalar part.
func compileMSMScalar(ctx context.Context, c *cudaspans.Context, extra cudaspans.CompileOptions) (*msmScalarKernels, error) {
	mod, fs, err := msmScalarPart.module(false, extra).Compile(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("msm: %w", err)
	}
	return &msmScalarKernels{mod: mod, fill: fs[0], digits: fs[1], scan: fs[2], scatter: fs[3]}, nil
}

// compileMSMGroup compiles the point parts of G1 or G2 on c, in parallel
// (extra adds NVRTC options). The group's scalar kernels are set by with.
func compileMSMGroup(ctx context.Context, c *cudaspans.Context, g2 bool, extra cudaspans.CompileOptions) (*msmGroup, error) {
	g := &msmGroup{g2: g2, affineBytes: msmAffineBytes, xyzzBytes: msmXYZZBytes}
	if g2 {
		g.affineBytes, g.xyzzBytes = msmAffine2Bytes, msmXYZZ2Bytes
	}
	targets := []**cudaspans.Function{&g.accumulate, &g.merge, &g.reduce, &g.windowSum}
	mods := make([]*cudaspans.Module, len(msmPointParts))
	jobs := make([]func() error, len(msmPointParts))
	for i, p := range msmPointParts {
		jobs[i] = func() error {
			mod, fs, err := p.module(g2, extra).Compile(ctx, c)
			if err != nil {
				return fmt.Errorf("msm: %s: %w", groupName(g2), err)
			}
			mods[i], *targets[i] = mod, fs[0]
			return nil
		}
	}
	err := kernels.Parallel(jobs...)
	for _, mod := range mods {
		if mod != nil {
			g.mods = append(g.mods, mod)
		}
	}
	if err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// with returns g with the scalar kernels of sk (nil for a nil g).
func (g *msmGroup) with(sk *msmScalarKernels) *msmGroup {
	if g == nil {
		return nil
	}
	g.fill, g.digits, g.scan, g.scatter = sk.fill, sk.digits, sk.scan, sk.scatter
	return g
}

// close unloads the group's own modules (not the shared scalar one).
func (g *msmGroup) close() error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, m := range g.mods {
		errs = append(errs, m.Close())
	}
	g.mods = nil
	return errors.Join(errs...)
}

func (sk *msmScalarKernels) close() error {
	if sk == nil || sk.mod == nil {
		return nil
	}
	err := sk.mod.Close()
	sk.mod = nil
	return err
}

// CompileG2 compiles (or loads from the kernel cache) the G2 kernels now
// rather than on the first G2 MSM; a no-op once they are loaded. Errors
// as New's.
func (m *MSM) CompileG2(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.group(ctx, true)
	return err
}

// group returns the G1 module, or the G2 module, compiling it on first
// use. m.mu is held.
func (m *MSM) group(ctx context.Context, g2 bool) (*msmGroup, error) {
	if m.closed || m.g1 == nil {
		return nil, errors.New("msm: closed")
	}
	if !g2 {
		return m.g1, nil
	}
	if m.g2 == nil {
		g, err := compileMSMGroup(ctx, m.c, true, m.compile)
		if err != nil {
			return nil, err
		}
		m.g2 = g.with(m.scalar)
	}
	return m.g2, nil
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

// msmWindowBits is Pippenger's c for a chunk of n points: about log2(n) − 4
// (a window has 2^(c−1) buckets, so a bucket holds some 32 points), within
// [6, 16]. On an H200 c = 16 beat 14 and 18 at 2^20, 2^22 and 2^24
// (bench/msm.md).
func msmWindowBits(n int) int {
	lg := bits.Len(uint(n - 1))
	return min(16, max(6, lg-4))
}

// msmPlan is the shape of one device pass over n points.
type msmPlan struct {
	n, c, nwin, nb, segCap, m, nslices int
	// byte offsets into the workspace
	offScalars, offBases, offCounts, offBoff, offCursor, offSegOff, offSorted, offPartials, offSegB, offParts, offWSums int
	bytes                                                                                                               int
}

func msmAlign256(x int) int { return (x + 255) &^ 255 }

func newMSMPlan(n, c int, withBases bool, g2 bool) msmPlan {
	affineBytes, xyzzBytes := msmAffineBytes, msmXYZZBytes
	if g2 {
		affineBytes, xyzzBytes = msmAffine2Bytes, msmXYZZ2Bytes
	}
	p := msmPlan{n: n, c: c}
	p.nwin = (256 + c - 1) / c
	p.nb = 1 << (c - 1)
	p.segCap = (n+msmSegment-1)/msmSegment + min(p.nb, n)
	p.m = max(1, min(msmReduceSlice, p.nb/1024))
	p.nslices = p.nb / p.m
	off := 0
	take := func(bytes int) int {
		o := off
		off = msmAlign256(off + bytes)
		return o
	}
	wb := p.nwin * p.nb * 4
	p.offScalars = take(n * msmScalarBytes)
	if withBases {
		p.offBases = take(n * affineBytes)
	}
	p.offCounts = take(wb)
	p.offBoff = take(wb)
	p.offCursor = take(wb)
	p.offSegOff = take(p.nwin * (p.nb + 1) * 4)
	p.offSorted = take(p.nwin * n * 4)
	p.offPartials = take(p.nwin * p.segCap * xyzzBytes)
	p.offSegB = take(p.nwin * p.segCap * 4)
	p.offParts = take(p.nwin * p.nslices * xyzzBytes)
	p.offWSums = take(p.nwin * xyzzBytes)
	p.bytes = off
	return p
}

// xyzz mirrors ec.cuh's xyzz_t over the coordinate field F (fp.Element
// for G1, curve.E2 for G2): x = X/ZZ, y = Y/ZZZ. J is the group's gnark
// Jacobian type, whose fields are (X, Y, Z F).
type xyzz[F any, PF coordinate[F], J ~struct{ X, Y, Z F }] struct {
	X, Y, ZZ, ZZZ F
}

// msmXYZZ mirrors ec.cuh's g1_xyzz (192 bytes); msmXYZZ2 its g2_xyzz
// (384 bytes), over Fp2.
type (
	msmXYZZ  = xyzz[fp.Element, *fp.Element, curve.G1Jac]
	msmXYZZ2 = xyzz[curve.E2, *curve.E2, curve.G2Jac]
)

// coordinate is what jac uses of gnark's Fp and Fp2 elements.
type coordinate[F any] interface {
	*F
	IsZero() bool
	SetOne() *F
	Square(*F) *F
	Mul(*F, *F) *F
}

// jac returns p in gnark's Jacobian coordinates without an inversion
// (ec.cuh xyzz_to_jac): Z = ZZ·ZZZ, X = X·ZZ·ZZZ², Y = Y·ZZ³·ZZZ²;
// infinity (ZZ = 0) is gnark's (1, 1, 0).
func (p xyzz[F, PF, J]) jac() J {
	var r struct{ X, Y, Z F }
	if PF(&p.ZZ).IsZero() {
		PF(&r.X).SetOne()
		PF(&r.Y).SetOne()
		return J(r)
	}
	var zzz2, zz3 F
	PF(&zzz2).Square(&p.ZZZ)
	PF(&zz3).Square(&p.ZZ)
	PF(&zz3).Mul(&zz3, &p.ZZ)
	PF(&r.X).Mul(&p.X, &p.ZZ)
	PF(&r.X).Mul(&r.X, &zzz2)
	PF(&r.Y).Mul(&p.Y, &zz3)
	PF(&r.Y).Mul(&r.Y, &zzz2)
	PF(&r.Z).Mul(&p.ZZ, &p.ZZZ)
	return J(r)
}

// msmBytesAs views b (from the device) as a slice of T.
func msmBytesAs[T any](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}

// msmBytesOf views v as bytes, for a copy to the device.
func msmBytesOf[T any](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(v[0])))
}

// jacobian is gnark-crypto's G1Jac or G2Jac (through a pointer): the
// result of an MSM, added and doubled on the host.
type jacobian[J any] interface {
	*J
	AddAssign(*J) *J
	DoubleAssign() *J
}

// windowSum is ec.cuh's g1_xyzz or g2_xyzz as the device writes a
// window's sum (msmXYZZ, msmXYZZ2), turned into J without an inversion.
// Its zero value is the point at infinity (ZZ = 0).
type windowSum[J any] interface {
	msmXYZZ | msmXYZZ2
	jac() J
}

// The MSM methods below come in G1 and G2 pairs for callers; each pair is
// one generic path over the curve types (A the affine bases, J the
// Jacobian result, X the device's window sums), with g2 selecting the
// kernels, as the kernels are one template over the coordinate field.

// G1 returns Σ scalars[i]·bases[i] over the first len(scalars) points of a
// resident G1 base set (len(scalars) ≤ bases.Len()), on stream s.
//
// name, when not empty, is the span to record (otelcuzk.SpanMSMG1A, ...),
// with cuzk.msm.size and the copies and kernels as children; with an empty
// name they are children of the span in ctx. The scalars are gnark's
// Montgomery form and are converted on the GPU. The device workspace is
// allocated per call (split into chunks when the MSM does not fit) and
// given back through the MSM's Releaser.
//
// Errors: a length mismatch, a G2 set, an evicted base set, ErrTooLarge
// (wrapping cudaspans.ErrOutOfMemory), and driver errors naming the
// operation.
func (m *MSM) G1(ctx context.Context, name string, s *cudaspans.Stream, bases *ResidentBases, scalars []fr.Element) (curve.G1Jac, error) {
	return overResident[curve.G1Jac, *curve.G1Jac, msmXYZZ](m, ctx, name, s, false, bases, scalars)
}

// G2 is G1 on G2: Σ scalars[i]·bases[i] over a resident G2 base set
// (PreloadG2), the same kernels compiled for Fp2 coordinates (msm.cu with
// MSM_G2; loaded by Backend.Warmup, else compiled on the first G2 call, a
// cuda.compile span per module).
func (m *MSM) G2(ctx context.Context, name string, s *cudaspans.Stream, bases *ResidentBases, scalars []fr.Element) (curve.G2Jac, error) {
	return overResident[curve.G2Jac, *curve.G2Jac, msmXYZZ2](m, ctx, name, s, true, bases, scalars)
}

// overResident is G1 and G2.
func overResident[J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, name string, s *cudaspans.Stream, g2 bool,
	bases *ResidentBases, scalars []fr.Element) (J, error) {
	total := infinity[J, X]()
	if bases == nil {
		return total, errors.New("msm: nil base set")
	}
	if bases.g2 != g2 {
		return total, fmt.Errorf("msm: %s MSM over base set %s of %s points", groupName(g2), bases.ID(), groupName(bases.g2))
	}
	if len(scalars) > bases.Len() {
		return total, fmt.Errorf("msm: %d scalars for %d bases of %s", len(scalars), bases.Len(), bases.ID())
	}
	ptr, release, err := bases.acquire()
	if err != nil {
		return total, err
	}
	defer release()
	return sum[J, PJ, X](m, ctx, name, s, g2, bases.owner, ptr, nil, scalars)
}

// G1Resident is G1 over a proving-key base set kept in resident, a DeviceBases (the
// way the CUDA backend's MSMG1 should call it): the first call for set.ID
// uploads the points (a keys.preload span under the MSM's span), later
// calls reuse the device copy. len(scalars) ≤ len(set.Points).
//
// A set without an ID (prover.Prove without WithKeyID) is never kept
// resident, as prover.BaseSet says: it is G1Host over set.Points, the
// bases copied with each chunk and gone when the MSM ends.
func (m *MSM) G1Resident(ctx context.Context, name string, s *cudaspans.Stream, resident *DeviceBases,
	set prover.BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error) {
	return overDeviceBases[curve.G1Affine, curve.G1Jac, *curve.G1Jac, msmXYZZ](m, ctx, name, s, false, resident, set, scalars)
}

// G2Resident is G1Resident on G2 (the proving key's [B]₂ bases).
func (m *MSM) G2Resident(ctx context.Context, name string, s *cudaspans.Stream, resident *DeviceBases,
	set prover.BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error) {
	return overDeviceBases[curve.G2Affine, curve.G2Jac, *curve.G2Jac, msmXYZZ2](m, ctx, name, s, true, resident, set, scalars)
}

// overDeviceBases is G1Resident and G2Resident.
func overDeviceBases[A any, J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, name string, s *cudaspans.Stream, g2 bool,
	resident *DeviceBases, set prover.BaseSet[A], scalars []fr.Element) (res J, err error) {
	if set.ID == "" {
		return overHost[A, J, PJ, X](m, ctx, name, s, g2, set.Points, scalars)
	}
	if name != "" {
		var span trace.Span
		ctx, span = m.tracer.Start(ctx, name, trace.WithAttributes(otelcuzk.KeyMSMSize.Int(len(scalars)),
			otelcuzk.KeyBackend.String("cuda"), otelcuzk.KeyBaseSetID.String(set.ID)),
			trace.WithAttributes(prover.MSMScalarAttributes(ctx)...))
		defer func() {
			otelcuzk.SetError(span, err)
			span.End()
		}()
	}
	if resident == nil {
		return res, errors.New("msm: nil DeviceBases")
	}
	for attempt := 0; ; attempt++ {
		rb, err := preloadSet(ctx, resident, s, set, g2)
		if err != nil {
			return res, err
		}
		res, err = overResident[J, PJ, X](m, ctx, "", s, g2, rb, scalars)
		if errors.Is(err, ErrBaseSetEvicted) && attempt == 0 {
			// Evicted between the upload and the MSM taking hold of it
			// (an EvictKeys call): upload it again, once.
			continue
		}
		return res, err
	}
}

// G1Host is G1 over bases in host memory: each chunk's bases are copied to
// the device with its scalars, so nothing stays resident. For proving-key
// bases prefer a DeviceBases set, uploaded once.
func (m *MSM) G1Host(ctx context.Context, name string, s *cudaspans.Stream, bases []curve.G1Affine, scalars []fr.Element) (curve.G1Jac, error) {
	return overHost[curve.G1Affine, curve.G1Jac, *curve.G1Jac, msmXYZZ](m, ctx, name, s, false, bases, scalars)
}

// G2Host is G1Host on G2.
func (m *MSM) G2Host(ctx context.Context, name string, s *cudaspans.Stream, bases []curve.G2Affine, scalars []fr.Element) (curve.G2Jac, error) {
	return overHost[curve.G2Affine, curve.G2Jac, *curve.G2Jac, msmXYZZ2](m, ctx, name, s, true, bases, scalars)
}

// overHost is G1Host and G2Host.
func overHost[A any, J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, name string, s *cudaspans.Stream, g2 bool,
	bases []A, scalars []fr.Element) (J, error) {
	if len(scalars) > len(bases) {
		return infinity[J, X](), fmt.Errorf("msm: %d scalars for %d bases", len(scalars), len(bases))
	}
	return sum[J, PJ, X](m, ctx, name, s, g2, nil, 0, msmBytesOf(bases[:len(scalars)]), scalars)
}

// infinity is the point at infinity of J: the zero window sum's.
func infinity[J any, X windowSum[J]]() J {
	var zero X
	return zero.jac()
}

// sum runs the MSM (run) and adds its chunks' combined window sums.
func sum[J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, name string, s *cudaspans.Stream, g2 bool,
	pool *DeviceBases, basesPtr cudaspans.DevicePtr, hostBases []byte, scalars []fr.Element) (J, error) {
	total := infinity[J, X]()
	err := m.run(ctx, name, s, g2, pool, basesPtr, hostBases, scalars, func(wsums []byte, c int) {
		part := combineWindows[J, PJ](msmBytesAs[X](wsums), c)
		PJ(&total).AddAssign(&part)
	})
	return total, err
}

// run computes the MSM over device bases at basesPtr, or over hostBases
// (points as bytes) when basesPtr is 0, and hands each chunk's window sums
// (nwin points in the group's XYZZ layout) and window size to combine.
// Inside a proof with a key ID (prover.ProofKeyID) its workspace is the
// key's proof buffer in pool (kept for the next proof); else it is
// allocated and freed here.
func (m *MSM) run(ctx context.Context, name string, s *cudaspans.Stream, g2 bool, pool *DeviceBases, basesPtr cudaspans.DevicePtr,
	hostBases []byte, scalars []fr.Element, combine func(wsums []byte, c int)) (err error) {
	n := len(scalars)
	if name != "" {
		var span trace.Span
		ctx, span = m.tracer.Start(ctx, name, trace.WithAttributes(otelcuzk.KeyMSMSize.Int(n),
			otelcuzk.KeyBackend.String("cuda")), trace.WithAttributes(prover.MSMScalarAttributes(ctx)...))
		defer func() {
			otelcuzk.SetError(span, err)
			span.End()
		}()
	}
	if n == 0 {
		return nil
	}
	if s == nil {
		return errors.New("msm: nil stream")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.group(ctx, g2)
	if err != nil {
		return err
	}

	chunk := min(n, msmMaxPoints)
	if m.maxChunk > 0 {
		chunk = min(chunk, m.maxChunk)
	}
	withBases := basesPtr == 0
	// Find a chunk size whose workspace fits: halve on out-of-memory.
	var ws *cudaspans.DeviceBuffer
	var giveBack func() error
	var plan msmPlan
	for {
		plan = newMSMPlan(chunk, m.windowFor(chunk), withBases, g2)
		ws, giveBack, err = m.workspace(ctx, pool, plan.bytes)
		if err == nil {
			break
		}
		if !errors.Is(err, cudaspans.ErrOutOfMemory) && !errors.Is(err, ErrBaseBudget) {
			return fmt.Errorf("msm: workspace of %d bytes: %w", plan.bytes, err)
		}
		if chunk <= msmMinChunk {
			return fmt.Errorf("msm: %d points, workspace of %d bytes for a chunk of %d: %w: %w",
				n, plan.bytes, chunk, ErrTooLarge, err)
		}
		chunk = max(msmMinChunk, chunk/2)
	}
	defer func() {
		if rerr := giveBack(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	nchunks := (n + chunk - 1) / chunk
	if span := trace.SpanFromContext(ctx); name != "" {
		span.SetAttributes(otelcuzk.KeyMSMWindowBits.Int(plan.c), otelcuzk.KeyMSMChunks.Int(nchunks))
	}
	for start := 0; start < n; start += chunk {
		k := min(chunk, n-start)
		p := plan
		if k != plan.n {
			// The last chunk is smaller: same workspace, its own shape.
			p = newMSMPlan(k, m.windowFor(k), withBases, g2)
			if p.bytes > plan.bytes { // cannot happen: fewer points, no larger window
				return fmt.Errorf("msm: internal error: plan for %d points larger than for %d", k, plan.n)
			}
		}
		bp := basesPtr + cudaspans.DevicePtr(start*g.affineBytes)
		if withBases {
			bp = ws.Ptr() + cudaspans.DevicePtr(p.offBases)
			if err := cudaspans.HtoD(ctx, s, bp, hostBases[start*g.affineBytes:(start+k)*g.affineBytes]); err != nil {
				return fmt.Errorf("msm: copy bases: %w", err)
			}
		}
		wsums, err := m.pass(ctx, s, g, ws.Ptr(), p, bp, scalars[start:start+k])
		if err != nil {
			return err
		}
		combine(wsums, p.c)
	}
	return nil
}

// workspace returns a device workspace of at least bytes and the function
// that gives it back: the proof's key's buffer from pool (prover.ProofKeyID),
// or one allocated now and released at once when there is no key or pool.
func (m *MSM) workspace(ctx context.Context, pool *DeviceBases, bytes int) (*cudaspans.DeviceBuffer, func() error, error) {
	if key := prover.ProofKeyID(ctx); key != "" && pool != nil {
		ws, done, err := pool.ProofBuffer(ctx, key, "msm.workspace", bytes)
		if err != nil {
			return nil, nil, err
		}
		return ws, func() error { done(); return nil }, nil
	}
	ws, err := m.c.Alloc(ctx, bytes)
	if err != nil {
		return nil, nil, err
	}
	return ws, func() error { return m.releaser.Release(ctx, "msm.workspace", ws) }, nil
}

func (m *MSM) windowFor(n int) int {
	if m.window != 0 {
		return m.window
	}
	return msmWindowBits(n)
}

// pass runs the kernels over one chunk and returns its window sums.
func (m *MSM) pass(ctx context.Context, s *cudaspans.Stream, g *msmGroup, ws cudaspans.DevicePtr, p msmPlan,
	bases cudaspans.DevicePtr, scalars []fr.Element) ([]byte, error) {
	at := func(off int) cudaspans.DevicePtr { return ws + cudaspans.DevicePtr(off) }
	n, c, nwin, nb := uint32(p.n), uint32(p.c), uint32(p.nwin), uint32(p.nb)
	segCap := uint32(p.segCap)
	wb := p.nwin * p.nb
	grid := func(x, y int) cudaspans.Dim3 { return cudaspans.Dim3{X: uint32(x), Y: uint32(y), Z: 1} }
	blocks := func(threads, per int) int { return (threads + per - 1) / per }

	steps := []func() error{
		func() error { return cudaspans.HtoD(ctx, s, at(p.offScalars), scalars) },
		func() error {
			return s.Launch(ctx, g.fill, cudaspans.D1(blocks(wb, 256)), cudaspans.D1(256), 0, at(p.offCounts), uint32(0), uint32(wb))
		},
		func() error {
			return s.Launch(ctx, g.digits, cudaspans.D1(blocks(p.n, 256)), cudaspans.D1(256), 0,
				at(p.offScalars), n, c, nwin, at(p.offCounts))
		},
		func() error {
			return s.Launch(ctx, g.scan, cudaspans.D1(p.nwin), cudaspans.D1(msmScanThreads), 0,
				at(p.offCounts), nb, at(p.offBoff), at(p.offCursor), at(p.offSegOff))
		},
		func() error {
			return s.Launch(ctx, g.scatter, cudaspans.D1(blocks(p.n, 256)), cudaspans.D1(256), 0,
				at(p.offScalars), n, c, nwin, at(p.offCursor), at(p.offSorted))
		},
		func() error {
			return s.Launch(ctx, g.accumulate, grid(blocks(p.segCap, msmBlock), p.nwin), cudaspans.D1(msmBlock), 0,
				bases, at(p.offSorted), at(p.offCounts), at(p.offBoff), at(p.offSegOff), n, nb, segCap,
				at(p.offPartials), at(p.offSegB))
		},
		func() error {
			// Pairwise passes up to the longest possible bucket
			// (ceil(n/MSM_SEGMENT) segments); passes with nothing to add
			// return at once.
			maxSeg := (p.n + msmSegment - 1) / msmSegment
			for stride := 1; stride < maxSeg; stride <<= 1 {
				if err := s.Launch(ctx, g.merge, grid(blocks(p.segCap, msmBlock), p.nwin), cudaspans.D1(msmBlock), 0,
					at(p.offPartials), at(p.offSegB), at(p.offSegOff), nb, segCap, uint32(stride)); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			return s.Launch(ctx, g.reduce, grid(blocks(p.nslices, msmBlock), p.nwin), cudaspans.D1(msmBlock), 0,
				at(p.offPartials), at(p.offSegOff), nb, uint32(p.m), segCap, at(p.offParts))
		},
		func() error {
			return s.Launch(ctx, g.windowSum, cudaspans.D1(p.nwin), cudaspans.D1(msmWindowThreads), 0,
				at(p.offParts), uint32(p.nslices), at(p.offWSums))
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("msm: %w", err)
		}
	}
	wsums := make([]byte, p.nwin*g.xyzzBytes)
	if err := cudaspans.DtoH(ctx, s, wsums, at(p.offWSums)); err != nil {
		return nil, fmt.Errorf("msm: copy window sums: %w", err)
	}
	if err := s.Synchronize(ctx); err != nil {
		return nil, fmt.Errorf("msm: %w", err)
	}
	return wsums, nil
}

// combineWindows returns Σ_w 2^(c·w)·wsums[w] by Horner's rule, with
// gnark-crypto on the host (G1 or G2).
func combineWindows[J any, PJ jacobian[J], X windowSum[J]](wsums []X, c int) J {
	acc := wsums[len(wsums)-1].jac()
	for w := len(wsums) - 2; w >= 0; w-- {
		for range c {
			PJ(&acc).DoubleAssign()
		}
		j := wsums[w].jac()
		PJ(&acc).AddAssign(&j)
	}
	return acc
}

// Compile-time checks that the Go mirrors match the C layouts.
var (
	_ [msmAffineBytes - int(unsafe.Sizeof(curve.G1Affine{}))]struct{}
	_ [int(unsafe.Sizeof(curve.G1Affine{})) - msmAffineBytes]struct{}
	_ [msmXYZZBytes - int(unsafe.Sizeof(msmXYZZ{}))]struct{}
	_ [int(unsafe.Sizeof(msmXYZZ{})) - msmXYZZBytes]struct{}
	_ [msmAffine2Bytes - int(unsafe.Sizeof(curve.G2Affine{}))]struct{}
	_ [int(unsafe.Sizeof(curve.G2Affine{})) - msmAffine2Bytes]struct{}
	_ [msmXYZZ2Bytes - int(unsafe.Sizeof(msmXYZZ2{}))]struct{}
	_ [int(unsafe.Sizeof(msmXYZZ2{})) - msmXYZZ2Bytes]struct{}
	_ [msmScalarBytes - int(unsafe.Sizeof(fr.Element{}))]struct{}
)
