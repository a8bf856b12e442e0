package setup

import (
	"context"
	"fmt"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// Multiplier computes the fixed-base scalar multiplications of a setup:
// out[i] = [scalars[i]]₁ (MulG1) or [scalars[i]]₂ (MulG2) for the
// generators of curve.Generators, in gnark-crypto's affine form (the
// point at infinity, for a zero scalar, is (0, 0)). Scalars are
// fr.Elements as gnark holds them (Montgomery form); len(out) must equal
// len(scalars). Errors end the setup; a Multiplier should return ctx's
// error soon after ctx ends.
type Multiplier interface {
	MulG1(ctx context.Context, scalars []fr.Element, out []curve.G1Affine) error
	MulG2(ctx context.Context, scalars []fr.Element, out []curve.G2Affine) error
}

// cpuChunk is the scalars per call of gnark-crypto's batch multiplication
// (its table and digits are per call; chunks bound the temporary memory).
const cpuChunk = 1 << 20

// CPU is the Multiplier of gnark-crypto's BatchScalarMultiplicationG1 and
// G2 (the one groth16.Setup uses), on all cores, in chunks of 2^20
// scalars. Safe for concurrent use.
type CPU struct{}

// MulG1 implements Multiplier.
func (CPU) MulG1(ctx context.Context, scalars []fr.Element, out []curve.G1Affine) error {
	_, _, g1, _ := curve.Generators()
	return mulChunks(ctx, "G1", scalars, out, func(s []fr.Element) []curve.G1Affine {
		return curve.BatchScalarMultiplicationG1(&g1, s)
	})
}

// MulG2 implements Multiplier.
func (CPU) MulG2(ctx context.Context, scalars []fr.Element, out []curve.G2Affine) error {
	_, _, _, g2 := curve.Generators()
	return mulChunks(ctx, "G2", scalars, out, func(s []fr.Element) []curve.G2Affine {
		return curve.BatchScalarMultiplicationG2(&g2, s)
	})
}

// mulChunks fills out with batch of scalars, cpuChunk scalars a call,
// checking ctx between chunks; group names the group in the error for
// mismatched lengths.
func mulChunks[P any](ctx context.Context, group string, scalars []fr.Element, out []P, batch func([]fr.Element) []P) error {
	if len(out) != len(scalars) {
		return fmt.Errorf("setup: %d %s outputs for %d scalars", len(out), group, len(scalars))
	}
	for lo := 0; lo < len(scalars); lo += cpuChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+cpuChunk, len(scalars))
		copy(out[lo:hi], batch(scalars[lo:hi]))
	}
	return nil
}
