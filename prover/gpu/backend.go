package gpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/parallel"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
)

var _ prover.BaseEvicter = (*Backend)(nil)

func init() {
	prover.RegisterBackend("cuda", func(ctx context.Context, o prover.BackendOptions) (prover.Backend, error) {
		return Open(ctx, o)
	})
}

// Backend is the prover.Backend on one CUDA device: ComputeH with the NTT
// kernels of prover/gpu/ntt, MSMG1 and MSMG2 with the Pippenger MSM
// kernels of prover/gpu/msm over bases kept resident on the device; MSMG2 can run on the
// CPU with gnark-crypto instead (BackendOptions.Device.MSMG2, SetMSMG2), concurrently
// with the GPU work. Device work is serialised on one stream; waiting for
// it is a gpu.lock span. Safe for concurrent use.
type Backend struct {
	c        *cudaspans.Context
	s        *cudaspans.Stream
	bases    *msm.DeviceBases
	cpu      *prover.CPU
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

	hostCopy HostCopy
	g2OnCPU  bool
	stage    [2]*cudaspans.PinnedBuffer // ComputeH's double buffer (staged mode), under mu
	// scratch holds the MSM scalars (staged mode) per proving key
	// (prover.ProofKeyID; "" for proofs without one), grown to the key's
	// largest MSM, freed with the key (EvictBases) and at Close; under mu.
	scratch map[string]*cudaspans.PinnedBuffer
	// stagedFrom, when > 0, replaces minPinnedCopy for the staged mode
	// (tests only).
	stagedFrom int

	// fault is the first sticky CUDA error (cudaspans.ErrSticky) seen on
	// this device, wrapped with prover.ErrDeviceFault; once set, every
	// later call fails with it at once: the device is fenced off.
	fault atomic.Pointer[error]
}

// Fault returns the error that fenced the device off (wrapping
// prover.ErrDeviceFault and the sticky cudaspans.Error), or nil while the
// device is healthy. Safe to call concurrently.
func (b *Backend) Fault() error {
	if e := b.fault.Load(); e != nil {
		return *e
	}
	return nil
}

// checkFault turns a sticky CUDA error into a device fault: the device is
// fenced off (Fault) and the error wraps prover.ErrDeviceFault, so the
// engine takes the worker out of service and hands its proof to another.
// Other errors pass unchanged.
func (b *Backend) checkFault(err error) error {
	if err == nil || errors.Is(err, prover.ErrDeviceFault) || !errors.Is(err, cudaspans.ErrSticky) {
		return err
	}
	ordinal := -1
	if b.c != nil {
		ordinal = b.c.Device().Ordinal
	}
	f := fmt.Errorf("%w on cuda:%d: %w", prover.ErrDeviceFault, ordinal, err)
	b.fault.CompareAndSwap(nil, &f)
	return *b.fault.Load()
}

// HostCopy is how the backend moves host vectors (a, b, c, H, the MSM
// scalars) to and from the device. The vectors come from mmap'd pageable
// memory, from which the driver copies through its own small staging
// buffers at a fraction of the link's bandwidth.
type HostCopy string

const (
	// HostCopyStaged copies through pinned staging memory owned by the
	// backend (allocated on first use, kept between proofs, released at
	// Close): ComputeH's vectors in chunks of StageChunk bytes, the CPU
	// copy of one chunk overlapping the DMA of the previous one; MSM
	// scalars copied into one pinned buffer, which the MSM uploads from.
	// The CPU copies run on several goroutines. The default.
	HostCopyStaged HostCopy = "staged"
	// HostCopyRegister pins the caller's memory with cuMemHostRegister for
	// the duration of each call (cuda.host_register, then a buffer.release
	// span of kind pinned that unregisters it).
	HostCopyRegister HostCopy = "register"
	// HostCopyPageable copies from the pageable memory as it is.
	HostCopyPageable HostCopy = "pageable"
)

// StageChunk is the size of each of the two pinned staging buffers of
// HostCopyStaged, in bytes.
const StageChunk = 32 << 20

// frBytes is the size of an fr.Element on the host and of fr_t on the device.
const frBytes = 32

