package prover

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/consensys/gnark-crypto/ecc"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// Prover is a backend with the circuits it has loaded (their compiled
// constraint systems and keys): it makes proofs of registered circuits,
// one Request at a time per call and safe for concurrent calls: keys.load (compile, key cache),
// pipeline.synthesize, pipeline.prove (groth16.prove below it),
// pipeline.serialize and proof.verify, each a span under the span in the
// ctx given to Run (engine.job). It implements Runner.
type Prover struct {
	cfg     config
	backend backend.Backend
	rel     *buffer.Releaser
	cache   *keycache.Cache
	tracer  trace.Tracer

	mu     sync.Mutex
	loaded map[string]*loadedCircuit
}

// loadedCircuit is a compiled circuit with its keys, kept for later proofs.
type loadedCircuit struct {
	ready chan struct{} // closed when loading finished (circuit and keys)
	err   error
	// circuit is closed once ccs and instance are set and the keys are
	// being read from the cache (so a synthesis may start beside that
	// read, Prover.loadCircuitFirst), or when loading finished, whichever
	// comes first.
	circuit     chan struct{}
	circuitOnce sync.Once

	ccs  constraint.ConstraintSystem
	keys *keycache.Keys
	// solved is set once a synthesis's solve of ccs ended
	// (SynthesisTiming.FirstSolve).
	solved   atomic.Bool
	instance *circuits.Instance // nil for circuits from files
}

var _ Runner = (*Prover)(nil)

// New opens the backend named backend and returns a Prover that
// releases its buffers through the WithReleaser Releaser, in its mode
// (default: synchronously, buffer.OrSync); the Prover and its backend
// share it, and the caller closes it after Prover.Close.
//
// backend is "cpu", "cuda" or "auto" ("" means auto). "auto" opens the
// "cuda" factory (registered by importing prover/gpu); when it is not
// registered or fails with an error wrapping ErrBackendUnavailable, it
// writes one line saying why to the WithNotice writer and uses "cpu".
// "cuda" returns that reason as its error, wrapping ErrBackendUnavailable.
//
// Options read: WithReleaser, WithDeviceSettings, WithTracerProvider, WithKeyCacheDir,
// WithNotice, WithSeed, WithProgress, WithBuildRevision, WithRandomness
// (tests only). Errors wrap ErrUnknownBackend or ErrBackendUnavailable.
func New(ctx context.Context, backend string, opts ...ProverOption) (*Prover, error) {
	cfg := newConfig(opts)
	p := &Prover{cfg: cfg, rel: buffer.OrSync(cfg.releaser, cfg.tp), tracer: cfg.tracer(), loaded: map[string]*loadedCircuit{}}
	kopts := []keycache.Option{keycache.WithTracerProvider(cfg.tp), keycache.WithProgress(cfg.notice, cfg.progress)}
	if cfg.revision != nil {
		kopts = append(kopts, keycache.WithRevision(*cfg.revision))
	}
	kopts = append(kopts, cfg.keyOpts...)
	cache, err := keycache.New(cfg.cacheDir, kopts...)
	if err != nil {
		return nil, err
	}
	p.cache = cache
	if p.backend, err = openBackend(ctx, backend, &cfg, p.rel); err != nil {
		return nil, err
	}
	return p, nil
}

func openBackend(ctx context.Context, name string, cfg *config, rel *buffer.Releaser) (backend.Backend, error) {
	bo := backend.Options{Releaser: rel, TracerProvider: cfg.tp, Device: cfg.device}
	open := func(name string) (backend.Backend, error) {
		f, ok := backend.Lookup(name)
		if !ok {
			return nil, backend.NotBuiltIn(name)
		}
		b, err := f(ctx, bo)
		if err != nil {
			// It names the backend (backend.Factory); the name it is
			// registered under may not ("cuda:1", daemon/workers.go).
			return nil, err
		}
		return b, nil
	}
	switch name {
	case "auto", "":
		b, err := open("cuda")
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, backend.ErrUnavailable) {
			return nil, err
		}
		fmt.Fprintln(cfg.notice, backend.FallbackNotice(err))
		return open("cpu")
	case "cpu", "cuda":
		return open(name)
	}
	if _, ok := backend.Lookup(name); ok {
		return open(name)
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownBackend, name)
}

