package groth16

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// Prove makes a Groth16 proof over BLS12-381 for a gnark R1CS, its gnark
// proving key and a full (public and secret) witness: Synthesize, then
// ProveAssignment. The result is a *groth16_bls12381.Proof that gnark's
// gnarkgroth16.Verify accepts with the matching verifying key and the public
// witness. Spans: pipeline.synthesize and groth16.prove (with compute_h,
// the MSMs, assembly and buffer.release below it) under the span in ctx.
// Circuits with commitments (gnark's api.Commit, BSB22) are proved as
// gnark does: the proof carries the commitments and their folded proof of
// knowledge (commitment.go).
//
// Options read: WithBackend, WithReleaser, WithRandomness,
// WithTracerProvider, WithKeyID. Errors wrap
// ErrUnsupported (other curve or proof system: PLONK, a key or witness
// not of BLS12-381, a nil or typed-nil ccs or pk), ErrWitnessSize (a nil
// witness too), ErrUnsatisfied, ErrKeyMismatch, ctx's
// error (a ctx done before the call proves nothing), or the backend's
// error.
// Safe for concurrent use with distinct witnesses.
func Prove(ctx context.Context, ccs constraint.ConstraintSystem, pk gnarkgroth16.ProvingKey, fullWitness witness.Witness, opts ...ProveOption) (gnarkgroth16.Proof, error) {
	// A caller that gave up before the call gets its reason, not a proof.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := asProvingKey(pk); err != nil {
		return nil, err
	}
	cfg := newConfig(opts, ProveOption.applyProve)
	if cfg.releaser == nil {
		// One Releaser for both steps, so a pool's buffers are shared.
		cfg.releaser = buffer.OrSync(nil, cfg.tp)
	}
	scfg := cfg
	scfg.pk = pk
	asg, err := synthesizeWith(ctx, ccs, fullWitness, scfg)
	if err != nil {
		return nil, err
	}
	return proveAssignmentWith(ctx, pk, asg, cfg)
}

// ProveAssignment runs the Groth16 prover (Groth, "On the size of
// pairing-based non-interactive arguments", EUROCRYPT 2016; notation of
// DIZK, eprint 2018/691, fig. 4) on a solved assignment, in the steps of
// gnark's prove.go: H by Backend.ComputeH (groth16.compute_h), the wire
// vectors without the wires whose [A]₁ or [B]₁ base is the point at
// infinity, the G1 MSMs A, B, K, H and the G2 MSM B run concurrently
// (msm.g1.a, msm.g1.b, msm.g1.k, msm.g1.h, msm.g2.b), and the assembly with
// the blinding scalars r, s (groth16.assemble):
//
//	Ar  = [α]₁ + Σ wᵢ[Aᵢ]₁ + r[δ]₁
//	Bs  = [β]₂ + Σ wᵢ[Bᵢ]₂ + s[δ]₂
//	Krs = Σ wᵢ[Kᵢ]₁ + Σ hᵢ[Zᵢ]₁ + s·Ar + r·Bs₁ − rs[δ]₁
//
// all as one groth16.prove span under the span in ctx. For a circuit with
// commitments, the K MSM leaves out the private committed and commitment
// wires (their bases are the commitment keys'), the proof of knowledge of
// each commitment is one more backend MSM (msm.g1.commitment_pok, with the
// others), and the proof carries the commitments of the solve and the
// proofs of knowledge folded (commitment.go); asg must then come from
// Synthesize with the same pk. It consumes asg:
// every buffer (b and c after compute_h; h, which is a's memory, and wires,
// wires.a, wires.b, wires.k after the MSMs) goes through the Releaser as a
// buffer.release span, whatever the outcome. Sync and pool releases are
// children of groth16.prove, on the critical path; async ones are children
// of the span set by buffer.WithReleaseParent on ctx (the Prover sets the
// job's), else of the span in ctx, outside groth16.prove.
//
// Options read: WithBackend, WithReleaser, WithRandomness,
// WithTracerProvider, WithKeyID. Errors wrap ErrUnsupported (pk not a
// BLS12-381 key, nil or typed-nil), ErrKeyMismatch, ctx's error or the
// backend's; a nil asg, or a typed-nil backend, is an error too.
func ProveAssignment(ctx context.Context, pk gnarkgroth16.ProvingKey, asg *Assignment, opts ...ProveOption) (gnarkgroth16.Proof, error) {
	return proveAssignmentWith(ctx, pk, asg, newConfig(opts, ProveOption.applyProve))
}

