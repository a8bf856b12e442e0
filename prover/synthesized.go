package prover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// Synthesized is a proof whose CPU stage (keys.load, pipeline.synthesize)
// is done: its wires and a, b, c evaluations sit in host buffers, waiting
// for a device. It carries what its prove needs (the circuit's keys, the
// witness, the assignment) and is proved on whichever Device the caller
// hands it (one Prover synthesizing for all, one Prover per GPU). It is
// consumed by Prove or given back by Release; either once.
type Synthesized interface {
	// Prove proves this synthesized proof on dev's backend
	// (pipeline.prove, pipeline.serialize, proof.verify under the span in
	// ctx) and releases its buffers, on success and on error. When ctx
	// ends while the device proves (a step that does not stop), Prove
	// returns ctx's error once that step returned, and neither serializes
	// nor verifies the proof. A nil dev
	// (or one without a backend) is refused and leaves the proof as it
	// was, to be proved on another. A second Prove, or one after Release,
	// returns ErrSynthesisSpent. Errors as Runner.Run's.
	Prove(ctx context.Context, dev Device) (*Result, error)
	// Release gives back the buffers without proving, as buffer.release
	// spans under the span in ctx. Safe to call after Prove (then a
	// no-op). Prove's errors and Release return only once the keys' load
	// that the synthesis started beside it (a circuit's first use) has
	// ended, since its spans are children of the span in ctx; that load
	// is not cancelled (the circuit's other proofs wait for it).
	Release(ctx context.Context) error
	// Freed is closed once the releaser has actually freed every host
	// buffer of this proof (an async release frees after the prove
	// returned): a memory budget counts the proof until then.
	Freed() <-chan struct{}
}

// Device is what a Synthesized is proved on. A Prover is one: its
// backend, with its proves' options; a device of one's own (a test's, a
// backend under another name) gives its Proving.
type Device interface {
	// Proving returns what a prove on this device takes from it.
	Proving() Proving
}

// Proving is what the prove of a Synthesized takes from the Device it
// runs on.
type Proving struct {
	// Backend runs the prove's NTTs and MSMs (groth16.WithBackend); its
	// Name is the Result's Backend and pipeline.prove's cuzk.backend.
	Backend backend.Backend
	// TracerProvider records pipeline.prove, pipeline.serialize,
	// proof.verify and the prove's spans; nil means the synthesizing
	// Prover's.
	TracerProvider trace.TracerProvider
	// Options are passed to groth16.ProveAssignment beside the
	// synthesis's own (its releaser, the key ID): a Prover's bit split
	// (WithBitSplit) and, in tests, its randomness (WithRandomness).
	Options []groth16.ProveOption

	// holder is the Prover whose Proving this is: a prove with another
	// Prover's keys registers them with it, so its LoadedCircuits lists
	// them and its EvictCircuit evicts them from its backend too.
	holder *Prover
}

// StagedRunner is a Runner whose Run splits into the two stages an engine
// schedules apart: Synthesize on the CPU (several at once), then the
// Synthesized's Prove on a device worker's Device. Run(ctx, req) is the
// same as Synthesize(ctx, req) proved on the runner itself.
type StagedRunner interface {
	Runner
	Device
	// Synthesize loads the circuit's keys and synthesizes req (keys.load,
	// pipeline.synthesize under the span in ctx). Errors as Run's.
	Synthesize(ctx context.Context, req *Request) (Synthesized, error)
}

// MemoryEstimator estimates, before synthesis, the host memory one proof
// of req takes at its peak, in bytes (see circuits.ProofMemory). Errors: what
// makes req unprovable (an unknown circuit, a bad size).
type MemoryEstimator interface {
	EstimateMemory(req *Request) (uint64, error)
}

// SynthesisTimer is a Synthesized that says how long its synthesis
// itself took, for a tuner that sizes the synthesis stage (the engine's
// Tuner): the wall time of Synthesize also holds one-time work no later
// synthesis of the circuit repeats (circuit.compile, keys.load, waiting
// for another job's load of the circuit).
type SynthesisTimer interface {
	SynthesisTiming() SynthesisTiming
}

