package gpu

import (
	"context"
	"errors"
	"fmt"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// PrepareKey implements backend.KeyPreparer: it makes now, for the proofs
// of proving key pk under key ID keyID (groth16.WithKeyID's), the device
// state the key's first proof would otherwise make inside groth16.prove:
//
//   - the base sets of [A]₁, [B]₁, [K]₁, [Z]₁, the commitment keys' bases
//     and [B]₂ (unless SetMSMG2 put G2 on the CPU) resident in Bases(),
//     with the IDs ProveAssignment gives them (keyID + ":g1.a", ...);
//   - the key's proof buffers compute_h.a, .b, .c (domain size × 32 bytes)
//     and msm.workspace (MSM.WorkspaceBytes of its largest MSM);
//   - the NTT tables of its domain;
//   - in the staged copy mode, the pinned staging buffers and the key's
//     pinned scalar buffer (its largest MSM × 32 bytes).
//
// So the key's first proof allocates no device or pinned memory. Its
// spans (warm-up, gpu.lock, keys.preload, cuda.malloc) are children of
// ctx's. Errors: an empty keyID, a key that is not BLS12-381's, the
// fenced-off device's fault, the warm-up's, and the allocations' and
// uploads' (msm.ErrBaseBudget, cudaspans.ErrOutOfMemory, wrapped): what
// was made before an error stays and serves the proofs.
func (b *Backend) PrepareKey(ctx context.Context, keyID string, pk groth16.ProvingKey) (err error) {
	if keyID == "" {
		return errors.New("cuda prepare key: empty key ID")
	}
	bpk, ok := pk.(*groth16_bls12381.ProvingKey)
	if !ok || bpk == nil {
		return fmt.Errorf("cuda prepare key %s: a %T, not a BLS12-381 proving key", keyID, pk)
	}
	if f := b.Fault(); f != nil {
		return fmt.Errorf("cuda prepare key %s: %w", keyID, f)
	}
	defer func() { err = b.checkFault(err) }()
	if err := b.ensureReady(ctx); err != nil {
		return fmt.Errorf("cuda prepare key %s: %w", keyID, err)
	}
	defer b.lock(ctx)()
	wrap := func(what string, err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("cuda prepare key %s: %s: %w", keyID, what, err)
	}

	// The base sets, as ProveAssignment names them.
	g1 := []backend.BaseSet[curve.G1Affine]{
		{ID: keyID + ":g1.a", Points: bpk.G1.A},
		{ID: keyID + ":g1.b", Points: bpk.G1.B},
		{ID: keyID + ":g1.k", Points: bpk.G1.K},
		{ID: keyID + ":g1.z", Points: bpk.G1.Z},
	}
	for i, ck := range bpk.CommitmentKeys {
		g1 = append(g1, backend.BaseSet[curve.G1Affine]{ID: fmt.Sprintf("%s:commitment.%d.pok", keyID, i), Points: ck.BasisExpSigma})
	}
	largest, workspace := 0, 0
	for _, set := range g1 {
		if len(set.Points) == 0 {
			continue
		}
		if _, err := b.bases.PreloadG1(ctx, b.s, set); err != nil {
			return wrap(set.ID, err)
		}
		largest = max(largest, len(set.Points))
		workspace = max(workspace, b.msm.WorkspaceBytes(len(set.Points), false))
	}
	if n := len(bpk.G2.B); n > 0 && !b.g2OnCPU {
		if _, err := b.bases.PreloadG2(ctx, b.s, backend.BaseSet[curve.G2Affine]{ID: keyID + ":g2.b", Points: bpk.G2.B}); err != nil {
			return wrap(keyID+":g2.b", err)
		}
		largest = max(largest, n)
		workspace = max(workspace, b.msm.WorkspaceBytes(n, true))
	}

	// The proof buffers, lent and given back at once: kept for the key.
	n := int(bpk.Domain.Cardinality)
	lend := func(name string, bytes int) error {
		if bytes <= 0 {
			return nil
		}
		_, done, err := b.bases.ProofBuffer(ctx, keyID, name, bytes)
		if err != nil {
			return wrap(name, err)
		}
		done()
		return nil
	}
	for _, name := range []string{"compute_h.a", "compute_h.b", "compute_h.c"} {
		if err := lend(name, n*frBytes); err != nil {
			return err
		}
	}
	if err := lend("msm.workspace", workspace); err != nil {
		return err
	}
	if n > 0 {
		if err := b.ntt.Prepare(ctx, b.s, &bpk.Domain); err != nil {
			return wrap("NTT tables", err)
		}
	}

	// Pinned host memory of the staged copies (withScalars, ComputeH).
	if b.hostCopy == backend.HostCopyStaged {
		if n*frBytes >= b.minStaged() {
			if _, err := b.stageBuffers(ctx); err != nil {
				return wrap("staging", err)
			}
		}
		if size := largest * frBytes; size >= b.minStaged() {
			if _, err := b.scratchFor(ctx, keyID, size); err != nil {
				return wrap("pinned scalars", err)
			}
		}
	}
	return wrap("synchronize", b.s.Synchronize(ctx))
}