// proveAssignmentWith is ProveAssignment with its options applied (Prove
// passes its own).
func proveAssignmentWith(ctx context.Context, pk gnarkgroth16.ProvingKey, asg *Assignment, cfg config) (proof gnarkgroth16.Proof, err error) {
	if asg == nil {
		return nil, errors.New("prove: nil assignment")
	}
	rel := buffer.OrSync(cfg.releaser, cfg.tp)
	be := cfg.backend
	if be == nil {
		be = cpu.New(cfg.tp)
	} else if isNil(be) {
		// Released like any refused proof: the caller gave asg away.
		return nil, errors.Join(fmt.Errorf("prove: nil backend (%T)", be), asg.Release(ctx, rel))
	}
	callerCtx := ctx
	ctx, span := cfg.tracer().Start(ctx, semconv.SpanGroth16Prove, trace.WithAttributes(
		semconv.KeyBackend.String(be.Name()),
		semconv.KeyCircuitConstraints.Int(asg.NbConstraints),
		semconv.KeyCircuitWires.Int(len(asg.Wires)),
		semconv.KeyDomainSize.Int(asg.DomainSize),
	))
	if !buffer.HasReleaseParent(callerCtx) {
		// Async releases, ours and the backend's (pinned buffers), run
		// after the step that made the buffer: under the caller's span.
		ctx = buffer.WithReleaseParent(ctx, callerCtx)
	}
	if asg.com != nil {
		span.SetAttributes(semconv.KeyCommitmentCount.Int(len(asg.com.info)))
	}
	p := &proving{cfg: &cfg, backend: be, rel: rel, relCtx: ctx, asg: asg}
	defer func() {
		if rerr := p.releaseAll(); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			proof = nil
			semconv.SetError(span, err)
		}
		span.End()
	}()
	gpk, err := asProvingKey(pk)
	if err != nil {
		return nil, err
	}
	if err := p.prove(ctx, gpk); err != nil {
		return nil, err
	}
	return p.proof, nil
}

// asProvingKey checks that pk is a non-nil BLS12-381 proving key of gnark.
// Errors wrap ErrUnsupported.
func asProvingKey(pk gnarkgroth16.ProvingKey) (*groth16_bls12381.ProvingKey, error) {
	gpk, ok := pk.(*groth16_bls12381.ProvingKey)
	if !ok {
		return nil, fmt.Errorf("%w: proving key %T (want *groth16_bls12381.ProvingKey)", ErrUnsupported, pk)
	}
	if gpk == nil {
		return nil, fmt.Errorf("%w: nil proving key (%T)", ErrUnsupported, pk)
	}
	return gpk, nil
}

// proving is the state of one proof.
type proving struct {
	cfg     *config
	backend backend.Backend
	rel     *buffer.Releaser
	relCtx  context.Context
	asg     *Assignment

	wiresA, wiresB, wiresK *buffer.Mmap
	proof                  *groth16_bls12381.Proof
	// counting is the scalar counts running beside the MSMs (split):
	// releaseAll waits for them before the wire vectors they read go.
	counting sync.WaitGroup
}

