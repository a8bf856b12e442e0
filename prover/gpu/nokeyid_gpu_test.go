package gpu

import (
	"context"
	"math/big"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gcmimc "github.com/consensys/gnark-crypto/ecc/bls12-381/fr/mimc"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/examples/cubic"
	"github.com/consensys/gnark/examples/mimc"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// TestProveWithoutKeyIDGNARKCircuitsGPU: circuits written by gnark's
// authors (examples/cubic, examples/mimc), proved with groth16.Prove on the
// CUDA backend without WithKeyID (issue 11 item 5), give proofs that
// verify, and leave nothing resident on the device.
func TestProveWithoutKeyIDGNARKCircuitsGPU(t *testing.T) {
	b, _, _, tp := openBackend(t, buffer.ReleaseSync)
	ctx := context.Background()

	pre := new(big.Int).SetUint64(0x5eed)
	var preEl fr.Element
	preEl.SetBigInt(pre)
	h := gcmimc.NewMiMC()
	preBytes := preEl.Bytes()
	h.Write(preBytes[:])
	hash := new(big.Int).SetBytes(h.Sum(nil))

	for _, c := range []struct {
		name            string
		circuit, assign frontend.Circuit
	}{
		{"cubic", &cubic.Circuit{}, &cubic.Circuit{X: 3, Y: 35}},
		{"mimc", &mimc.Circuit{}, &mimc.Circuit{PreImage: pre, Hash: hash}},
	} {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, c.circuit)
		if err != nil {
			t.Fatalf("%s: compile: %v", c.name, err)
		}
		pk, vk, err := gnarkgroth16.Setup(ccs)
		if err != nil {
			t.Fatalf("%s: setup: %v", c.name, err)
		}
		w, err := frontend.NewWitness(c.assign, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatalf("%s: witness: %v", c.name, err)
		}
		pub, _ := w.Public()
		for _, g2 := range []backend.G2Placement{backend.G2OnGPU, backend.G2OnCPU} {
			if err := b.SetMSMG2(g2); err != nil {
				t.Fatal(err)
			}
			proof, err := groth16.Prove(ctx, ccs, pk, w, groth16.WithBackend(b), prover.WithTracerProvider(tp))
			if err != nil {
				t.Fatalf("%s (%d constraints, G2 on %s) without a key ID: %v", c.name, ccs.GetNbConstraints(), g2, err)
			}
			if err := gnarkgroth16.Verify(proof, vk, pub); err != nil {
				t.Fatalf("%s (G2 on %s): the CUDA proof without a key ID does not verify: %v", c.name, g2, err)
			}
			if ids := b.Bases().IDs(); len(ids) != 0 || b.Bases().Bytes() != 0 {
				t.Fatalf("%s: a proof without a key ID left base sets %v (%d bytes) resident", c.name, ids, b.Bases().Bytes())
			}
			t.Logf("%s (%d constraints, G2 on %s): CUDA proof without a key ID verifies", c.name, ccs.GetNbConstraints(), g2)
		}
	}
}
