package setup

import (
	"context"
	"fmt"
	"math/big"
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/otelcuzk/otelcuzk/internal/parallel"
)

// keyScalars are the scalars of every key vector, in the order and the
// filtering of gnark's setup: what a Multiplier turns into points.
type keyScalars struct {
	A, B       []fr.Element // A(τ), B(τ) of the wires whose value is not zero
	infA, infB []bool       // per wire: A(τ) (B(τ)) is zero, its point left out
	Z          []fr.Element // (τⁿ−1)/δ·τⁱ, bit-reversed, the first n−1
	vkK, pkK   []fr.Element // K of the public and commitment wires (÷γ), of the private ones (÷δ)
	ckK        [][]fr.Element
}

// evalChunk is the instructions (or domain points) one goroutine takes at
// a time in the evaluation.
const evalChunk = 1 << 14

// lockStripes is the number of mutexes guarding the per-wire sums, by
// wire index: constraints evaluated in parallel add into the same wires.
const lockStripes = 1 << 12

// lagrange returns Lⱼ(τ) for j < m, the Lagrange basis polynomials of the
// domain d (size n, generator ω) at τ: Lⱼ(τ) = (τⁿ − 1)/n · ωʲ/(τ − ωʲ),
// each chunk with one batch inversion. gnark's setupABC computes the same
// values by the recurrence Lⱼ₊₁ = ω·Lⱼ·(τ − ωʲ)/(τ − ωʲ⁺¹); field
// arithmetic is exact, so the elements are identical.
func lagrange(m int, d *fft.Domain, tau fr.Element) []fr.Element {
	L := make([]fr.Element, m)
	var c, one fr.Element
	one.SetOne()
	c.Exp(tau, new(big.Int).SetUint64(d.Cardinality))
	c.Sub(&c, &one).Mul(&c, &d.CardinalityInv)
	chunks := (m + evalChunk - 1) / evalChunk
	parallel.For(chunks, func(ci int) {
		lo, hi := ci*evalChunk, min((ci+1)*evalChunk, m)
		var wj fr.Element
		wj.Exp(d.Generator, big.NewInt(int64(lo)))
		den := make([]fr.Element, hi-lo)
		for j := lo; j < hi; j++ {
			L[j] = wj
			den[j-lo].Sub(&tau, &wj)
			wj.Mul(&wj, &d.Generator)
		}
		inv := fr.BatchInvert(den)
		for j := lo; j < hi; j++ {
			L[j].Mul(&L[j], &inv[j-lo]).Mul(&L[j], &c)
		}
	})
	return L
}

