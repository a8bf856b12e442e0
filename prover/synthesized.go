package prover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// Synthesized is a proof whose CPU stage (keys.load, pipeline.synthesize)
// is done: its wires and a, b, c evaluations sit in host buffers, waiting
// for a device. It is consumed by StagedRunner.ProveSynthesized or given
// back by Release; either once.
type Synthesized interface {
	// Release gives back the buffers without proving, as buffer.release
	// spans under the span in ctx. Safe to call after ProveSynthesized
	// (then a no-op).
	Release(ctx context.Context) error
	// Freed is closed once the releaser has actually freed every host
	// buffer of this proof (an async release frees after the prove
	// returned): a memory budget counts the proof until then.
	Freed() <-chan struct{}
}

// StagedRunner is a Runner whose Run splits into the two stages an engine
// schedules apart: Synthesize on the CPU (several at once), then
// ProveSynthesized on a device worker. Run(ctx, req) is the same as
// ProveSynthesized(ctx, Synthesize(ctx, req)).
type StagedRunner interface {
	Runner
	// Synthesize loads the circuit's keys and synthesizes req (keys.load,
	// pipeline.synthesize under the span in ctx). Errors as Run's.
	Synthesize(ctx context.Context, req *Request) (Synthesized, error)
	// ProveSynthesized proves s on this runner's backend (pipeline.prove,
	// pipeline.serialize, proof.verify under the span in ctx) and releases
	// its buffers, on success and on error. s may come from another
	// StagedRunner of the same kind (one Prover per GPU, one
	// synthesizing for all). Errors as Run's.
	ProveSynthesized(ctx context.Context, s Synthesized) (*Result, error)
}

// MemoryEstimator estimates, before synthesis, the host memory one proof
// of req takes at its peak, in bytes (see circuits.ProofMemory). Errors: what
// makes req unprovable (an unknown circuit, a bad size).
type MemoryEstimator interface {
	EstimateMemory(req *Request) (uint64, error)
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
}

func (s *synthesis) Freed() <-chan struct{} { return s.freed }

func (s *synthesis) Release(ctx context.Context) error {
	if s.done {
		return nil
	}
	s.done = true
	err := s.asg.Release(ctx, s.p.rel)
	s.p.afterReleases(s.freed)
	return err
}

// afterReleases closes freed once the releases queued so far are freed.
func (p *Prover) afterReleases(freed chan struct{}) {
	p.rel.AfterQueued(func() { close(freed) })
}

var _ StagedRunner = (*Prover)(nil)

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
// constraint system (the id its bases have on a device), and the
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
// Warmer (the CUDA backend's kernels); nil at once otherwise.
func (p *Prover) Warmup(ctx context.Context) error {
	if w, ok := p.backend.(backend.Warmer); ok {
		return w.Warmup(ctx)
	}
	return nil
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
	// circuit's first use): ProveSynthesized waits for them.
	lc, err := p.loadCircuitFirst(ctx, req.Circuit, req.Constraints)
	s.res.Timings.KeyLoad = time.Since(t0)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lc = lc
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
	w, err := p.witness(synCtx, lc, req)
	var asg *groth16.Assignment
	if err == nil {
		if p.cfg.r != nil {
			opts = append(opts, groth16.WithRandomness(*p.cfg.r, *p.cfg.s))
		}
		asg, err = groth16.Solve(synCtx, lc.ccs, w, opts...)
	}
	if err != nil {
		semconv.SetError(synSpan, err)
	} else {
		synSpan.SetAttributes(asg.Attributes()...)
	}
	synSpan.End()
	s.res.Timings.Synthesis = time.Since(t0)
	if err != nil {
		return nil, err
	}
	s.w, s.asg = w, asg
	if err := ctx.Err(); err != nil {
		s.Release(ctx)
		return nil, err
	}
	return s, nil
}

// ProveSynthesized implements StagedRunner: pipeline.prove on this
// Prover's backend with the keys of the Prover that synthesized s,
// then pipeline.serialize and proof.verify (when asked). The buffers go
// back through the synthesizing Prover's releaser.
func (p *Prover) ProveSynthesized(ctx context.Context, sz Synthesized) (*Result, error) {
	s, ok := sz.(*synthesis)
	if !ok || s == nil || s.p == nil {
		return nil, fmt.Errorf("%w: %T", ErrForeignSynthesis, sz)
	}
	if s.done {
		return nil, errors.New("prove: synthesized proof already proved or released")
	}
	if err := ctx.Err(); err != nil {
		s.Release(ctx)
		return nil, err
	}
	t0 := time.Now()
	if err := keysOf(ctx, s.lc); err != nil {
		// The keys that were loading beside the synthesis failed.
		s.Release(ctx)
		return nil, err
	}
	s.res.Timings.KeyLoad += time.Since(t0)
	s.done = true
	if s.p != p {
		// Proved here with another Prover's keys: hold them here too, so
		// Loaded lists them and Evict drops them from this backend's
		// device as well.
		p.mu.Lock()
		if _, ok := p.loaded[circuitKey(s.req.Circuit, s.req.Constraints)]; !ok {
			p.loaded[circuitKey(s.req.Circuit, s.req.Constraints)] = s.lc
		}
		p.mu.Unlock()
	}
	res, err := p.proveAssignment(ctx, s)
	s.p.afterReleases(s.freed)
	if err != nil {
		return nil, err
	}
	res.Backend = p.backend.Name()
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