func (p *proving) prove(ctx context.Context, pk *groth16_bls12381.ProvingKey) error {
	asg := p.asg
	if asg.A == nil {
		return errors.New("prove: assignment already consumed")
	}
	var info constraint.Groth16Commitments
	if asg.com != nil {
		info = asg.com.info
	}
	if len(pk.CommitmentKeys) != len(info) {
		return fmt.Errorf("%w: key with %d commitment keys, assignment with %d commitments",
			ErrKeyMismatch, len(pk.CommitmentKeys), len(info))
	}
	kOut := kExcluded(info)
	if err := checkKeyShape(pk, asg, len(kOut)); err != nil {
		return err
	}
	if asg.com != nil {
		if err := asg.com.checkKey(pk); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// The blinding scalars first: a failing RNG costs nothing.
	var r, s fr.Element
	if p.cfg.r != nil {
		r, s = *p.cfg.r, *p.cfg.s
	} else {
		if _, err := r.SetRandom(); err != nil {
			return fmt.Errorf("sample r: %w", err)
		}
		if _, err := s.SetRandom(); err != nil {
			return fmt.Errorf("sample s: %w", err)
		}
	}

	// A device backend holds its device from here to the last MSM: a
	// gpu.lock span, then a session whose end is gpu.total (ProofScoper).
	// The deferred call covers the error returns; the end is idempotent.
	endDevice := func() error { return nil }
	if sc, ok := p.backend.(backend.ProofScoper); ok {
		ctx, endDevice = sc.BeginProof(ctx)
		defer endDevice()
	}

	// Filter the wires for the A and B MSMs while H is computed, as gnark
	// does: pk.G1.A and pk.G1.B omit the bases at infinity.
	var filterErr error
	filtered := make(chan struct{})
	var wA, wB, wK []fr.Element
	var splitA, splitB, splitK wireMSM
	var deltas []curve.G1Affine // r[δ]₁, s[δ]₁, −rs[δ]₁, computed here as gnark does
	go func() {
		defer close(filtered)
		var kr fr.Element
		kr.Mul(&r, &s).Neg(&kr)
		deltas = curve.BatchScalarMultiplicationG1(&pk.G1.Delta, []fr.Element{r, s, kr})
		filterErr = p.filter(ctx, pk, kOut, &wA, &wB, &wK)
		if filterErr != nil {
			return
		}
		// The scalar kinds for the MSM spans, and the bit split, hidden
		// behind compute_h.
		splitA, splitB, splitK = p.split(wA), p.split(wB), p.split(wK)
	}()

	hctx, hspan := p.cfg.tracer().Start(ctx, semconv.SpanComputeH, trace.WithAttributes(semconv.KeyNTTSize.Int(asg.DomainSize)))
	err := p.backend.ComputeH(hctx, p.cfg.keyID, &pk.Domain, asg.A, asg.B, asg.C)
	semconv.SetError(hspan, err)
	hspan.End()
	<-filtered
	if err != nil {
		return fmt.Errorf("compute H: %w", err)
	}
	if filterErr != nil {
		return fmt.Errorf("filter wires: %w", filterErr)
	}
	// b and c were scratch for compute_h.
	if err := p.release("b", &asg.b); err != nil {
		return err
	}
	if err := p.release("c", &asg.c); err != nil {
		return err
	}
	asg.B, asg.C = nil, nil
	h := asg.A[:len(pk.G1.Z)] // deg H = n − 2: n − 1 coefficients

	id := func(part string) string {
		if p.cfg.keyID == "" {
			return ""
		}
		return p.cfg.keyID + ":" + part
	}
	var (
		wg                            sync.WaitGroup
		ar, bs1, krs, krs2            curve.G1Jac
		bs2                           curve.G2Jac
		errA, errB, errK, errH, errB2 error
	)
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	g1 := func(name string, bases backend.BaseSet[curve.G1Affine], w []fr.Element, sp wireMSM) (curve.G1Jac, error) {
		return splitMSM(p, ctx, name, p.cfg.keyID, bases, w, sp, p.backend.MSMG1, p.batchAdder().BatchAddG1)
	}
	run(func() {
		ar, errA = g1(semconv.SpanMSMG1A, backend.BaseSet[curve.G1Affine]{ID: id("g1.a"), Points: pk.G1.A}, wA, splitA)
	})
	run(func() {
		bs1, errB = g1(semconv.SpanMSMG1B, backend.BaseSet[curve.G1Affine]{ID: id("g1.b"), Points: pk.G1.B}, wB, splitB)
	})
	run(func() {
		krs, errK = g1(semconv.SpanMSMG1K, backend.BaseSet[curve.G1Affine]{ID: id("g1.k"), Points: pk.G1.K}, wK, splitK)
	})
	poks := make([]curve.G1Jac, len(info))
	errPok := make([]error, len(info))
	for i := range info {
		run(func() {
			poks[i], errPok[i] = p.pok(ctx, pk, i, id(fmt.Sprintf("commitment.%d.pok", i)))
		})
	}
	run(func() {
		krs2, errH = p.backend.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1H, KeyID: p.cfg.keyID, FromComputeH: true}, backend.BaseSet[curve.G1Affine]{ID: id("g1.z"), Points: pk.G1.Z}, h)
	})
	// [B]₂ on the calling goroutine, as gnark does.
	bs2, errB2 = splitMSM(p, ctx, semconv.SpanMSMG2B, p.cfg.keyID, backend.BaseSet[curve.G2Affine]{ID: id("g2.b"), Points: pk.G2.B}, wB, splitB,
		p.backend.MSMG2, p.batchAdder().BatchAddG2)
	wg.Wait()
	if err := errors.Join(append(errPok, errA, errB, errK, errH, errB2, endDevice())...); err != nil {
		return err
	}
	var foldC fr.Element
	if len(info) > 0 {
		if foldC, err = foldChallenge(info, asg.Wires); err != nil {
			return err
		}
	}
	if err := p.releaseAll(); err != nil {
		return err
	}

	_, aspan := p.cfg.tracer().Start(ctx, semconv.SpanGroth16Assemble)
	p.proof = assemble(pk, &r, &s, deltas, &ar, &bs1, &krs, &krs2, &bs2)
	if len(info) > 0 {
		p.proof.Commitments = slices.Clone(asg.com.commitments)
		p.proof.CommitmentPok = foldPoks(poks, foldC)
	}
	aspan.End()
	return nil
}