// Backend returns the name of the backend in use ("cpu" or "cuda").
func (p *Prover) Backend() string { return p.backend.Name() }

// MemInfo returns the free and total memory of the pipeline's device in
// bytes, when its backend has a device (it implements MemInfo, as the CUDA
// backend does); otherwise an error wrapping ErrNoDeviceMemory.
func (p *Prover) MemInfo() (free, total uint64, err error) {
	if m, ok := p.backend.(interface {
		MemInfo() (free, total uint64, err error)
	}); ok {
		return m.MemInfo()
	}
	return 0, 0, fmt.Errorf("backend %s: %w", p.backend.Name(), backend.ErrNoDeviceMemory)
}

// Releaser returns the Releaser of the pipeline's buffers.
func (p *Prover) Releaser() *buffer.Releaser { return p.rel }

// Close waits for the releases queued so far (or ctx: the error then
// wraps ctx.Err()), so no async release frees a backend's buffer after
// the backend is gone, and closes the backend. It does not close the
// Releaser (its owner does, after Close). Run must not be called after
// Close.
func (p *Prover) Close(ctx context.Context) error {
	freed := make(chan struct{})
	p.rel.AfterQueued(func() { close(freed) })
	var errs []error
	select {
	case <-freed:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("pipeline close: releases: %w", ctx.Err()))
	}
	return errors.Join(append(errs, p.backend.Close())...)
}

func circuitKey(name string, constraints int) string {
	if _, ok := lookupFiles(name); ok {
		return name
	}
	return name + "/" + strconv.Itoa(constraints)
}

// LoadCircuit compiles circuit at constraints (ignored for file circuits) and
// loads its keys (from the cache or by setup), so later Runs start
// proving at once. Errors as Run's.
func (p *Prover) LoadCircuit(ctx context.Context, circuit string, constraints int) error {
	_, err := p.load(ctx, circuit, constraints)
	return err
}

// EvictCircuit forgets the compiled circuit and keys held for circuit at
// constraints, and evicts them from the backend when it implements
// BaseEvicter; it reports whether they were held. Proofs running with them
// finish normally.
func (p *Prover) EvictCircuit(circuit string, constraints int) bool {
	p.mu.Lock()
	k := circuitKey(circuit, constraints)
	lc, ok := p.loaded[k]
	delete(p.loaded, k)
	p.mu.Unlock()
	if !ok {
		return false
	}
	if ev, isEvicter := p.backend.(backend.BaseEvicter); isEvicter {
		select {
		case <-lc.ready:
			if lc.err == nil {
				_ = ev.EvictBases(context.Background(), lc.keys.Hash)
			}
		default:
		}
	}
	return true
}

// LoadedCircuits returns the IDs ("name/constraints", or the name of a file
// circuit) of the circuits whose keys are held.
func (p *Prover) LoadedCircuits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k, lc := range p.loaded {
		select {
		case <-lc.ready:
			if lc.err == nil {
				out = append(out, k)
			}
		default:
		}
	}
	return out
}

// VerifyingKey returns the verifying key of circuit at constraints,
// loading it as LoadCircuit does.
func (p *Prover) VerifyingKey(ctx context.Context, circuit string, constraints int) (gnarkgroth16.VerifyingKey, error) {
	lc, err := p.load(ctx, circuit, constraints)
	if err != nil {
		return nil, err
	}
	if lc.keys.VK == nil {
		return nil, fmt.Errorf("circuit %s: registered without a verifying key", circuit)
	}
	return lc.keys.VK, nil
}

// load returns the circuit, compiling and loading its keys once; callers
// for the same circuit wait for the first.
func (p *Prover) load(ctx context.Context, name string, constraints int) (*loadedCircuit, error) {
	lc, first := p.entry(name, constraints)
	if !first {
		return p.awaitLoaded(ctx, lc, name, constraints)
	}
	p.runLoad(ctx, lc, name, constraints, false)
	if lc.err != nil {
		return nil, lc.err
	}
	return lc, nil
}