// SynthesisTiming is what a SynthesisTimer measured.
type SynthesisTiming struct {
	// Synthesis is pipeline.synthesize's time: the witness, the solve and
	// the copies into the buffers (Result.Timings.Synthesis).
	Synthesis time.Duration
	// FirstSolve is set when the solve may have carried the circuit's
	// one-time solver work (synthesize.plan, made by the first solve of a
	// loaded circuit while the others wait for it): no solve of the
	// circuit had ended when this one began.
	FirstSolve bool
}

// synthesis is a Prover's Synthesized.
type synthesis struct {
	p     *Prover
	req   Request
	lc    *loadedCircuit
	w     witness.Witness
	asg   *groth16.Assignment
	res   *Result
	start time.Time
	freed chan struct{}
	done  bool
	// load is the circuit whose keys' load this synthesis started and
	// which ran on when it returned (nil: none, or ended): its keys.load
	// is a child of the caller's span (engine.job).
	load       *loadedCircuit
	firstSolve bool
}

func (s *synthesis) Freed() <-chan struct{} { return s.freed }

func (s *synthesis) SynthesisTiming() SynthesisTiming {
	return SynthesisTiming{Synthesis: s.res.Timings.Synthesis, FirstSolve: s.firstSolve}
}

// Release gives the buffers back, then waits for the keys' load this
// synthesis started, when it still runs (settle).
func (s *synthesis) Release(ctx context.Context) error {
	if s.done {
		return nil
	}
	s.done = true
	err := s.asg.Release(ctx, s.p.rel)
	s.p.afterReleases(s.freed)
	s.settle()
	return err
}

// settle waits until the load of the circuit's keys that this synthesis
// started has ended. That load runs beside the synthesis under the
// caller's span (keys.load, the backend's keys.preload), and the caller
// ends that span (engine.job) once the proof failed, was cancelled or was
// released unproved: a child must not outlive it. The load itself is not
// cancelled, since the circuit's other proofs wait for it; it is a read
// of cached keys, which ends by itself.
func (s *synthesis) settle() {
	if s.load != nil {
		<-s.load.ready
		s.load = nil
	}
}

// afterReleases closes freed once the releases queued so far are freed.
func (p *Prover) afterReleases(freed chan struct{}) {
	p.rel.AfterQueued(func() { close(freed) })
}

var (
	_ StagedRunner = (*Prover)(nil)
	_ Synthesized  = (*synthesis)(nil)
)

// EstimateMemory implements MemoryEstimator: circuits.ProofMemory from the
// compiled circuit's counts once the circuit is loaded, else from the
// requested constraints (the wires counted as twice the constraints plus
// the witness's values: a bound for the built-in circuits, whose
// constraints make about one wire each). Errors: ErrUnknownCircuit,
// circuits.ErrBadConstraints.
func (p *Prover) EstimateMemory(req *Request) (uint64, error) {
	if req == nil {
		return 0, fmt.Errorf("%w: nil request", groth16.ErrBadWitness)
	}
	p.mu.Lock()
	lc, ok := p.loaded[circuitKey(req.Circuit, req.Constraints)]
	p.mu.Unlock()
	if ok {
		select {
		case <-lc.ready:
			if lc.err == nil && lc.ccs != nil {
				wires := lc.ccs.GetNbInternalVariables() + lc.ccs.GetNbPublicVariables() + lc.ccs.GetNbSecretVariables()
				return circuits.ProofMemory(lc.ccs.GetNbConstraints(), wires, circuits.CommittedWires(lc.ccs)), nil
			}
		default:
		}
	}
	if _, isFile := lookupFiles(req.Circuit); isFile {
		// Not loaded yet: the witness is the only size at hand; the
		// estimate is made again from the circuit once it is loaded.
		n := max(len(req.Witness)/fr.Bytes, 1)
		return circuits.ProofMemory(n, n, 0), nil
	}
	if err := checkBuiltin(req.Circuit, req.Constraints); err != nil {
		return 0, err
	}
	return circuits.ProofMemory(req.Constraints, 2*req.Constraints+len(req.Witness)/fr.Bytes+1, 0), nil
}

