package groth16_test

import (
	"context"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/logger"
	"github.com/consensys/gnark/std/rangecheck"

	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// Bytes proves that each of its values fits in 8 bits, with gnark's
// std/rangecheck (a log-derivative argument whose challenge comes from
// api.Commit).
type Bytes struct {
	V [4]frontend.Variable
}

func (c *Bytes) Define(api frontend.API) error {
	rc := rangecheck.New(api)
	for _, v := range c.V {
		rc.Check(v, 8)
	}
	return nil
}

// Prove a circuit with a commitment: nothing changes for the caller; the
// proof carries the commitment and its proof of knowledge.
func ExampleProve_commitment() {
	logger.Disable()
	ccs, _ := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &Bytes{})
	pk, vk, _ := gnarkgroth16.Setup(ccs)
	w, _ := frontend.NewWitness(&Bytes{V: [4]frontend.Variable{0, 17, 200, 255}}, ecc.BLS12_381.ScalarField())

	proof, err := groth16.Prove(context.Background(), ccs, pk, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	pub, _ := w.Public()
	fmt.Println("verified:", gnarkgroth16.Verify(proof, vk, pub) == nil)
	fmt.Println("commitments:", len(proof.(*groth16_bls12381.Proof).Commitments))

	// 256 does not fit in 8 bits: the solve fails.
	bad, _ := frontend.NewWitness(&Bytes{V: [4]frontend.Variable{0, 17, 200, 256}}, ecc.BLS12_381.ScalarField())
	_, err = groth16.Prove(context.Background(), ccs, pk, bad)
	fmt.Println("out of range refused:", err != nil)
	// Output:
	// verified: true
	// commitments: 1
	// out of range refused: true
}