// minPinnedCopy is the smallest vector (bytes) worth staging or pinning;
// smaller ones go pageable, and small Go heap slices may share pages with
// other objects, which cuMemHostRegister refuses.
const minPinnedCopy = 1 << 20

// ParseHostCopy parses "staged", "register" or "pageable" ("" is staged).
func ParseHostCopy(s string) (HostCopy, error) {
	switch HostCopy(s) {
	case "", HostCopyStaged:
		return HostCopyStaged, nil
	case HostCopyRegister, HostCopyPageable:
		return HostCopy(s), nil
	}
	return "", fmt.Errorf("cuda backend: host copy mode %q (want staged, register or pageable)", s)
}

// SetHostCopy changes how host vectors are copied (default: staged, or
// BackendOptions.Device.HostCopy at Open). It waits for the operation in
// flight.
func (b *Backend) SetHostCopy(m HostCopy) error {
	if _, err := ParseHostCopy(string(m)); err != nil {
		return err
	}
	b.mu.Lock()
	b.hostCopy = m
	b.mu.Unlock()
	return nil
}

// HostCopyMode returns the current host copy mode.
func (b *Backend) HostCopyMode() HostCopy {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hostCopy
}

// Where MSMG2 runs (BackendOptions.Device.MSMG2, SetMSMG2).
const (
	// MSMG2GPU runs the G2 MSM on the device, after or before the G1
	// MSMs (they share the device). The default.
	MSMG2GPU = "gpu"
	// MSMG2CPU runs the G2 MSM on the CPU with gnark-crypto, taking no
	// device lock, so it overlaps the GPU's G1 work.
	MSMG2CPU = "cpu"
)

// SetMSMG2 chooses where MSMG2 runs: MSMG2GPU or MSMG2CPU ("" is the
// default, the GPU). It waits for the operation in flight.
func (b *Backend) SetMSMG2(where string) error {
	onCPU, err := parseMSMG2(where)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.g2OnCPU = onCPU
	b.mu.Unlock()
	return nil
}

func parseMSMG2(where string) (onCPU bool, err error) {
	switch where {
	case "", MSMG2GPU:
		return false, nil
	case MSMG2CPU:
		return true, nil
	}
	return false, fmt.Errorf("cuda backend: G2 MSM placement %q (want gpu or cpu)", where)
}

// CheckDeviceSettings validates the settings Open takes
// (prover.DeviceSettings: HostCopy as ParseHostCopy, MSMG2 gpu or cpu)
// without a device, so a command can refuse a typo at start on any host
// rather than on the first GPU host. Errors name the field's value and the
// words it wants; Open returns the same.
func CheckDeviceSettings(s prover.DeviceSettings) error {
	_, _, err := parseDeviceSettings(s)
	return err
}

func parseDeviceSettings(s prover.DeviceSettings) (HostCopy, bool, error) {
	hc, err := ParseHostCopy(s.HostCopy)
	if err != nil {
		return "", false, err
	}
	g2OnCPU, err := parseMSMG2(s.MSMG2)
	if err != nil {
		return "", false, err
	}
	return hc, g2OnCPU, nil
}

var _ prover.Backend = (*Backend)(nil)

// Open opens the CUDA backend on device o.DeviceOrdinal: the device's
// primary context and one stream, copying host vectors and placing the G2
// MSM as o.Device says (malformed settings are refused before the device
// is touched, as CheckDeviceSettings). It compiles nothing: the kernel modules
// are compiled by NVRTC (or taken from the kernel cache) by Warmup, which
// the first proof calls if nobody did before. Without a driver or device
// it returns an error wrapping prover.ErrBackendUnavailable and
// cudaspans.ErrNoDevice that says why in one line.
func Open(ctx context.Context, o prover.BackendOptions) (*Backend, error) {
	if err := CheckDeviceSettings(o.Device); err != nil {
		return nil, err
	}
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
	return openOn(ctx, c, o)
}

