package groth16

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/hash_to_field"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/pedersen"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/constraint/solver"
	fcs "github.com/consensys/gnark/frontend/cs"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// The commitment extension of gnark's Groth16 (BSB22: Ràfols and Zapico's
// commit-and-prove, eprint 2022/1072, as gnark v0.14's
// backend/groth16/bls12-381 prove.go, setup.go and verify.go do it):
//
//   - in the solve, gnark's commitment hint (Bsb22CommitmentComputePlaceholder)
//     is overridden: commitment i is Dᵢ = Σⱼ vⱼ·[Basisᵢⱼ]₁ over its private
//     committed wires vⱼ (msm.g1.commitment, on the CPU), and the hint's
//     output, the commitment wire, is hash_to_field(Dᵢ ‖ public and
//     commitment committed values) with gnark's domain constraint.CommitmentDst;
//   - after the solve, the proof of knowledge of each commitment is
//     Πᵢ = Σⱼ vⱼ·[σ·Basisᵢⱼ]₁ (msm.g1.commitment_pok, on the backend), and
//     the proof carries the fold Σᵢ cⁱ·Πᵢ with c = fr.Hash(commitment wires,
//     "G16-BSB22");
//   - the K MSM leaves out the private committed wires and the commitment
//     wires: their [K]₁ bases went into the commitment keys and the
//     verifying key at setup.

// commitKeys is what synthesis needs of a proving key for a circuit with
// commitments: the key's Pedersen commitment keys, the tracer of the
// msm.g1.commitment spans, and the commitments' mask under WithRandomness.
type commitKeys struct {
	keys   []pedersen.ProvingKey
	tracer trace.Tracer
	mask   *fr.Element
}

// commitKeysOf returns the commitment part of pk (nil pk or a key of
// another curve: no keys; synthesis then refuses a circuit with
// commitments with ErrKeyMismatch) with cfg's tracer. Under
// WithRandomness the random mask gnark's api.Commit adds to each
// commitment (its Randomize hint) is fixed too, to fr.Hash(r ‖ s), so that
// the promise of WithRandomness (same witness, key, r and s: same proof on
// every backend) holds for circuits with commitments.
func commitKeysOf(pk gnarkgroth16.ProvingKey, cfg *config) *commitKeys {
	ck := &commitKeys{tracer: cfg.tracer()}
	if gpk, ok := pk.(*groth16_bls12381.ProvingKey); ok && gpk != nil {
		ck.keys = gpk.CommitmentKeys
	}
	if cfg.r != nil {
		rb, sb := cfg.r.Bytes(), cfg.s.Bytes()
		if m, err := fr.Hash(append(rb[:], sb[:]...), []byte("otelcuzk commitment mask"), 1); err == nil {
			ck.mask = &m[0]
		}
	}
	return ck
}

// randomizeHintName is the name of gnark's hint that draws the mask of a
// commitment (internal/hints.Randomize, not importable): its ID is found
// among the registered hints by name.
const randomizeHintName = "github.com/consensys/gnark/internal/hints.Randomize"

// fixedMaskOption returns the solver option that makes gnark's Randomize
// hint output mask, or nil when no registered hint has its name (another
// gnark version: the masks stay random).
func fixedMaskOption(mask fr.Element) solver.Option {
	for _, h := range solver.GetRegisteredHints() {
		if solver.GetHintName(h) != randomizeHintName {
			continue
		}
		return solver.OverrideHint(solver.GetHintID(h), func(_ *big.Int, in []*big.Int, out []*big.Int) error {
			for i := range out {
				mask.BigInt(out[i])
			}
			return nil
		})
	}
	return nil
}

// commitState is what the solve leaves for the prover of a circuit with
// commitments: the commitments Dᵢ and the private committed values of
// each, in the order of the commitment keys' bases.
type commitState struct {
	info        constraint.Groth16Commitments
	commitments []curve.G1Affine
	committed   [][]fr.Element
	// firstBases are each commitment key's first basis point, to tell at
	// prove time a key other than the one the commitments were made with.
	firstBases []curve.G1Affine

	mu  sync.Mutex
	err error // the first error of a hint call (key mismatch)
}