// KeyMemory returns the estimated host memory of the proving keys this
// Prover holds, bytes (KeyMemory of each loaded circuit).
func (p *Prover) KeyMemory() uint64 { return KeyMemoryOf(p) }

// LoadedKey describes the keys of one loaded circuit (id as
// LoadedCircuits lists it): KeyID, the hex SHA-256 of its compiled
// constraint system, or for ephemeral keys an id of their setup
// (keycache.EphemeralPrefix; the id its bases have on a device), and the
// estimated host bytes of its proving key (KeyMemory). ok is false when
// the circuit is not loaded (or still loading, or failed to).
func (p *Prover) LoadedKey(id string) (keyID string, bytes uint64, ok bool) {
	p.mu.Lock()
	lc := p.loaded[id]
	p.mu.Unlock()
	if lc == nil {
		return "", 0, false
	}
	select {
	case <-lc.ready:
	default:
		return "", 0, false
	}
	if lc.err != nil || lc.keys == nil || lc.ccs == nil {
		return "", 0, false
	}
	return lc.keys.Hash, circuitKeyMemory(lc), true
}

// circuitKeyMemory is circuits.KeyMemory of a loaded circuit's size.
func circuitKeyMemory(lc *loadedCircuit) uint64 {
	wires := lc.ccs.GetNbInternalVariables() + lc.ccs.GetNbPublicVariables() + lc.ccs.GetNbSecretVariables()
	return circuits.KeyMemory(int(ecc.NextPowerOfTwo(uint64(lc.ccs.GetNbConstraints()))), wires)
}

// KeyMemoryOf returns the estimated host memory of the proving keys the
// pipelines hold, bytes, counting once the keys that several share (one
// Prover synthesizes for the others, which then hold its keys). Nil
// pipelines hold none.
func KeyMemoryOf(pipes ...*Prover) uint64 {
	seen := map[*loadedCircuit]bool{}
	var n uint64
	for _, p := range pipes {
		if p == nil {
			continue
		}
		p.mu.Lock()
		for _, lc := range p.loaded {
			select {
			case <-lc.ready:
				if lc.err == nil && lc.ccs != nil && !seen[lc] {
					seen[lc] = true
					n += circuitKeyMemory(lc)
				}
			default:
			}
		}
		p.mu.Unlock()
	}
	return n
}

// Warmup readies the backend for its first proof when it implements
// Warmer (the CUDA backend's kernels); nil at once otherwise. Its
// error names the backend once ("cuda backend: warm-up: REASON"; one
// whose Warmer does not say its name gets that prefix).
func (p *Prover) Warmup(ctx context.Context) error {
	w, ok := p.backend.(backend.Warmer)
	if !ok {
		return nil
	}
	err := w.Warmup(ctx)
	if err == nil {
		return nil
	}
	// A Warmer's error names its backend (backend.Warmer); one that does
	// not gets the name here, so that every caller can pass it on.
	if name := p.backend.Name(); !strings.HasPrefix(err.Error(), name+" backend") {
		return fmt.Errorf("%s backend: warm-up: %w", name, err)
	}
	return err
}