// openOn is Open on an opened device context c, which the backend owns
// from here (closed on failure too); tests give it a fake device.
func openOn(ctx context.Context, c *cudaspans.Context, o prover.BackendOptions) (*Backend, error) {
	hc, g2OnCPU, err := parseDeviceSettings(o.Device)
	if err != nil {
		c.Close()
		return nil, err
	}
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	b := &Backend{c: c, cpu: prover.NewCPU(tp), releaser: buffer.OrSync(o.Releaser, tp), tp: tp, tracer: tp.Tracer(semconv.ScopeName),
		hostCopy: hc, g2OnCPU: g2OnCPU}
	b.warm = b.compileModules
	fail := func(err error) (*Backend, error) {
		b.Close()
		return nil, err
	}
	if b.s, err = c.NewStream(); err != nil {
		return fail(fmt.Errorf("cuda backend: stream: %w", err))
	}
	if b.bases, err = msm.NewDeviceBases(ctx, c, msm.WithTracerProvider(tp), msm.WithReleaser(b.releaser)); err != nil {
		return fail(err)
	}
	return b, nil
}

var _ prover.Warmer = (*Backend)(nil)

// Warmup makes the backend ready to prove: it compiles with NVRTC, or
// loads from the kernel cache (cudaspans.Context.KernelCacheDir), every
// kernel module the backend uses (the NTT; the MSM's scalar part and the
// four point parts of G1 and of G2, kernels/msm.cu) all at once on their
// own goroutines, so the wall time is that of the slowest module rather
// than the sum. It is recorded as a gpu.warmup span (child of the span in
// ctx) with one cuda.compile child per module, and cuda.nvrtc.compile
// below those that missed the cache.
//
// It returns nil once every module is loaded; later calls return nil at
// once. On failure (a *cudaspans.CompileError with the log, no NVRTC and
// no cached image: cudaspans.ErrNoCompiler) it returns the error, keeps
// what did load, and the next call tries the rest again. Concurrent calls
// share the warm-up in flight (their gpu.warmup spans say
// cuzk.warmup.shared). ctx ends the wait, not the work: a caller whose ctx
// ends gets its error (wrapping ctx.Err()) at once while the compiles go
// on, and a later call waits for them.
//
// Calling it is optional: a proof warms the backend itself (BeginProof, before
// the gpu.lock wait and before the device session, so neither gpu.lock nor
// gpu.total ever covers a compile). Call it to be ready before the first
// proof: cuzk serve reports NOT_SERVING until it returns nil; cuzk prove
// prints a line while it runs. Cold on the H200 host it compiles for tens
// of seconds; from the kernel cache it takes milliseconds.
func (b *Backend) Warmup(ctx context.Context) (err error) {
	if b.ready.Load() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cuda backend: warm-up: %w", err)
	}
	// The span starts before the wait for a warm-up in flight, so a proof
	// that waits for the daemon's (or cuzk prove's) warm-up shows the wait.
	ctx, span := b.tracer.Start(ctx, semconv.SpanGPUWarmup,
		trace.WithAttributes(semconv.KeyCUDADeviceOrdinal.Int(b.c.Device().Ordinal)))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	b.warmMu.Lock()
	if b.ready.Load() {
		b.warmMu.Unlock()
		span.SetAttributes(semconv.KeyWarmupShared.Bool(true))
		return nil
	}
	run := b.inflight
	span.SetAttributes(semconv.KeyWarmupShared.Bool(run != nil))
	if run == nil {
		// The compiles outlive a caller that stops waiting (NVRTC cannot
		// be interrupted; what it compiles lands in the kernel cache).
		run = &warmRun{done: make(chan struct{})}
		b.inflight = run
		go b.runWarm(context.WithoutCancel(ctx), run)
	}
	b.warmMu.Unlock()
	select {
	case <-run.done:
		if run.err != nil {
			return fmt.Errorf("cuda backend: warm-up: %w", run.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cuda backend: warm-up: %w (the compile goes on)", ctx.Err())
	}
}

// warmRun is one warm-up: done closes when it has ended, err its result.
type warmRun struct {
	done chan struct{}
	err  error
}

// runWarm runs b.warm for run and publishes the result.
func (b *Backend) runWarm(ctx context.Context, run *warmRun) {
	err := b.warm(ctx)
	b.warmMu.Lock()
	if err == nil {
		b.ready.Store(true)
	}
	run.err = err
	b.inflight = nil
	b.warmMu.Unlock()
	close(run.done)
}

// waitWarm waits for a warm-up in flight, if any (Close).
func (b *Backend) waitWarm() {
	b.warmMu.Lock()
	run := b.inflight
	b.warmMu.Unlock()
	if run != nil {
		<-run.done
	}
}

// compileModules compiles the NTT and MSM modules not yet loaded, in
// parallel. One runs at a time (Warmup's inflight).
func (b *Backend) compileModules(ctx context.Context) error {
	var jobs []func() error
	if b.ntt == nil {
		jobs = append(jobs, func() (err error) {
			b.ntt, err = ntt.New(ctx, b.c, ntt.WithTracerProvider(b.tp))
			return err
		})
	}
	if b.msm == nil {
		jobs = append(jobs, func() (err error) {
			b.msm, err = msm.New(ctx, b.c, msm.WithTracerProvider(b.tp), msm.WithG2(), msm.WithReleaser(b.releaser))
			return err
		})
	}
	if b.batch == nil {
		jobs = append(jobs, func() (err error) {
			b.batch, err = msm.NewBatchAdd(ctx, b.c, msm.WithTracerProvider(b.tp), msm.WithReleaser(b.releaser))
			return err
		})
	}
	return kernels.Parallel(jobs...)
}

// proofState is what BeginProof puts in a proof's context: the backend
// that owns the proof and the result of its warm-up, so a failed warm-up
// fails the proof's first device call without compiling again.
type proofState struct {
	b       *Backend
	warmErr error
}

// ensureReady returns nil when the kernels are loaded, warming the
// backend when needed; inside a proof, the proof's own warm-up result.
func (b *Backend) ensureReady(ctx context.Context) error {
	if b.ready.Load() {
		return nil
	}
	if st, ok := ctx.Value(proofKey{}).(proofState); ok && st.b == b {
		if st.warmErr != nil {
			return st.warmErr
		}
	}
	return b.Warmup(ctx)
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

// EvictBases implements prover.BaseEvicter: the proving key's base sets leave
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

type proofKey struct{}

// BeginProof implements prover.ProofScoper: it waits for the device (one
// proof at a time per backend) as a gpu.lock span, then begins a device
// session (cudaspans.Context.BeginSession) whose operations are those
// launched with the returned context. The end function ends the session,
// emitting gpu.total (first to last device operation, GPU clock) as a
// child of the span in ctx, and gives the device to the next proof; its
// error is the session's synchronize error; a second call is a no-op.
//
// Before all that it warms the backend (Warmup: a gpu.warmup span when
// modules are compiled or loaded), so the wait for a compile is neither
// gpu.lock nor inside gpu.total; a failed warm-up is returned by the
// proof's first device call.
func (b *Backend) BeginProof(ctx context.Context) (context.Context, func() error) {
	if f := b.Fault(); f != nil {
		return ctx, func() error { return f }
	}
	werr := b.Warmup(ctx)
	_, span := b.tracer.Start(ctx, semconv.SpanGPULock)
	b.proofMu.Lock()
	span.End()
	sctx, sess := b.c.BeginSession(ctx)
	sctx = context.WithValue(sctx, proofKey{}, proofState{b: b, warmErr: werr})
	var once sync.Once
	var err error
	return sctx, func() error {
		once.Do(func() {
			err = b.checkFault(sess.End())
			b.proofMu.Unlock()
		})
		return err
	}
}

// lock takes the device for one operation. Inside a proof (BeginProof)
// the proof's gpu.lock span already covers the wait for the device, and a
// wait here is for another MSM of the same proof, so it has no span;
// outside a proof the wait is a gpu.lock span.
func (b *Backend) lock(ctx context.Context) func() {
	if st, ok := ctx.Value(proofKey{}).(proofState); ok && st.b == b {
		b.mu.Lock()
		return b.mu.Unlock
	}
	_, span := b.tracer.Start(ctx, semconv.SpanGPULock)
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
// unchanged. The copies go as the HostCopy mode says (staged through
// pinned memory by default). The three device vectors (3·32·n bytes) are,
// inside a proof with a key ID (prover.ProofKeyID), the key's proof
// buffers, kept for its next proof (Bases().ProofBuffer); otherwise they
// are allocated here and released through the backend's Releaser
// (buffer.release spans). Errors:
// lengths that differ from the domain, device memory, driver errors naming
// the operation.
func (b *Backend) ComputeH(ctx context.Context, domain *fft.Domain, a, bv, c []fr.Element) (err error) {
	if f := b.Fault(); f != nil {
		return fmt.Errorf("cuda compute H: %w", f)
	}
	defer func() { err = b.checkFault(err) }()
	n := int(domain.Cardinality)
	if len(a) != n || len(bv) != n || len(c) != n {
		return fmt.Errorf("cuda compute H: vectors of length %d, %d, %d, domain of %d", len(a), len(bv), len(c), n)
	}
	if _, err := ntt.Log2(n); err != nil {
		return err
	}
	if err := b.ensureReady(ctx); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	defer b.lock(ctx)()
	bufs := make([]*cudaspans.DeviceBuffer, 0, 3)
	var giveBack []func()
	defer func() {
		for _, g := range giveBack {
			g()
		}
	}()
	for _, name := range []string{"a", "b", "c"} {
		buf, g, err := b.vector(ctx, name, n*frBytes)
		if err != nil {
			return fmt.Errorf("cuda compute H: %w", err)
		}
		bufs, giveBack = append(bufs, buf), append(giveBack, g)
	}
	mode := b.hostCopy
	if n*frBytes < b.minStaged() {
		mode = HostCopyPageable
	}
	if mode == HostCopyRegister {
		// Pinned for the upload, the kernels and the download of a; on an
		// error return, no copy may still be reading them when unpinned.
		var unpins []func()
		for i, v := range [][]fr.Element{a, bv, c} {
			unpins = append(unpins, b.pin(ctx, []string{"a", "b", "c"}[i], v))
		}
		defer func() {
			_ = b.s.Synchronize(ctx)
			for _, u := range unpins {
				u()
			}
		}()
	}
	for i, v := range [][]fr.Element{a, bv, c} {
		if err := b.copyVector(ctx, mode, []string{"a", "b", "c"}[i], dirHtoD, bufs[i].Ptr(), v); err != nil {
			return fmt.Errorf("cuda compute H: upload: %w", err)
		}
	}
	if err := b.ntt.ComputeH(ctx, b.s, domain, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr()); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	if err := b.copyVector(ctx, mode, "h", dirDtoH, bufs[0].Ptr(), a); err != nil {
		return fmt.Errorf("cuda compute H: download: %w", err)
	}
	if err := b.s.Synchronize(ctx); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	return nil
}

// pin registers v with the driver (HostCopyRegister) and returns the
// function that releases the registration through the Releaser. When the
// driver refuses, v stays pageable: the copy is slower, not wrong.
func (b *Backend) pin(ctx context.Context, name string, v []fr.Element) func() {
	if len(v)*frBytes < minPinnedCopy {
		return func() {}
	}
	r, err := b.c.Register(ctx, frBytesOf(v))
	if err != nil {
		return func() {}
	}
	return func() {
		// Unpinned now in every mode: an async or pooled registration
		// would outlive the mmap it pins (the prover unmaps b and c right
		// after ComputeH) and block pinning a again for the H MSM.
		if b.releaser.Mode() == buffer.ReleaseSync {
			_ = b.releaser.Release(ctx, name, r)
			return
		}
		_ = b.c.Free(ctx, r)
	}
}

// frBytesOf is the memory of v as bytes (fr.Element is 4 uint64, no
// pointers).
func frBytesOf(v []fr.Element) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*frBytes)
}

// stageBuffers returns the two pinned staging buffers, allocating them on
// first use. Called with b.mu.
func (b *Backend) stageBuffers(ctx context.Context) ([2]*cudaspans.PinnedBuffer, error) {
	for i := range b.stage {
		if b.stage[i] == nil {
			p, err := b.c.AllocPinned(ctx, StageChunk)
			if err != nil {
				return b.stage, fmt.Errorf("staging buffer: %w", err)
			}
			b.stage[i] = p
		}
	}
	return b.stage, nil
}

// The directions of a vector copy, as the cuda.direction attribute of its
// cuda.host_stage span.
const (
	dirHtoD = "htod"
	dirDtoH = "dtoh"
)

// copyVector copies v to the device at dev (dir dirHtoD) or from dev into
// v (dirDtoH). Unstaged it is one cudaspans copy; staged
// (HostCopyStaged) it runs through the two pinned staging buffers
// (stagedUpload, stagedDownload) as one cuda.host_stage span with the
// chunks' copies as children.
func (b *Backend) copyVector(ctx context.Context, mode HostCopy, name, dir string, dev cudaspans.DevicePtr, v []fr.Element) (err error) {
	if mode != HostCopyStaged {
		if dir == dirHtoD {
			return cudaspans.HtoD(ctx, b.s, dev, v)
		}
		return cudaspans.DtoH(ctx, b.s, v, dev)
	}
	st, err := b.stageBuffers(ctx)
	if err != nil {
		return err
	}
	host := frBytesOf(v)
	ctx, span := b.stageSpan(ctx, name, dir, len(host))
	defer func() { b.endSpan(ctx, span, err) }()
	if dir == dirHtoD {
		return b.stagedUpload(ctx, st, dev, host)
	}
	return b.stagedDownload(ctx, st, host, dev)
}

// stagedUpload copies src to dst: chunk i is copied by the CPU into
// staging buffer i%2 while the DMA of chunk i−1 runs; the stream is
// synchronized before a buffer is reused, so a chunk is never overwritten
// in flight.
func (b *Backend) stagedUpload(ctx context.Context, st [2]*cudaspans.PinnedBuffer, dst cudaspans.DevicePtr, src []byte) error {
	for i, off := 0, 0; off < len(src); i, off = i+1, off+StageChunk {
		k := min(StageChunk, len(src)-off)
		buf := st[i%2]
		parallelCopy(buf.Bytes()[:k], src[off:off+k])
		if i > 0 {
			// The DMA of chunk i−1 must end before its buffer is refilled
			// at step i+1.
			if err := b.s.Synchronize(ctx); err != nil {
				return err
			}
		}
		if err := b.s.CopyHtoD(ctx, dst+cudaspans.DevicePtr(off), buf.Ptr(), k); err != nil {
			return err
		}
	}
	return b.s.Synchronize(ctx)
}

// stagedDownload copies from src into dst: the DMA of chunk i+1 runs
// while the CPU copies chunk i out of its staging buffer.
func (b *Backend) stagedDownload(ctx context.Context, st [2]*cudaspans.PinnedBuffer, dst []byte, src cudaspans.DevicePtr) error {
	chunks := (len(dst) + StageChunk - 1) / StageChunk
	issue := func(i int) error {
		off := i * StageChunk
		return b.s.CopyDtoH(ctx, st[i%2].Ptr(), src+cudaspans.DevicePtr(off), min(StageChunk, len(dst)-off))
	}
	if err := issue(0); err != nil {
		return err
	}
	for i := 0; i < chunks; i++ {
		if err := b.s.Synchronize(ctx); err != nil {
			return err
		}
		if i+1 < chunks {
			if err := issue(i + 1); err != nil {
				return err
			}
		}
		off := i * StageChunk
		k := min(StageChunk, len(dst)-off)
		parallelCopy(dst[off:off+k], st[i%2].Bytes()[:k])
	}
	return nil
}

func (b *Backend) stageSpan(ctx context.Context, name, dir string, bytes int) (context.Context, trace.Span) {
	return b.tracer.Start(ctx, semconv.SpanHostStage, trace.WithAttributes(
		semconv.KeyBufferName.String(name), semconv.KeyCUDABytes.Int(bytes),
		semconv.KeyHostCopyMode.String(string(HostCopyStaged)), attribute.String("cuda.direction", dir)))
}

// endSpan ends a staging span; after an error it first waits for the
// stream, so no copy still reads or writes a staging buffer that the next
// transfer refills.
func (b *Backend) endSpan(ctx context.Context, span trace.Span, err error) {
	if err != nil {
		_ = b.s.Synchronize(ctx)
	}
	semconv.SetError(span, err)
	span.End()
}

// parallelCopy copies src into dst (equal lengths) in up to 8 pieces of
// at least 2 MiB, side by side (parallel.For): one core copies about
// 10 GB/s, below the link's DMA rate.
func parallelCopy(dst, src []byte) {
	const minPiece = 2 << 20
	p := min(runtime.GOMAXPROCS(0), 8, max(1, len(src)/minPiece))
	piece := ((len(src)+p-1)/p + 63) &^ 63
	parallel.For(p, func(i int) {
		off := min(i*piece, len(src))
		end := min(off+piece, len(src))
		copy(dst[off:end], src[off:end])
	})
}

// minStaged is the smallest vector (bytes) copied through pinned memory:
// minPinnedCopy, or stagedFrom when a test lowers it to reach the staged
// copies with small circuits.
func (b *Backend) minStaged() int {
	if b.stagedFrom > 0 {
		return b.stagedFrom
	}
	return minPinnedCopy
}

// stagedScalars copies scalars into the pinned scratch buffer of the
// proof's key (prover.ProofKeyID: grown to the key's largest MSM, kept
// for its next proof, freed with the key) and returns the pinned copy,
// which the MSM uploads by DMA. On a failed allocation the buffer kept
// stays. Called with b.mu.
func (b *Backend) stagedScalars(ctx context.Context, scalars []fr.Element) (out []fr.Element, err error) {
	size := len(scalars) * frBytes
	sc, err := b.scratchFor(ctx, prover.ProofKeyID(ctx), size)
	if err != nil {
		return nil, err
	}
	_, span := b.stageSpan(ctx, "msm.scalars", "host", size)
	parallelCopy(sc.Bytes()[:size], frBytesOf(scalars))
	span.End()
	return unsafe.Slice((*fr.Element)(sc.Ptr()), len(scalars)), nil
}

// scratchFor returns key's pinned scalar buffer (b.scratch), grown to at
// least size bytes: a smaller one is released once its replacement is
// had. On a failed allocation the buffer kept stays. Called with b.mu.
func (b *Backend) scratchFor(ctx context.Context, key string, size int) (*cudaspans.PinnedBuffer, error) {
	sc := b.scratch[key]
	if sc != nil && sc.Size() >= size {
		return sc, nil
	}
	p, err := b.c.AllocPinned(ctx, size)
	if err != nil {
		return nil, fmt.Errorf("pinned scalars: %w", err)
	}
	if sc != nil {
		b.release(ctx, "msm.scalars", sc)
	}
	if b.scratch == nil {
		b.scratch = map[string]*cudaspans.PinnedBuffer{}
	}
	b.scratch[key] = p
	return p, nil
}

// vector returns ComputeH's device vector name of bytes and the function
// that gives it back: inside a proof with a key ID (prover.ProofKeyID) the
// key's proof buffer "compute_h."+name, kept for the next proof of the key
// and counted with its resident bases (msm.DeviceBases.ProofBuffer), so a
// warm proof allocates nothing; else a fresh allocation released (a
// buffer.release span) when given back.
func (b *Backend) vector(ctx context.Context, name string, bytes int) (*cudaspans.DeviceBuffer, func(), error) {
	if key := prover.ProofKeyID(ctx); key != "" {
		return b.bases.ProofBuffer(ctx, key, "compute_h."+name, bytes)
	}
	buf, err := b.c.Alloc(ctx, bytes)
	if err != nil {
		return nil, nil, err
	}
	return buf, func() { b.release(ctx, name, buf) }, nil
}

func (b *Backend) release(ctx context.Context, name string, buf buffer.Buffer) {
	_ = b.releaser.Release(ctx, name, buf)
}

// MSMG1 implements prover.Backend.MSMG1 on the GPU with the Pippenger MSM
// of prover/gpu/msm over bases kept resident on the device (uploaded on
// first use of bases.ID, reused by later proofs); span names the span
// (msm.g1.a, ...). A set without an ID is not kept resident: its points
// are copied to the device with the scalars for this MSM only.
func (b *Backend) MSMG1(ctx context.Context, span string, bases prover.BaseSet[curve.G1Affine], scalars []fr.Element) (res curve.G1Jac, err error) {
	return deviceMSM(b, ctx, span, len(bases.Points), scalars, func(sc []fr.Element) (curve.G1Jac, error) {
		return b.msm.G1Resident(ctx, msmCall(ctx, span), b.s, b.bases, msm.BaseSet[curve.G1Affine](bases), sc)
	})
}

// MSMG2 implements prover.Backend.MSMG2: on the GPU as MSMG1 does (the G2
// kernels, bases resident), or, after SetMSMG2(MSMG2CPU), on the CPU with
// gnark-crypto's MultiExp (prover.CPU), taking no device lock, so it runs
// while the GPU works on the G1 MSMs.
func (b *Backend) MSMG2(ctx context.Context, span string, bases prover.BaseSet[curve.G2Affine], scalars []fr.Element) (res curve.G2Jac, err error) {
	b.mu.Lock()
	onCPU := b.g2OnCPU
	b.mu.Unlock()
	if onCPU {
		return b.cpu.MSMG2(ctx, span, bases, scalars)
	}
	return deviceMSM(b, ctx, span, len(bases.Points), scalars, func(sc []fr.Element) (curve.G2Jac, error) {
		return b.msm.G2Resident(ctx, msmCall(ctx, span), b.s, b.bases, msm.BaseSet[curve.G2Affine](bases), sc)
	})
}

// msmCall is what an MSM of the proof in ctx passes to package msm: the
// span, the proof's key ID (prover.ProofKeyID: the workspace is the key's
// proof buffer) and the scalar counts ProveAssignment put in ctx
// (prover.MSMScalarAttributes).
func msmCall(ctx context.Context, span string) msm.Call {
	return msm.Call{Span: span, KeyID: prover.ProofKeyID(ctx), Attributes: prover.MSMScalarAttributes(ctx)}
}

// deviceMSM is the device path MSMG1 and MSMG2 share: refused once the
// device faulted, scalars checked against the nbases bases, run (the
// group's resident MSM) given the scalars as the host copy mode wants them
// (withScalars), and a fault it meets recorded (checkFault).
func deviceMSM[J any](b *Backend, ctx context.Context, span string, nbases int, scalars []fr.Element, run func(sc []fr.Element) (J, error)) (res J, err error) {
	if f := b.Fault(); f != nil {
		return res, fmt.Errorf("cuda %s: %w", span, f)
	}
	defer func() { err = b.checkFault(err) }()
	if len(scalars) != nbases {
		return res, fmt.Errorf("cuda %s: %d scalars for %d bases", span, len(scalars), nbases)
	}
	err = b.withScalars(ctx, span, scalars, func(sc []fr.Element) (err error) {
		res, err = run(sc)
		return err
	})
	return res, err
}

// withScalars takes the device and runs msm with the scalars as the host
// copy mode wants them: copied into pinned staging memory, pinned in
// place, or as they are.
func (b *Backend) withScalars(ctx context.Context, span string, scalars []fr.Element, msm func([]fr.Element) error) error {
	if err := b.ensureReady(ctx); err != nil {
		return fmt.Errorf("cuda %s: %w", span, err)
	}
	defer b.lock(ctx)()
	sc := scalars
	if len(scalars)*frBytes >= b.minStaged() {
		switch b.hostCopy {
		case HostCopyStaged:
			var err error
			if sc, err = b.stagedScalars(ctx, scalars); err != nil {
				return fmt.Errorf("cuda %s: %w", span, err)
			}
		case HostCopyRegister:
			unpin := b.pin(ctx, "msm.scalars", scalars)
			defer func() {
				// As in ComputeH: on an error return a copy may still be
				// reading the scalars; none may when they are unpinned.
				_ = b.s.Synchronize(ctx)
				unpin()
			}()
		}
	}
	return msm(sc)
}

// Close evicts the resident bases, frees the kernels and tables and releases
// the device context.
func (b *Backend) Close() error {
	var errs []error
	// The pinned staging memory, after the device work that reads it.
	if b.c != nil {
		errs = append(errs, b.c.Flush(context.Background()))
	}
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