// evaluateABC returns A(τ), B(τ) and C(τ) per wire: Σⱼ coeff·Lⱼ(τ) over
// the constraints j in which the wire appears in L, R or O, with
// gnark's special coefficients (0, 1, −1, 2) as gnark's setupABC treats
// them. The constraints are read in parallel (gnark reads them in one
// loop): field addition commutes, so the sums are the same elements.
func evaluateABC(ctx context.Context, r1cs *cs.R1CS, d *fft.Domain, tau fr.Element) (A, B, C []fr.Element, err error) {
	nbWires := r1cs.NbInternalVariables + r1cs.GetNbPublicVariables() + r1cs.GetNbSecretVariables()
	m := r1cs.GetNbConstraints()
	sys := &r1cs.System
	isR1C := make([]bool, len(sys.Blueprints))
	for i, b := range sys.Blueprints {
		_, isR1C[i] = b.(constraint.BlueprintR1C)
	}
	insts := sys.Instructions
	chunks := (len(insts) + evalChunk - 1) / evalChunk
	// The constraint index of each chunk's first R1C, as gnark's iterator
	// would number it.
	first := make([]int, chunks+1)
	parallel.For(chunks, func(ci int) {
		n := 0
		for _, in := range insts[ci*evalChunk : min((ci+1)*evalChunk, len(insts))] {
			if isR1C[in.BlueprintID] {
				n++
			}
		}
		first[ci+1] = n
	})
	for i := 1; i <= chunks; i++ {
		first[i] += first[i-1]
	}
	if first[chunks] != m {
		return nil, nil, nil, fmt.Errorf("setup: %d R1C instructions for %d constraints", first[chunks], m)
	}
	L := lagrange(m, d, tau)
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	A, B, C = make([]fr.Element, nbWires), make([]fr.Element, nbWires), make([]fr.Element, nbWires)
	var locks [lockStripes]sync.Mutex
	coeffs := r1cs.Coefficients
	add := func(dst []fr.Element, terms constraint.LinearExpression, l *fr.Element) {
		for _, t := range terms {
			w := t.WireID()
			mu := &locks[w%lockStripes]
			mu.Lock()
			addTerm(&dst[w], coeffs, t, l)
			mu.Unlock()
		}
	}
	parallel.For(chunks, func(ci int) {
		if ctx.Err() != nil {
			return
		}
		var c constraint.R1C
		j := first[ci]
		for _, in := range insts[ci*evalChunk : min((ci+1)*evalChunk, len(insts))] {
			if !isR1C[in.BlueprintID] {
				continue
			}
			sys.Blueprints[in.BlueprintID].(constraint.BlueprintR1C).DecompressR1C(&c, in.Unpack(sys))
			add(A, c.L, &L[j])
			add(B, c.R, &L[j])
			add(C, c.O, &L[j])
			j++
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	return A, B, C, nil
}

// kDest says where wire i's K scalar goes: kind 0 the proving key's K,
// 1 the verifying key's, 2 commitment kind-2's bases (commitment index in
// com), at index idx of that vector.
type kDest struct {
	kind uint8
	com  int32
	idx  int32
}

// keyScalarsOf computes every key vector's scalars from A, B, C (consumed:
// A and B are filtered in place, C is dropped) as gnark's Setup does.
func keyScalarsOf(r1cs *cs.R1CS, d *fft.Domain, tw *ToxicWaste, A, B, C []fr.Element) (*keyScalars, error) {
	nbPublic := r1cs.GetNbPublicVariables()
	info, ok := r1cs.CommitmentInfo.(constraint.Groth16Commitments)
	if !ok {
		return nil, fmt.Errorf("setup: commitment info %T is not Groth16's", r1cs.CommitmentInfo)
	}
	commitmentWires := info.CommitmentIndexes()
	privateCommitted := info.GetPrivateCommitted()
	nbPrivateCommitted := 0
	for _, p := range privateCommitted {
		nbPrivateCommitted += len(p)
	}
	nbWires := len(A)
	nbPublicWires := nbPublic + len(info)
	nbPrivateWires := r1cs.GetNbSecretVariables() + r1cs.NbInternalVariables - nbPrivateCommitted - len(info)

	// Where each wire's K goes: the walk of gnark's loop, without its
	// field arithmetic, which runs in parallel below.
	dest := make([]kDest, nbWires)
	it := newMergeIterator(privateCommitted)
	vI, nbPrivateCommittedSeen, nbCommitmentsSeen := 0, 0, 0
	ckLen := make([]int, len(info))
	for i := range dest {
		ci := it.indexIfNext(i)
		isCommitment, isPublic := false, i < nbPublic
		if !isPublic && nbCommitmentsSeen < len(commitmentWires) && commitmentWires[nbCommitmentsSeen] == i {
			isCommitment = true
			nbCommitmentsSeen++
		}
		switch {
		case isPublic || isCommitment:
			dest[i] = kDest{kind: 1, idx: int32(vI)}
			vI++
		case ci != -1:
			dest[i] = kDest{kind: 2, com: int32(ci), idx: int32(ckLen[ci])}
			ckLen[ci]++
			nbPrivateCommittedSeen++
		default:
			dest[i] = kDest{kind: 0, idx: int32(i - vI - nbPrivateCommittedSeen)}
		}
	}
	if vI != nbPublicWires {
		return nil, fmt.Errorf("setup: %d public and commitment wires, want %d", vI, nbPublicWires)
	}
	ks := &keyScalars{
		vkK: make([]fr.Element, nbPublicWires),
		pkK: make([]fr.Element, nbPrivateWires),
		ckK: make([][]fr.Element, len(info)),
	}
	for i := range ks.ckK {
		ks.ckK[i] = make([]fr.Element, ckLen[i])
	}
	chunks := (nbWires + evalChunk - 1) / evalChunk
	parallel.For(chunks, func(ci int) {
		for i := ci * evalChunk; i < min((ci+1)*evalChunk, nbWires); i++ {
			var t0, t1 fr.Element
			t1.Mul(&A[i], &tw.Beta)
			t0.Mul(&B[i], &tw.Alpha)
			t1.Add(&t1, &t0).Add(&t1, &C[i])
			switch dd := dest[i]; dd.kind {
			case 0:
				ks.pkK[dd.idx].Mul(&t1, &tw.deltaInv)
			case 1:
				ks.vkK[dd.idx].Mul(&t1, &tw.gammaInv)
			default:
				ks.ckK[dd.com][dd.idx].Mul(&t1, &tw.gammaInv)
			}
		}
	})

	// Z: (τⁿ − 1)/δ · τⁱ for i < n; gnark bit-reverses the points and keeps
	// the first n − 1, the same as bit-reversing the scalars.
	n := int(d.Cardinality)
	var zdt, one fr.Element
	one.SetOne()
	zdt.Exp(tw.T, new(big.Int).SetUint64(d.Cardinality)).Sub(&zdt, &one).Mul(&zdt, &tw.deltaInv)
	Z := make([]fr.Element, n)
	zc := (n + evalChunk - 1) / evalChunk
	parallel.For(zc, func(ci int) {
		lo, hi := ci*evalChunk, min((ci+1)*evalChunk, n)
		var z fr.Element
		z.Exp(tw.T, big.NewInt(int64(lo)))
		z.Mul(&z, &zdt)
		for i := lo; i < hi; i++ {
			Z[i] = z
			z.Mul(&z, &tw.T)
		}
	})
	fft.BitReverse(Z)
	ks.Z = Z[:n-1]

	ks.A, ks.infA = filterZero(A)
	ks.B, ks.infB = filterZero(B)
	runtime.KeepAlive(C)
	return ks, nil
}

// filterZero moves the non-zero elements of v to its front, in order, and
// returns them with the mask of the zero ones (gnark's InfinityA/B).
func filterZero(v []fr.Element) ([]fr.Element, []bool) {
	inf := make([]bool, len(v))
	n := 0
	for i := range v {
		if v[i].IsZero() {
			inf[i] = true
			continue
		}
		v[n] = v[i]
		n++
	}
	return v[:n], inf
}

// mergeIterator walks the union of sorted lists of wire indices, saying
// for each wire asked in increasing order which list holds it next (the
// merge gnark's setup uses over the commitments' private wires).
type mergeIterator struct {
	lists [][]int
}

func newMergeIterator(lists [][]int) *mergeIterator {
	c := make([][]int, len(lists))
	copy(c, lists)
	return &mergeIterator{lists: c}
}

// indexIfNext returns the list whose least next element is v (the first
// such list), advancing it, or −1 when the least next element is not v.
func (it *mergeIterator) indexIfNext(v int) int {
	best, at := 0, -1
	for j, l := range it.lists {
		if len(l) > 0 && (at == -1 || l[0] < best) {
			best, at = l[0], j
		}
	}
	if at == -1 || best != v {
		return -1
	}
	it.lists[at] = it.lists[at][1:]
	return at
}

// addTerm adds the term t's coefficient (of coeffs, the R1CS's
// coefficient table; gnark's small ids 0, 1, -1 and 2 without a
// multiplication) times value to res: one term of a constraint's
// linear combination evaluated at τ, as gnark's setup does.
func addTerm(res *fr.Element, coeffs []fr.Element, t constraint.Term, value *fr.Element) {
	switch cID := t.CoeffID(); cID {
	case constraint.CoeffIdZero:
	case constraint.CoeffIdOne:
		res.Add(res, value)
	case constraint.CoeffIdMinusOne:
		res.Sub(res, value)
	case constraint.CoeffIdTwo:
		var b fr.Element
		b.Double(value)
		res.Add(res, &b)
	default:
		var b fr.Element
		b.Mul(&coeffs[cID], value)
		res.Add(res, &b)
	}
}
