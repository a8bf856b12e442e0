package groth16_test

import (
	"context"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/logger"

	"github.com/otelcuzk/otelcuzk/prover/groth16"
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
	pk, vk, _ := gnarkgroth16.Setup(ccs)
	w, _ := frontend.NewWitness(&Cube{X: 3, Y: 35}, ecc.BLS12_381.ScalarField())

	proof, err := groth16.Prove(context.Background(), ccs, pk, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	pub, _ := w.Public()
	fmt.Println("verified:", gnarkgroth16.Verify(proof, vk, pub) == nil)
	// Output: verified: true
}