// entry returns the loading entry of circuit name at constraints, and
// whether it was made now (the caller then loads it).
func (p *Prover) entry(name string, constraints int) (*loadedCircuit, bool) {
	k := circuitKey(name, constraints)
	p.mu.Lock()
	defer p.mu.Unlock()
	if lc, ok := p.loaded[k]; ok {
		return lc, false
	}
	lc := &loadedCircuit{ready: make(chan struct{}), circuit: make(chan struct{})}
	p.loaded[k] = lc
	return lc, true
}

// awaitLoaded waits for the load of lc another caller runs: its result,
// or a load of its own when that caller gave up.
func (p *Prover) awaitLoaded(ctx context.Context, lc *loadedCircuit, name string, constraints int) (*loadedCircuit, error) {
	select {
	case <-lc.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if lc.err != nil {
		if (errors.Is(lc.err, context.Canceled) || errors.Is(lc.err, context.DeadlineExceeded)) && ctx.Err() == nil {
			// The first caller gave up, not this one: load for it.
			return p.load(ctx, name, constraints)
		}
		return nil, lc.err
	}
	// Held in memory: a keys.load span still marks the step.
	_, span := p.tracer.Start(ctx, semconv.SpanKeyLoad, trace.WithAttributes(
		semconv.KeyKeyCacheHit.Bool(true), semconv.KeyCircuitID.String(name)))
	span.End()
	return lc, nil
}

// runLoad loads lc (loadCircuit) and ends it: ready closed, a failure
// dropped from the loaded circuits so that a later request loads afresh.
// early lets loadCircuit open lc.circuit before the keys are read.
func (p *Prover) runLoad(ctx context.Context, lc *loadedCircuit, name string, constraints int, early bool) {
	k := circuitKey(name, constraints)
	// Waiters must never block forever, whatever happens here.
	defer func() {
		if r := recover(); r != nil {
			lc.err = fmt.Errorf("load %s: panic: %v", k, r)
		}
		if lc.err != nil {
			// Do not keep failures: a later request may succeed. Drop
			// the entry before waking the waiters, so one that
			// retries starts a fresh load.
			p.mu.Lock()
			if p.loaded[k] == lc {
				delete(p.loaded, k)
			}
			p.mu.Unlock()
		}
		close(lc.ready)
		lc.openCircuit()
	}()
	lc.err = p.loadCircuit(ctx, lc, name, constraints, early)
}

func (lc *loadedCircuit) openCircuit() { lc.circuitOnce.Do(func() { close(lc.circuit) }) }

// loadCircuitFirst returns the circuit of name at constraints as soon as
// its constraint system is there: when its keys are in the key cache,
// before they are read and handed to the backend (keys.load and the
// backend's keys.preload then run beside the caller's synthesis, and
// keysOf waits for them); otherwise, or for a circuit with commitments
// (whose synthesis needs the proving key), once everything is loaded, as
// load does. The keys' read is not cancelled with ctx: it is a few
// hundred milliseconds of disk and copies, which the next proof of the
// circuit uses. owned is set when this call started the load and it
// still runs: its spans are children of the span in ctx, which must not
// end before them (synthesis.settle waits for lc.ready).
func (p *Prover) loadCircuitFirst(ctx context.Context, name string, constraints int) (lc *loadedCircuit, owned bool, err error) {
	lc, first := p.entry(name, constraints)
	if first {
		// The load honours ctx until the circuit opens (a compile or a
		// setup left running ends it with an AbandonedError, which the
		// engine must see): wait for it, not for ctx.
		go p.runLoad(ctx, lc, name, constraints, true)
		<-lc.circuit
	} else {
		select {
		case <-lc.circuit:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	select {
	case <-lc.ready:
		// Loaded (or failed): as load.
		if first {
			if lc.err != nil {
				return nil, false, lc.err
			}
			return lc, false, nil
		}
		lc, err = p.awaitLoaded(ctx, lc, name, constraints)
		return lc, false, err
	default:
		return lc, first, nil // the keys are being read
	}
}

// hasCommitments reports whether ccs commits to wires (api.Commit): its
// synthesis then needs the proving key's commitment keys.
func hasCommitments(ccs constraint.ConstraintSystem) bool {
	info, _ := ccs.GetCommitments().(constraint.Groth16Commitments)
	return len(info) > 0
}

// keysOf waits until lc's keys are loaded; lc's load error if it failed.
func keysOf(ctx context.Context, lc *loadedCircuit) error {
	select {
	case <-lc.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	return lc.err
}

// checkMemory refuses, before circuit name is built, a size whose plan
// does not fit the host's available memory (circuits.MemAvailable): see
// memoryFits.
func (p *Prover) checkMemory(ctx context.Context, name string, constraints int) error {
	avail, err := circuits.MemAvailable()
	if err != nil {
		return err
	}
	return p.memoryFits(ctx, name, constraints, avail)
}

// memoryFits checks name at constraints against avail bytes with the
// figures of what this pipeline will run (circuits.Plan.CheckHost): the
// CPU or the CUDA backend's prove, and for a key the cache lacks
// (keycache.Cache.HasBuiltinKeys) the setup that makes it, the GPU's with
// WithKeySetup(f, true), else gnark's, and for a circuit the circuit cache
// lacks (keycache.Cache.HasCircuit) gnark's compile. A registered circuit without a
// plan keeps circuits.CheckMemory's CPU model. Errors wrap
// circuits.ErrTooLargeForHost, ErrUnknownCircuit or ErrBadConstraints.
func (p *Prover) memoryFits(ctx context.Context, name string, constraints int, avail uint64) error {
	plan, err := circuits.PlanFor(name, constraints)
	if errors.Is(err, circuits.ErrNotBuiltin) {
		if _, lerr := circuits.LookupBuiltin(name); lerr == nil {
			return circuits.CheckMemory(name, constraints)
		}
	}
	if err != nil {
		return err
	}
	src := circuits.KeysCPUSetup
	if p.cfg.setupOnDevice {
		src = circuits.KeysGPUSetup
	}
	if p.cache.HasBuiltinKeys(ctx, name, constraints) {
		src = circuits.KeysCached
	}
	compile := !p.cache.HasCircuit(ctx, name, constraints)
	return plan.CheckHost(p.backend.Name() == "cpu", src, compile, avail)
}

func (p *Prover) loadCircuit(ctx context.Context, lc *loadedCircuit, name string, constraints int, early bool) error {
	if files, ok := lookupFiles(name); ok {
		return p.loadFiles(ctx, lc, name, files)
	}
	// A span of its own: a size the circuit's shape refuses (porep below
	// one challenge) fails here, and sizing porep probes its costs once
	// (a compile of ~0.6 s), which would otherwise be engine.job's
	// untraced time.
	_, bspan := p.tracer.Start(ctx, semconv.SpanCircuitBuild, trace.WithAttributes(
		semconv.KeyCircuitID.String(name), semconv.KeyCircuitConstraints.Int(constraints)))
	err := p.checkMemory(ctx, name, constraints)
	var in *circuits.Instance
	if err == nil {
		in, err = circuits.Build(name, constraints)
	}
	semconv.SetError(bspan, err)
	bspan.End()
	if err != nil {
		return err
	}
	// A cached circuit's stored hash names its keys before the system is
	// decoded: they are read meanwhile (keys.load beside
	// circuit.cache.decode), whatever becomes of the caller.
	var pre *preread
	defer func() {
		// The read's keys.load is a child of the span in ctx: a load
		// that gives up (ctx ended, a failed decode) returns after it.
		if pre != nil {
			<-pre.done
		}
	}()
	cctx := keycache.OnStoredHash(ctx, func(hash string, n int) {
		if !p.cache.HasKeys(hash) {
			return
		}
		pre = &preread{hash: hash, done: make(chan struct{})}
		kctx := context.WithoutCancel(ctx)
		go func() {
			defer close(pre.done)
			pre.keys, pre.err = p.cache.LoadCached(kctx, hash, n)
		}()
	})
	comp, err := p.cache.Compile(cctx, name, constraints, in.Compile)
	if err != nil {
		return err
	}
	lc.ccs, lc.instance = comp.CCS, in
	if early && p.cache.HasKeys(comp.Hash) && !hasCommitments(comp.CCS) {
		// The synthesis may start: it needs the constraint system only.
		// The read and the preload go on whatever becomes of the caller.
		ctx = context.WithoutCancel(ctx)
		lc.openCircuit()
	}
	var kk *keycache.Keys
	if pre != nil && pre.hash == comp.Hash {
		select {
		case <-pre.done:
			kk = pre.keys // nil when the read failed: LoadHashed tries again, or sets up
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if kk == nil {
		if kk, err = p.cache.LoadHashed(ctx, comp.CCS, comp.Hash); err != nil {
			return fmt.Errorf("keys of %s (%d constraints): %w", name, constraints, err)
		}
	}
	lc.keys = kk
	p.prepareKey(ctx, kk)
	return nil
}

// preread is a read of cached keys started before the circuit decoded.
type preread struct {
	hash string
	done chan struct{}
	keys *keycache.Keys
	err  error
}

// prepareKey hands the loaded keys to a KeyPreparer backend, so their
// first proof allocates nothing; its error is recorded on the span in ctx
// and otherwise ignored: the first proof then makes what is missing.
func (p *Prover) prepareKey(ctx context.Context, k *keycache.Keys) {
	kp, ok := p.backend.(backend.KeyPreparer)
	if !ok || k == nil || k.Hash == "" || k.PK == nil {
		return
	}
	if err := kp.PrepareKey(ctx, k.Hash, k.PK); err != nil {
		trace.SpanFromContext(ctx).RecordError(fmt.Errorf("prepare the keys of %s for %s: %w", k.Hash, p.backend.Name(), err))
	}
}

// Run makes the proof req asks for; see Runner. The steps and their spans:
// keys.load (and circuit.build and circuit.compile on first use), pipeline.synthesize,
// pipeline.prove, pipeline.serialize, proof.verify (when req.Verify). In
// async release mode the buffer.release spans are children of the span in
// ctx, not of pipeline.prove, and may end after Run returns.
//
// Errors wrap ErrUnknownCircuit, circuits.ErrBadConstraints,
// circuits.ErrTooLargeForHost, ErrBadWitness, ErrWitnessSize, ErrUnsatisfied,
// ErrUnsupported, ErrVerifyFailed, ctx's error, or the backend's.
func (p *Prover) Run(ctx context.Context, req *Request) (*Result, error) {
	s, err := p.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.Prove(ctx, p)
}

// Validate checks req without proving, cheaply enough to run before a
// request is queued (engine.WithValidator): the circuit is registered, a
// built-in's constraint count is positive (whether it fits in memory is
// the engine's memory budget's to say, from EstimateMemory), the witness
// (when given) is well-formed gnark binary over BLS12-381's scalar field,
// and, when the circuit is loaded already, has the circuit's number of
// public and secret values. Errors wrap ErrUnknownCircuit,
// circuits.ErrBadConstraints, ErrBadWitness or ErrWitnessSize. Safe for
// concurrent use.
func (p *Prover) Validate(req *Request) error {
	if req == nil {
		return fmt.Errorf("%w: nil request", groth16.ErrBadWitness)
	}
	_, isFile := lookupFiles(req.Circuit)
	if !isFile {
		if err := checkBuiltin(req.Circuit, req.Constraints); err != nil {
			return err
		}
	}
	if req.Witness == nil {
		if isFile {
			return fmt.Errorf("%w: circuit %s has no sample witness; the request must carry one", groth16.ErrBadWitness, req.Circuit)
		}
		return nil
	}
	w, err := parseWitness(req.Witness)
	if err != nil {
		return err
	}
	p.mu.Lock()
	lc, ok := p.loaded[circuitKey(req.Circuit, req.Constraints)]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-lc.ready:
	default:
		return nil // still loading: Run checks the size
	}
	if lc.err != nil || lc.ccs == nil {
		return nil
	}
	if err := groth16.CheckWitnessShape(w, lc.ccs); err != nil {
		return fmt.Errorf("circuit %s: %w", req.Circuit, err)
	}
	return nil
}

func parseWitness(b []byte) (witness.Witness, error) {
	w, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return nil, err
	}
	if err := w.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: %v", groth16.ErrBadWitness, err)
	}
	return w, nil
}

// witness parses req.Witness, or makes the built-in sample witness.
// It records a synthesize.witness span under the span in ctx, with
// cuzk.witness.source request or sample.
func (p *Prover) witness(ctx context.Context, lc *loadedCircuit, req *Request) (w witness.Witness, err error) {
	source := "request"
	if req.Witness == nil {
		source = "sample"
	}
	_, span := p.tracer.Start(ctx, semconv.SpanSynthesizeWitness, trace.WithAttributes(semconv.KeyWitnessSource.String(source)))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	if req.Witness == nil {
		if lc.instance == nil {
			return nil, fmt.Errorf("%w: circuit %s has no sample witness; the request must carry one", groth16.ErrBadWitness, req.Circuit)
		}
		return lc.instance.Witness(p.cfg.seed)
	}
	return parseWitness(req.Witness)
}

// lookupFiles returns the paths of name when it is a circuit registered
// from files (circuits.RegisterFiles).
func lookupFiles(name string) (circuits.Files, bool) {
	s, err := circuits.Lookup(name)
	if err != nil || s.Files == nil {
		return circuits.Files{}, false
	}
	return *s.Files, true
}

func (p *Prover) loadFiles(ctx context.Context, lc *loadedCircuit, name string, f circuits.Files) (err error) {
	_, span := p.tracer.Start(ctx, semconv.SpanKeyLoad, trace.WithAttributes(
		semconv.KeyCircuitID.String(name), semconv.KeyKeyCacheHit.Bool(false)))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	read := func(path string, r io.ReaderFrom) error {
		fh, err := os.Open(path)
		if err != nil {
			return err
		}
		defer fh.Close()
		if _, err := r.ReadFrom(bufioReader(fh)); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		return nil
	}
	// The key's ID is keycache.Hash of the constraint system: the SHA-256 of
	// its WriteTo, which is the file's bytes, hashed as they are read
	// instead of serializing the R1CS again (seconds at 2^22). gnark's
	// ReadFrom reads its header and then the body whole, so no buffering
	// is needed and nothing past the constraint system is hashed.
	ccs := gnarkgroth16.NewCS(ecc.BLS12_381)
	sum := sha256.New()
	fh, err := os.Open(f.CS)
	if err != nil {
		return fmt.Errorf("circuit %s: %w", name, err)
	}
	_, err = ccs.ReadFrom(io.TeeReader(fh, sum))
	fh.Close()
	if err != nil {
		return fmt.Errorf("circuit %s: read %s: %w", name, f.CS, err)
	}
	hash := hex.EncodeToString(sum.Sum(nil))
	if _, err := groth16.AsR1CS(ccs); err != nil {
		return fmt.Errorf("circuit %s: %w", name, err)
	}
	pk := gnarkgroth16.NewProvingKey(ecc.BLS12_381)
	if err := read(f.PK, pk); err != nil {
		return fmt.Errorf("circuit %s: %w", name, err)
	}
	var vk gnarkgroth16.VerifyingKey
	if f.VK != "" {
		vk = gnarkgroth16.NewVerifyingKey(ecc.BLS12_381)
		if err := read(f.VK, vk); err != nil {
			return fmt.Errorf("circuit %s: %w", name, err)
		}
	}
	lc.ccs, lc.keys = ccs, &keycache.Keys{Hash: hash, PK: pk, VK: vk}
	span.SetAttributes(semconv.KeyCircuitConstraints.Int(ccs.GetNbConstraints()))
	p.prepareKey(ctx, lc.keys)
	return nil
}

func bufioReader(r io.Reader) io.Reader { return bufio.NewReaderSize(r, 1<<20) }
