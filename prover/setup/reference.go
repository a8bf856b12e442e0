package setup

import (
	"errors"
	"math/big"
	"math/bits"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/pedersen"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// Reference makes the keys of ccs from tw by gnark's own algorithm
// (backend/groth16/bls12-381/setup.go of gnark v0.14, followed step by
// step): one sequential pass over the constraints with the recurrence of
// the Lagrange values, the scalars of every G1 vector in one
// BatchScalarMultiplicationG1 and of G2 in one
// BatchScalarMultiplicationG2, the Z points bit-reversed, and the
// Pedersen keys as gnark-crypto's pedersen.Setup makes them, with [s]₂
// and σ from tw instead of fresh randomness. It is the yardstick of
// Setup: for the same tw their keys are byte-identical. Single-threaded
// where gnark is (hours at 2^24); for tests. Errors: ErrUnsupported,
// ErrToxicWaste.
func Reference(ccs constraint.ConstraintSystem, tw ToxicWaste) (*groth16_bls12381.ProvingKey, *groth16_bls12381.VerifyingKey, error) {
	r1cs, err := asR1CS(ccs)
	if err != nil {
		return nil, nil, err
	}
	pk, vk := new(groth16_bls12381.ProvingKey), new(groth16_bls12381.VerifyingKey)
	nbWires := r1cs.NbInternalVariables + r1cs.GetNbPublicVariables() + r1cs.GetNbSecretVariables()

	commitmentInfo := r1cs.CommitmentInfo.(constraint.Groth16Commitments)
	commitmentWires := commitmentInfo.CommitmentIndexes()
	privateCommitted := commitmentInfo.GetPrivateCommitted()
	nbPrivateCommittedWires := 0
	for _, p := range privateCommitted {
		nbPrivateCommittedWires += len(p)
	}
	nbPublicWires := r1cs.GetNbPublicVariables() + len(commitmentInfo)
	nbPrivateWires := r1cs.GetNbSecretVariables() + r1cs.NbInternalVariables - nbPrivateCommittedWires - len(commitmentInfo)

	domain := fft.NewDomain(uint64(r1cs.GetNbConstraints()))
	tw.CommitmentSigma = append([]fr.Element(nil), tw.CommitmentSigma...)
	if err := tw.check(domain.Cardinality, len(commitmentInfo)); err != nil {
		return nil, nil, err
	}

	A, B, C := referenceABC(r1cs, domain, &tw)
	_, _, g1, g2 := curve.Generators()

	pkK := make([]fr.Element, nbPrivateWires)
	vkK := make([]fr.Element, nbPublicWires)
	ckK := make([][]fr.Element, len(commitmentInfo))
	for i := range commitmentInfo {
		ckK[i] = make([]fr.Element, 0, len(privateCommitted[i]))
	}
	var t0, t1 fr.Element
	computeK := func(i int, coeff *fr.Element) {
		t1.Mul(&A[i], &tw.Beta)
		t0.Mul(&B[i], &tw.Alpha)
		t1.Add(&t1, &t0).Add(&t1, &C[i]).Mul(&t1, coeff)
	}
	vI := 0
	committedIterator := newMergeIterator(privateCommitted)
	nbPrivateCommittedSeen := 0
	nbCommitmentsSeen := 0
	for i := range A {
		commitmentIndex := committedIterator.indexIfNext(i)
		isCommitment, isPublic := false, i < r1cs.GetNbPublicVariables()
		if !isPublic {
			if nbCommitmentsSeen < len(commitmentWires) && commitmentWires[nbCommitmentsSeen] == i {
				isCommitment = true
				nbCommitmentsSeen++
			}
		}
		if isPublic || isCommitment || commitmentIndex != -1 {
			computeK(i, &tw.gammaInv)
			if isPublic || isCommitment {
				vkK[vI] = t1
				vI++
			} else {
				ckK[commitmentIndex] = append(ckK[commitmentIndex], t1)
				nbPrivateCommittedSeen++
			}
		} else {
			computeK(i, &tw.deltaInv)
			pkK[i-vI-nbPrivateCommittedSeen] = t1
		}
	}

	Z := make([]fr.Element, domain.Cardinality)
	one := fr.One()
	var zdt fr.Element
	zdt.Exp(tw.T, new(big.Int).SetUint64(domain.Cardinality)).Sub(&zdt, &one).Mul(&zdt, &tw.deltaInv)
	for i := 0; i < int(domain.Cardinality); i++ {
		Z[i] = zdt
		zdt.Mul(&zdt, &tw.T)
	}

	A, pk.InfinityA = filterZero(A)
	pk.NbInfinityA = uint64(nbWires - len(A))
	B, pk.InfinityB = filterZero(B)
	pk.NbInfinityB = uint64(nbWires - len(B))

	g1Scalars := make([]fr.Element, 0, (nbWires*3)+int(domain.Cardinality)+3)
	g1Scalars = append(g1Scalars, tw.Alpha, tw.Beta, tw.Delta)
	g1Scalars = append(g1Scalars, A...)
	g1Scalars = append(g1Scalars, B...)
	g1Scalars = append(g1Scalars, Z...)
	g1Scalars = append(g1Scalars, vkK...)
	g1Scalars = append(g1Scalars, pkK...)
	for i := range ckK {
		g1Scalars = append(g1Scalars, ckK[i]...)
	}
	g1PointsAff := curve.BatchScalarMultiplicationG1(&g1, g1Scalars)

	pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta = g1PointsAff[0], g1PointsAff[1], g1PointsAff[2]
	offset := 3
	pk.G1.A = g1PointsAff[offset : offset+len(A)]
	offset += len(A)
	pk.G1.B = g1PointsAff[offset : offset+len(B)]
	offset += len(B)
	bitReverseG1(g1PointsAff[offset : offset+int(domain.Cardinality)])
	pk.G1.Z = g1PointsAff[offset : offset+int(domain.Cardinality)-1]
	offset += int(domain.Cardinality)
	vk.G1.K = g1PointsAff[offset : offset+nbPublicWires]
	offset += nbPublicWires
	pk.G1.K = g1PointsAff[offset : offset+nbPrivateWires]
	offset += nbPrivateWires
	commitmentBases := make([][]curve.G1Affine, len(commitmentInfo))
	for i := range commitmentBases {
		size := len(ckK[i])
		commitmentBases[i] = g1PointsAff[offset : offset+size]
		offset += size
	}
	if offset != len(g1PointsAff) {
		return nil, nil, errors.New("setup: reference: didn't consume all G1 points")
	}

	cG2 := commitmentG2(&tw)
	if len(commitmentBases) > 0 {
		pk.CommitmentKeys = make([]pedersen.ProvingKey, len(commitmentBases))
		vk.CommitmentKeys = make([]pedersen.VerifyingKey, len(commitmentBases))
	}
	for i := range commitmentBases {
		pk.CommitmentKeys[i], vk.CommitmentKeys[i] = pedersenSetup(commitmentBases[i], cG2, &tw.CommitmentSigma[i])
	}
	vk.PublicAndCommitmentCommitted = commitmentInfo.GetPublicAndCommitmentCommitted(commitmentWires, r1cs.GetNbPublicVariables())

	g2Scalars := append(B, tw.Beta, tw.Delta, tw.Gamma)
	g2PointsAff := curve.BatchScalarMultiplicationG2(&g2, g2Scalars)
	pk.G2.B = g2PointsAff[:len(B)]
	pk.G2.Beta = g2PointsAff[len(B)+0]
	pk.G2.Delta = g2PointsAff[len(B)+1]
	vk.G2.Delta = g2PointsAff[len(B)+1]
	vk.G2.Gamma = g2PointsAff[len(B)+2]

	vk.G1.Alpha = pk.G1.Alpha
	vk.G2.Beta = pk.G2.Beta
	vk.G1.Beta = pk.G1.Beta
	vk.G1.Delta = pk.G1.Delta
	if err := vk.Precompute(); err != nil {
		return nil, nil, err
	}
	pk.Domain = *domain
	return pk, vk, nil
}

// pedersenSetup is gnark-crypto's pedersen.Setup of one basis with the G2
// point g and σ given.
func pedersenSetup(basis []curve.G1Affine, g curve.G2Affine, sigma *fr.Element) (pedersen.ProvingKey, pedersen.VerifyingKey) {
	var s big.Int
	sigma.BigInt(&s)
	pk := pedersen.ProvingKey{Basis: basis, BasisExpSigma: make([]curve.G1Affine, len(basis))}
	for j := range basis {
		pk.BasisExpSigma[j].ScalarMultiplication(&basis[j], &s)
	}
	return pk, pedersenVerifyingKey(g, sigma)
}

// referenceABC is gnark's setupABC with τ from tw.
func referenceABC(r1cs *cs.R1CS, domain *fft.Domain, tw *ToxicWaste) (A, B, C []fr.Element) {
	nbWires := r1cs.NbInternalVariables + r1cs.GetNbPublicVariables() + r1cs.GetNbSecretVariables()
	A, B, C = make([]fr.Element, nbWires), make([]fr.Element, nbWires), make([]fr.Element, nbWires)
	one := fr.One()
	var w fr.Element
	w.Set(&domain.Generator)
	wi := fr.One()
	t := make([]fr.Element, r1cs.GetNbConstraints()+1)
	for i := range t {
		t[i].Sub(&tw.T, &wi)
		wi.Mul(&wi, &w)
	}
	tInv := fr.BatchInvert(t)
	var L fr.Element
	L.Exp(tw.T, new(big.Int).SetUint64(domain.Cardinality)).Sub(&L, &one)
	L.Mul(&L, &tInv[0]).Mul(&L, &domain.CardinalityInv)
	j := 0
	it := r1cs.GetR1CIterator()
	for c := it.Next(); c != nil; c = it.Next() {
		for _, t := range c.L {
			addTerm(&A[t.WireID()], r1cs.Coefficients, t, &L)
		}
		for _, t := range c.R {
			addTerm(&B[t.WireID()], r1cs.Coefficients, t, &L)
		}
		for _, t := range c.O {
			addTerm(&C[t.WireID()], r1cs.Coefficients, t, &L)
		}
		L.Mul(&L, &w).Mul(&L, &t[j]).Mul(&L, &tInv[j+1])
		j++
	}
	return A, B, C
}

// bitReverseG1 is gnark's bitReverse of the Z points (fft.BitReverse's
// permutation).
func bitReverseG1(a []curve.G1Affine) {
	n := uint(len(a))
	nn := uint(bits.UintSize - bits.TrailingZeros(n))
	for i := uint(0); i < n; i++ {
		irev := bits.Reverse(i) >> nn
		if irev > i {
			a[i], a[irev] = a[irev], a[i]
		}
	}
}