// Synthesize implements StagedRunner: keys.load (and circuit.compile on
// first use), then pipeline.synthesize, which covers the witness too
// (parsing the request's, or computing a built-in's sample).
func (p *Prover) Synthesize(ctx context.Context, req *Request) (Synthesized, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil request", groth16.ErrBadWitness)
	}
	s := &synthesis{p: p, req: *req, start: time.Now(), freed: make(chan struct{})}
	s.res = &Result{Backend: p.backend.Name()}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		s.res.TraceID = sc.TraceID().String()
	}
	t0 := time.Now()
	// The keys may still be loading (keys.load beside the synthesis, on a
	// circuit's first use): Prove waits for them.
	lc, owned, err := p.loadCircuitFirst(ctx, req.Circuit, req.Constraints)
	s.res.Timings.KeyLoad = time.Since(t0)
	if err != nil {
		return nil, err
	}
	s.lc = lc
	if owned {
		s.load = lc
	}
	if err := ctx.Err(); err != nil {
		s.settle()
		return nil, err
	}
	opts := []groth16.SynthesizeOption{groth16.WithReleaser(p.rel), groth16.WithTracerProvider(p.cfg.tp)}
	select { // the commitment keys: loaded first for a circuit with commitments
	case <-lc.ready:
		if lc.err == nil {
			opts = append(opts, groth16.WithProvingKey(lc.keys.PK))
		}
	default:
	}
	t0 = time.Now()
	synCtx, synSpan := p.tracer.Start(ctx, semconv.SpanPipelineSynthesize)
	// Async releases of a failed solve's buffers go under the caller's
	// span (engine.job), as a prove's do, not under the ended synthesis.
	synCtx = buffer.WithReleaseParent(synCtx, ctx)
	w, err := p.witness(synCtx, lc, req)
	var asg *groth16.Assignment
	if err == nil {
		if p.cfg.r != nil {
			opts = append(opts, groth16.WithRandomness(*p.cfg.r, *p.cfg.s))
		}
		s.firstSolve = !lc.solved.Load()
		asg, err = groth16.Solve(synCtx, lc.ccs, w, opts...)
		if err == nil {
			lc.solved.Store(true)
		}
	}
	if err != nil {
		semconv.SetError(synSpan, err)
	} else {
		synSpan.SetAttributes(asg.Attributes()...)
	}
	synSpan.End()
	s.res.Timings.Synthesis = time.Since(t0)
	if err != nil {
		s.settle()
		return nil, err
	}
	s.w, s.asg = w, asg
	if err := ctx.Err(); err != nil {
		s.Release(ctx)
		return nil, err
	}
	return s, nil
}

// Proving implements Device: the Prover's backend, its tracer provider,
// its bit split (WithBitSplit) and, in tests, its randomness; a prove of
// another Prover's synthesis here holds that synthesis's keys here too.
func (p *Prover) Proving() Proving {
	opts := []groth16.ProveOption{WithBitSplit(p.cfg.bitSplit)}
	if p.cfg.r != nil {
		opts = append(opts, WithRandomness(*p.cfg.r, *p.cfg.s))
	}
	return Proving{Backend: p.backend, TracerProvider: p.cfg.tp, Options: opts, holder: p}
}

// Prove implements Synthesized: pipeline.prove on dev's backend with the
// keys of the Prover that synthesized s, then pipeline.serialize and
// proof.verify (when asked). The buffers go back through the
// synthesizing Prover's releaser.
func (s *synthesis) Prove(ctx context.Context, dev Device) (*Result, error) {
	if s == nil || s.p == nil {
		return nil, fmt.Errorf("prove: %w: no synthesized proof (nil)", ErrSynthesisSpent)
	}
	if s.done {
		return nil, fmt.Errorf("prove: %w", ErrSynthesisSpent)
	}
	if dev == nil {
		return nil, errors.New("prove: nil device (the synthesized proof is kept)")
	}
	pv := dev.Proving()
	if pv.Backend == nil {
		return nil, fmt.Errorf("prove: device %T has no backend (the synthesized proof is kept)", dev)
	}
	if err := ctx.Err(); err != nil {
		s.Release(ctx)
		return nil, err
	}
	t0 := time.Now()
	if err := keysOf(ctx, s.lc); err != nil {
		// The keys that were loading beside the synthesis failed, or
		// ctx ended while they load.
		s.Release(ctx)
		return nil, err
	}
	s.res.Timings.KeyLoad += time.Since(t0)
	s.load = nil // ended
	s.done = true
	if h := pv.holder; h != nil && h != s.p {
		// Proved there with another Prover's keys: hold them there too,
		// so its LoadedCircuits lists them and its EvictCircuit drops
		// them from its backend's device as well.
		k := circuitKey(s.req.Circuit, s.req.Constraints)
		h.mu.Lock()
		if _, ok := h.loaded[k]; !ok {
			h.loaded[k] = s.lc
		}
		h.mu.Unlock()
	}
	res, err := s.prove(ctx, pv)
	s.p.afterReleases(s.freed)
	if err != nil {
		return nil, err
	}
	res.Backend = pv.Backend.Name()
	return res, nil
}