// newCommitState checks that ck has one key per commitment of info.
func newCommitState(info constraint.Groth16Commitments, ck *commitKeys) (*commitState, error) {
	nbKeys := 0
	if ck != nil {
		nbKeys = len(ck.keys)
	}
	if nbKeys != len(info) {
		return nil, fmt.Errorf("%w: the circuit has %d commitments (api.Commit), the proving key %d commitment keys (synthesis needs the circuit's proving key: WithProvingKey)",
			ErrKeyMismatch, len(info), nbKeys)
	}
	for i := range info {
		if n, m := len(info[i].PrivateCommitted), len(ck.keys[i].Basis); n != m || len(ck.keys[i].BasisExpSigma) != m {
			return nil, fmt.Errorf("%w: commitment %d commits to %d private wires, its key has %d bases", ErrKeyMismatch, i, n, m)
		}
	}
	st := &commitState{
		info:        info,
		commitments: make([]curve.G1Affine, len(info)),
		committed:   make([][]fr.Element, len(info)),
		firstBases:  make([]curve.G1Affine, len(info)),
	}
	for i := range info {
		if len(ck.keys[i].Basis) > 0 {
			st.firstBases[i] = ck.keys[i].Basis[0]
		}
	}
	return st, nil
}

// checkKey checks that pk's commitment keys are the ones the commitments
// were made with (their first basis points): with another key of the same
// circuit the proof would not verify.
func (st *commitState) checkKey(pk *groth16_bls12381.ProvingKey) error {
	for i := range st.info {
		if b := pk.CommitmentKeys[i].Basis; len(b) > 0 && !b[0].Equal(&st.firstBases[i]) {
			return fmt.Errorf("%w: the assignment's commitment %d was made with another proving key (Synthesize's WithProvingKey)", ErrKeyMismatch, i)
		}
	}
	return nil
}

func (st *commitState) fail(err error) error {
	st.mu.Lock()
	if st.err == nil {
		st.err = err
	}
	st.mu.Unlock()
	return err
}

// solverOption overrides gnark's commitment hint: the hint's input is the
// commitment's index, then its public and commitment committed values
// (hashed, not committed), then its private committed values; its one
// output is the commitment wire. Commitments of one solve may run
// concurrently (each writes its own slot of st).
func (st *commitState) solverOption(ctx context.Context, ck *commitKeys) solver.Option {
	id := solver.GetHintID(fcs.Bsb22CommitmentComputePlaceholder)
	return solver.OverrideHint(id, func(_ *big.Int, in []*big.Int, out []*big.Int) error {
		if len(in) == 0 || len(out) != 1 || !in[0].IsInt64() {
			return st.fail(errors.New("commitment hint: malformed call"))
		}
		i := int(in[0].Int64())
		if i < 0 || i >= len(st.info) {
			return st.fail(fmt.Errorf("commitment hint: commitment %d of %d", i, len(st.info)))
		}
		in = in[1:]
		nbHashed := len(st.info[i].PublicAndCommitmentCommitted)
		if len(in) != nbHashed+len(ck.keys[i].Basis) {
			return st.fail(fmt.Errorf("%w: commitment %d has %d committed values, its key %d bases",
				ErrKeyMismatch, i, len(in)-nbHashed, len(ck.keys[i].Basis)))
		}
		hashed, committed := in[:nbHashed], in[nbHashed:]
		vals := make([]fr.Element, len(committed))
		for j, v := range committed {
			vals[j].SetBigInt(v)
		}
		com, err := commitMSM(ctx, ck.tracer, i, ck.keys[i].Basis, vals)
		if err != nil {
			return st.fail(fmt.Errorf("commitment %d: %w", i, err))
		}
		st.commitments[i], st.committed[i] = com, vals
		res := commitmentChallenge(&com, hashed)
		res.BigInt(out[0])
		return nil
	})
}

// commitMSM is Σ vals[j]·basis[j] on the CPU (all cores), as one
// msm.g1.commitment span under the span in ctx.
func commitMSM(ctx context.Context, tr trace.Tracer, index int, basis []curve.G1Affine, vals []fr.Element) (curve.G1Affine, error) {
	_, span := tr.Start(ctx, semconv.SpanMSMG1Commitment, trace.WithAttributes(
		semconv.KeyCommitmentIndex.Int(index), semconv.KeyMSMSize.Int(len(vals))))
	defer span.End()
	var com curve.G1Affine
	if len(vals) == 0 {
		return com, nil // the point at infinity, as gnark's MultiExp of nothing
	}
	if _, err := com.MultiExp(basis, vals, ecc.MultiExpConfig{}); err != nil {
		semconv.SetError(span, err)
		return com, err
	}
	return com, nil
}

