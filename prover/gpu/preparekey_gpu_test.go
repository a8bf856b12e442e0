package gpu

import (
	"context"
	"testing"

	"github.com/consensys/gnark/backend/groth16"

	"github.com/otelcuzk/otelcuzk/buffer"
)

// issue 25 item 4 on the device: after PrepareKey the first proof of the
// key makes no cuda.malloc inside groth16.prove and verifies (its MSMs
// and compute_h on the prepared bases and buffers), in the default
// (staged) copy mode.
func TestFirstProofAfterPrepareKeyAllocatesNothingGPU(t *testing.T) {
	b, _, rec, tp := openBackend(t, buffer.ReleaseAsync)
	f := newProveFixture(t, "merkle", 1<<16)
	if err := b.PrepareKey(context.Background(), "prepared", f.pk); err != nil {
		t.Fatal(err)
	}
	proof, first := mallocsUnderProve(t, b, rec, tp, f, "prepared")
	if first != 0 {
		t.Errorf("the first proof after PrepareKey: %d cuda.malloc spans inside groth16.prove, want none", first)
	}
	if err := groth16.Verify(proof, f.vk, f.pub); err != nil {
		t.Fatalf("the first proof after PrepareKey does not verify: %v", err)
	}
}