// assemble adds the key's constant terms and the blinding, as gnark's
// computeAR1, computeBS1, computeKRS and computeBS2; deltas are r[δ]₁,
// s[δ]₁ and −rs[δ]₁.
func assemble(pk *groth16_bls12381.ProvingKey, r, s *fr.Element, deltas []curve.G1Affine, ar, bs1, krs, krs2 *curve.G1Jac, bs2 *curve.G2Jac) *groth16_bls12381.Proof {
	var rBig, sBig big.Int
	r.BigInt(&rBig)
	s.BigInt(&sBig)

	proof := &groth16_bls12381.Proof{}
	ar.AddMixed(&pk.G1.Alpha)
	ar.AddMixed(&deltas[0])
	proof.Ar.FromJacobian(ar)

	bs1.AddMixed(&pk.G1.Beta)
	bs1.AddMixed(&deltas[1])

	var p1 curve.G1Jac
	krs.AddMixed(&deltas[2])
	krs.AddAssign(krs2)
	p1.ScalarMultiplication(ar, &sBig)
	krs.AddAssign(&p1)
	p1.ScalarMultiplication(bs1, &rBig)
	krs.AddAssign(&p1)
	proof.Krs.FromJacobian(krs)

	var deltaS curve.G2Jac
	deltaS.FromAffine(&pk.G2.Delta)
	deltaS.ScalarMultiplication(&deltaS, &sBig)
	bs2.AddAssign(&deltaS)
	bs2.AddMixed(&pk.G2.Beta)
	proof.Bs.FromJacobian(bs2)
	return proof
}

// filter makes the scalar vectors of the A, B and K MSMs (wires.a,
// wires.b, wires.k) as one groth16.filter_wires span, a child of
// groth16.prove that runs concurrently with groth16.compute_h, with the
// three lengths as cuzk.wires.a, .b, .k. The buffers it makes are p's to
// release, also on error.
func (p *proving) filter(ctx context.Context, pk *groth16_bls12381.ProvingKey, kOut []int, wA, wB, wK *[]fr.Element) (err error) {
	asg := p.asg
	_, span := p.cfg.tracer().Start(ctx, semconv.SpanFilterWires)
	defer func() {
		span.SetAttributes(
			semconv.KeyWiresA.Int(len(*wA)),
			semconv.KeyWiresB.Int(len(*wB)),
			semconv.KeyWiresK.Int(len(*wK)),
		)
		semconv.SetError(span, err)
		span.End()
	}()
	if p.wiresA, *wA, err = filterWires(p.rel, asg.Wires, pk.InfinityA, int(pk.NbInfinityA)); err != nil {
		return err
	}
	if p.wiresB, *wB, err = filterWires(p.rel, asg.Wires, pk.InfinityB, int(pk.NbInfinityB)); err != nil {
		return err
	}
	p.wiresK, *wK, err = kWires(p.rel, asg.Wires, asg.NbPublic, kOut)
	return err
}

func (p *proving) release(name string, b **buffer.Mmap) error {
	if *b == nil {
		return nil
	}
	buf := *b
	*b = nil
	return p.rel.Release(p.relCtx, name, buf)
}

// releaseAll releases whatever the proof still holds; idempotent.
func (p *proving) releaseAll() error {
	p.counting.Wait()
	asg := p.asg
	errs := []error{
		p.release("b", &asg.b),
		p.release("c", &asg.c),
		p.release("h", &asg.a),
		p.release("wires", &asg.wires),
		p.release("wires.a", &p.wiresA),
		p.release("wires.b", &p.wiresB),
		p.release("wires.k", &p.wiresK),
	}
	asg.Wires, asg.A, asg.B, asg.C = nil, nil, nil, nil
	return errors.Join(errs...)
}