// commitmentChallenge is the commitment wire's value: gnark's
// hash_to_field (RFC 9380 expand_message_xmd with SHA-256, domain
// constraint.CommitmentDst) of the uncompressed commitment and the
// hashed values, each as fr.Bytes big-endian bytes; the verifier
// recomputes it from the proof and the public witness.
func commitmentChallenge(com *curve.G1Affine, hashed []*big.Int) fr.Element {
	h := hash_to_field.New([]byte(constraint.CommitmentDst))
	h.Write(constraint.SerializeCommitment(com.Marshal(), hashed, (fr.Bits-1)/8+1))
	sum := h.Sum(nil)
	n := fr.Bytes
	if h.Size() < n {
		n = h.Size()
	}
	var res fr.Element
	res.SetBytes(sum[:n])
	return res
}

// foldChallenge is the folding coefficient of the proofs of knowledge:
// fr.Hash of the commitment wires' values ("G16-BSB22"), as gnark's prover
// and verifier compute it.
func foldChallenge(info constraint.Groth16Commitments, wires []fr.Element) (fr.Element, error) {
	buf := make([]byte, fr.Bytes*len(info))
	for i := range info {
		b := wires[info[i].CommitmentIndex].Bytes()
		copy(buf[fr.Bytes*i:], b[:])
	}
	c, err := fr.Hash(buf, []byte("G16-BSB22"), 1)
	if err != nil {
		return fr.Element{}, fmt.Errorf("commitment fold challenge: %w", err)
	}
	return c[0], nil
}

// foldPoks is Σᵢ cⁱ·poks[i] in affine form.
func foldPoks(poks []curve.G1Jac, c fr.Element) curve.G1Affine {
	var acc curve.G1Jac
	var b big.Int
	for i := len(poks) - 1; i >= 0; i-- { // Horner: ((Π_{n−1})·c + Π_{n−2})·c + …
		if i < len(poks)-1 {
			acc.ScalarMultiplication(&acc, c.BigInt(&b))
		}
		acc.AddAssign(&poks[i])
	}
	var out curve.G1Affine
	out.FromJacobian(&acc)
	return out
}

// kExcluded returns the wire indexes the K MSM leaves out: every private
// committed wire and every commitment wire, sorted, without duplicates (a
// wire may be committed by several commitments).
func kExcluded(info constraint.Groth16Commitments) []int {
	var out []int
	for i := range info {
		out = append(out, info[i].PrivateCommitted...)
		out = append(out, info[i].CommitmentIndex)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pok is the proof of knowledge of commitment i, Σⱼ vⱼ·[σ·Basisᵢⱼ]₁, on
// the backend (msm.g1.commitment_pok); the private committed values go
// with the MSM.
func (p *proving) pok(ctx context.Context, pk *groth16_bls12381.ProvingKey, i int, baseID string) (curve.G1Jac, error) {
	vals := p.asg.com.committed[i]
	bases := pk.CommitmentKeys[i].BasisExpSigma
	if len(vals) != len(bases) {
		return curve.G1Jac{}, fmt.Errorf("%w: commitment %d of %d values, its key has %d bases", ErrKeyMismatch, i, len(vals), len(bases))
	}
	if len(vals) == 0 {
		var inf curve.G1Jac
		return *inf.FromAffine(&curve.G1Affine{}), nil // the point at infinity
	}
	return p.backend.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1CommitmentPok, KeyID: p.cfg.keyID}, backend.BaseSet[curve.G1Affine]{ID: baseID, Points: bases}, vals)
}

// kWires returns the scalars of the K MSM: the wires from nbPublic on,
// less the wire indexes in excluded (sorted, unique), copied into a new
// mmap'd buffer; without exclusions, wires[nbPublic:] itself and no buffer.
func kWires(rel *buffer.Releaser, wires []fr.Element, nbPublic int, excluded []int) (*buffer.Mmap, []fr.Element, error) {
	if len(excluded) == 0 {
		return nil, wires[nbPublic:], nil
	}
	if excluded[0] < nbPublic || excluded[len(excluded)-1] >= len(wires) {
		return nil, nil, fmt.Errorf("%w: committed wires %d to %d, assignment of %d wires with %d public",
			ErrKeyMismatch, excluded[0], excluded[len(excluded)-1], len(wires), nbPublic)
	}
	n := len(wires) - nbPublic - len(excluded)
	if n <= 0 {
		return nil, nil, nil
	}
	hb, out, _, err := newFrBuffer(rel, n)
	if err != nil {
		return nil, nil, err
	}
	j, prev := 0, nbPublic
	for _, x := range excluded {
		j += copy(out[j:], wires[prev:x])
		prev = x + 1
	}
	copy(out[j:], wires[prev:])
	return hb, out, nil
}
