package prover_test

import (
	"context"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/logger"

	"github.com/otelcuzk/otelcuzk/prover"
)

// Cube is a user's own circuit: x³ + x + 5 = y, y public.
type Cube struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func (c *Cube) Define(api frontend.API) error {
	api.AssertIsEqual(c.Y, api.Add(api.Mul(c.X, c.X, c.X), c.X, 5))
	return nil
}

// Prove a circuit of your own with gnark's keys and verify with gnark.
func ExampleProve() {
	logger.Disable()
	ccs, _ := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &Cube{})
	pk, vk, _ := groth16.Setup(ccs)
	w, _ := frontend.NewWitness(&Cube{X: 3, Y: 35}, ecc.BLS12_381.ScalarField())

	proof, err := prover.Prove(context.Background(), ccs, pk, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	pub, _ := w.Public()
	fmt.Println("verified:", groth16.Verify(proof, vk, pub) == nil)
	// Output: verified: true
}
