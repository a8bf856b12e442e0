package setup

import (
	"context"
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/pedersen"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ErrUnsupported is wrapped by the error for a constraint system, key or
// witness that is not a BLS12-381 R1CS of gnark (a PLONK SparseR1CS,
// another curve): the one sentinel of that meaning, which the key cache
// (keycache.ErrUnsupported) and the prove (groth16.ErrUnsupported) return
// too. error.type unsupported.
var ErrUnsupported = semconv.NewError(semconv.ErrorTypeUnsupported, "not supported")

// Option configures Setup.
type Option interface{ apply(*config) }

type config struct {
	tw      *ToxicWaste
	mul     Multiplier
	tp      trace.TracerProvider
	backend string
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithToxicWaste makes the keys from tw instead of fresh secrets (tests,
// reproducible benchmarks): the same tw gives the same keys, byte for
// byte, whatever the Multiplier. tw is copied.
func WithToxicWaste(tw ToxicWaste) Option {
	return optionFunc(func(c *config) {
		cp := tw
		cp.CommitmentSigma = append([]fr.Element(nil), tw.CommitmentSigma...)
		c.tw = &cp
	})
}

// WithMultiplier computes the fixed-base multiplications with m (default
// CPU); backend names it in the spans' cuzk.setup.backend ("cpu", "cuda").
func WithMultiplier(m Multiplier, backend string) Option {
	return optionFunc(func(c *config) { c.mul, c.backend = m, backend })
}

// WithTracerProvider records the setup.* spans with tp (default: global).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// Setup makes the Groth16 keys of ccs, a BLS12-381 R1CS compiled by gnark
// (api.Commit included), laid out as gnark's groth16.Setup lays them out:
// the proving key's Domain, [α]₁ [β]₁ [δ]₁, A and B without their points at
// infinity (InfinityA/B, NbInfinityA/B), the n−1 points of Z
// bit-reversed, K of the private wires, [β]₂ [δ]₂ and B in G2, and one
// Pedersen key per commitment; the verifying key's [α]₁ [β]₁ [δ]₁, K of
// the public and commitment wires, [β]₂ [δ]₂ [γ]₂, the commitment keys and
// PublicAndCommitmentCommitted, precomputed for gnark's verifier. Their
// serialization (WriteTo, WriteDump) is gnark's.
//
// Memory: the scalars (about 5 × 32 bytes per wire and 64 per constraint)
// and the keys themselves (about 480 bytes per wire, 96 per constraint)
// are held at once. Errors wrap ErrUnsupported, ErrToxicWaste (given
// secrets that make no keys), the Multiplier's, or ctx's once it ends
// (checked between steps). Spans: see the package doc.
func Setup(ctx context.Context, ccs constraint.ConstraintSystem, opts ...Option) (*groth16_bls12381.ProvingKey, *groth16_bls12381.VerifyingKey, error) {
	cfg := config{mul: CPU{}, backend: "cpu"}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	tracer := semconv.Tracer(cfg.tp)
	r1cs, err := asR1CS(ccs)
	if err != nil {
		return nil, nil, err
	}
	info := r1cs.CommitmentInfo.(constraint.Groth16Commitments)
	domain := fft.NewDomain(uint64(r1cs.GetNbConstraints()))
	tw := cfg.tw
	if tw == nil {
		s, err := SampleToxicWaste(len(info))
		if err != nil {
			return nil, nil, err
		}
		tw = &s
	}
	if err := tw.check(domain.Cardinality, len(info)); err != nil {
		return nil, nil, err
	}
	backend := semconv.KeySetupBackend.String(cfg.backend)

	// The scalars.
	ctx1, span := tracer.Start(ctx, semconv.SpanSetupEvaluate, trace.WithAttributes(
		semconv.KeyCircuitConstraints.Int(r1cs.GetNbConstraints()), backend))
	A, B, C, err := evaluateABC(ctx1, r1cs, domain, tw.T)
	var ks *keyScalars
	if err == nil {
		ks, err = keyScalarsOf(r1cs, domain, tw, A, B, C)
	}
	endSpan(span, err)
	if err != nil {
		return nil, nil, err
	}
	A, B, C = nil, nil, nil

	pk, vk := new(groth16_bls12381.ProvingKey), new(groth16_bls12381.VerifyingKey)
	pk.InfinityA, pk.InfinityB = ks.infA, ks.infB
	nbWires := len(ks.infA)
	pk.NbInfinityA, pk.NbInfinityB = uint64(nbWires-len(ks.A)), uint64(nbWires-len(ks.B))

	fixed := fixedBase{tracer: tracer, backend: backend, constraints: r1cs.GetNbConstraints()}
	g1 := func(vector string, scalars []fr.Element) ([]curve.G1Affine, error) {
		return mulFixedBase(ctx, fixed, semconv.SpanSetupG1, "₁", vector, scalars, cfg.mul.MulG1)
	}
	g2 := func(vector string, scalars []fr.Element) ([]curve.G2Affine, error) {
		return mulFixedBase(ctx, fixed, semconv.SpanSetupG2, "₂", vector, scalars, cfg.mul.MulG2)
	}

	abd, err := g1("alpha_beta_delta", []fr.Element{tw.Alpha, tw.Beta, tw.Delta})
	if err != nil {
		return nil, nil, err
	}
	pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta = abd[0], abd[1], abd[2]
	if pk.G1.A, err = g1("a", ks.A); err != nil {
		return nil, nil, err
	}
	ks.A = nil
	if pk.G1.B, err = g1("b", ks.B); err != nil {
		return nil, nil, err
	}
	if pk.G1.Z, err = g1("z", ks.Z); err != nil {
		return nil, nil, err
	}
	ks.Z = nil
	if vk.G1.K, err = g1("k_vk", ks.vkK); err != nil {
		return nil, nil, err
	}
	if pk.G1.K, err = g1("k_pk", ks.pkK); err != nil {
		return nil, nil, err
	}
	ks.pkK = nil

	// Pedersen keys: gnark's pedersen.Setup per commitment, with the
	// shared G2 point and each σ given: Basis = [K]₁ of its private
	// committed wires, BasisExpSigma = σ·Basis (here [σ·K]₁), G = [s]₂,
	// GSigmaNeg = −σ·G.
	if len(info) > 0 {
		cctx, span := tracer.Start(ctx, semconv.SpanSetupCommitment, trace.WithAttributes(attribute.Int("cuzk.setup.commitments", len(info)), backend))
		err := func() error {
			pk.CommitmentKeys = make([]pedersen.ProvingKey, len(info))
			vk.CommitmentKeys = make([]pedersen.VerifyingKey, len(info))
			cG2 := commitmentG2(tw)
			for i := range info {
				basis, err := g1("commitment", ks.ckK[i])
				if err != nil {
					return err
				}
				sig := make([]fr.Element, len(ks.ckK[i]))
				for j := range sig {
					sig[j].Mul(&ks.ckK[i][j], &tw.CommitmentSigma[i])
				}
				exp, err := g1("commitment", sig)
				if err != nil {
					return err
				}
				pk.CommitmentKeys[i] = pedersen.ProvingKey{Basis: basis, BasisExpSigma: exp}
				vk.CommitmentKeys[i] = pedersenVerifyingKey(cG2, &tw.CommitmentSigma[i])
			}
			return cctx.Err()
		}()
		endSpan(span, err)
		if err != nil {
			return nil, nil, err
		}
	}
	vk.PublicAndCommitmentCommitted = info.GetPublicAndCommitmentCommitted(info.CommitmentIndexes(), r1cs.GetNbPublicVariables())

	if pk.G2.B, err = g2("b", ks.B); err != nil {
		return nil, nil, err
	}
	ks.B = nil
	bdg, err := g2("beta_delta_gamma", []fr.Element{tw.Beta, tw.Delta, tw.Gamma})
	if err != nil {
		return nil, nil, err
	}
	pk.G2.Beta, pk.G2.Delta = bdg[0], bdg[1]
	vk.G2.Beta, vk.G2.Delta, vk.G2.Gamma = bdg[0], bdg[1], bdg[2]
	vk.G1.Alpha, vk.G1.Beta, vk.G1.Delta = pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta

	_, span = tracer.Start(ctx, semconv.SpanSetupVerifyingKey)
	err = vk.Precompute()
	endSpan(span, err)
	if err != nil {
		return nil, nil, fmt.Errorf("setup: verifying key: %w", err)
	}
	pk.Domain = *domain
	return pk, vk, nil
}

// asR1CS returns ccs as gnark's BLS12-381 R1CS, or an error wrapping
// ErrUnsupported.
func asR1CS(ccs constraint.ConstraintSystem) (*cs.R1CS, error) {
	if ccs == nil {
		return nil, fmt.Errorf("setup: %w: only BLS12-381 R1CS constraint systems (nil constraint system)", ErrUnsupported)
	}
	if ccs.Field().Cmp(ecc.BLS12_381.ScalarField()) != 0 {
		return nil, fmt.Errorf("setup: %w: only BLS12-381 R1CS constraint systems (field of %d bits)", ErrUnsupported, ccs.Field().BitLen())
	}
	r, ok := ccs.(*cs.R1CS)
	if !ok || r.Type != constraint.SystemR1CS {
		return nil, fmt.Errorf("setup: %w: only BLS12-381 R1CS constraint systems (%T, not an R1CS)", ErrUnsupported, ccs)
	}
	if _, ok := r.CommitmentInfo.(constraint.Groth16Commitments); !ok {
		return nil, fmt.Errorf("setup: %w: only BLS12-381 R1CS constraint systems (commitments %T, not Groth16's)", ErrUnsupported, r.CommitmentInfo)
	}
	return r, nil
}

// commitmentG2 is the Pedersen keys' G2 point [s]₂.
func commitmentG2(tw *ToxicWaste) curve.G2Affine {
	_, _, _, g2 := curve.Generators()
	var p curve.G2Affine
	var b big.Int
	p.ScalarMultiplication(&g2, tw.CommitmentG2.BigInt(&b))
	return p
}

// pedersenVerifyingKey is gnark-crypto's pedersen.Setup verifying key for
// G and σ: G, and GSigmaNeg = −σ·G.
func pedersenVerifyingKey(g curve.G2Affine, sigma *fr.Element) pedersen.VerifyingKey {
	var s big.Int
	sigma.BigInt(&s)
	s.Neg(&s)
	vk := pedersen.VerifyingKey{G: g}
	vk.GSigmaNeg.ScalarMultiplication(&vk.G, &s)
	return vk
}

// fixedBase is what the fixed-base multiplications of one Setup share:
// its tracer, the cuzk.setup.backend attribute and the constraint count
// their errors name.
type fixedBase struct {
	tracer      trace.Tracer
	backend     attribute.KeyValue
	constraints int
}

// mulFixedBase returns [scalars]₁ or [scalars]₂ (group "₁" or "₂") of the
// key vector named vector by mul (Multiplier.MulG1 or MulG2), under a span
// named span; ctx's error first, mul's error wrapped with the vector, the
// group and the counts.
func mulFixedBase[P any](ctx context.Context, f fixedBase, span, group, vector string, scalars []fr.Element,
	mul func(context.Context, []fr.Element, []P) error) ([]P, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, sp := f.tracer.Start(ctx, span, trace.WithAttributes(
		semconv.KeySetupVector.String(vector), semconv.KeySetupPoints.Int(len(scalars)), f.backend))
	out := make([]P, len(scalars))
	err := mul(c, scalars, out)
	endSpan(sp, err)
	if err != nil {
		return nil, fmt.Errorf("setup of %d constraints: [%s]%s (%d points): %w", f.constraints, vector, group, len(scalars), err)
	}
	return out, nil
}

func endSpan(span trace.Span, err error) {
	semconv.SetError(span, err)
	span.End()
}