// prove is the device stage of s on pv: pipeline.prove, pipeline.serialize,
// proof.verify (when asked). ProveAssignment releases the assignment's
// buffers whatever happens, through the synthesizing Prover's releaser.
func (s *synthesis) prove(ctx context.Context, pv Proving) (*Result, error) {
	req, lc, w, asg, res := &s.req, s.lc, s.w, s.asg, s.res
	tp := pv.TracerProvider
	if tp == nil {
		tp = s.p.cfg.tp
	}
	tracer := semconv.Tracer(tp)
	opts := append([]groth16.ProveOption{WithReleaser(s.p.rel), WithTracerProvider(tp)}, pv.Options...)

	t0 := time.Now()
	pctx, pspan := tracer.Start(ctx, semconv.SpanPipelineProve, trace.WithAttributes(
		semconv.KeyCircuitID.String(req.Circuit), semconv.KeyBackend.String(pv.Backend.Name())))
	// Async releases (ours, the backend's) go under engine.job, outside
	// pipeline.prove.
	pctx = buffer.WithReleaseParent(pctx, ctx)
	opts = append(opts, groth16.WithBackend(pv.Backend), groth16.WithKeyID(lc.keys.Hash))
	proof, err := groth16.ProveAssignment(pctx, lc.keys.PK, asg, opts...)
	semconv.SetError(pspan, err)
	pspan.End()
	if err != nil {
		return nil, err
	}
	res.Timings.Prove = time.Since(t0)
	// A caller that gave up while the device proved gets its reason, not
	// a proof: serializing and verifying it would only serve that caller.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cancelled during %s: %w", semconv.SpanPipelineProve, err)
	}

	t0 = time.Now()
	_, sspan := tracer.Start(ctx, semconv.SpanPipelineSerialize)
	var buf bytes.Buffer
	if _, err := proof.WriteTo(&buf); err != nil {
		semconv.SetError(sspan, err)
		sspan.End()
		return nil, fmt.Errorf("serialize proof: %w", err)
	}
	pub, err := w.Public()
	if err == nil {
		res.PublicWitness, err = pub.MarshalBinary()
	}
	if err != nil {
		semconv.SetError(sspan, err)
		sspan.End()
		return nil, fmt.Errorf("serialize public witness: %w", err)
	}
	res.Proof = buf.Bytes()
	sspan.SetAttributes(semconv.KeyProofBytes.Int(len(res.Proof)))
	sspan.End()
	res.Timings.Serialize = time.Since(t0)

	if req.Verify {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cancelled during %s: %w", semconv.SpanPipelineSerialize, err)
		}
		t0 = time.Now()
		_, vspan := tracer.Start(ctx, semconv.SpanProofVerify)
		if lc.keys.VK == nil {
			err = fmt.Errorf("circuit %s was registered without a verifying key", req.Circuit)
		} else if verr := gnarkgroth16.Verify(proof, lc.keys.VK, pub); verr != nil {
			err = fmt.Errorf("%w: %v", ErrVerifyFailed, verr)
		}
		res.Verified = err == nil
		vspan.SetAttributes(semconv.KeyProofVerified.Bool(res.Verified))
		semconv.SetError(vspan, err)
		vspan.End()
		if err != nil {
			return nil, err
		}
		res.Timings.Verify = time.Since(t0)
	}
	res.Timings.Total = time.Since(s.start)
	return res, nil
}

// checkBuiltin checks that name is a built-in circuit and constraints is
// positive. Errors wrap ErrUnknownCircuit, circuits.ErrNotBuiltin or
// circuits.ErrBadConstraints.
func checkBuiltin(name string, constraints int) error {
	if _, err := circuits.LookupBuiltin(name); err != nil {
		return err
	}
	if constraints <= 0 {
		return fmt.Errorf("%w: %d (must be positive: want 1 to 2^32 = %d)", circuits.ErrBadConstraints, constraints, uint64(circuits.MaxConstraints))
	}
	return nil
}

// HasWarmup reports whether the backend has a warm-up (implements
// Warmer), so a daemon knows whether to wait for Warmup before serving.
func (p *Prover) HasWarmup() bool {
	_, ok := p.backend.(backend.Warmer)
	return ok
}
