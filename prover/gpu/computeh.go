package gpu

import (
	"context"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
)

// ComputeH implements backend.Backend.ComputeH on the GPU, as gnark's
// computeH: a, b and c (each domain.Cardinality elements) are copied to the
// device, transformed there (NTT.ComputeH: ntt.inverse, ntt.coset,
// groth16.pointwise, ntt.inverse_coset spans with their kernels), and H's
// coefficients come back into a in bit-reversed order, element for element
// what gnark's computeH and the CPU backend return; b and c are left
// unchanged. The copies go as the HostCopy mode says (staged through
// pinned memory by default; in HostCopyRegistered by DMA from each
// vector's registered buffer.Mmap, registered once for its life, or staged
// when it has none). The three device vectors (3·32·n bytes) are,
// for a proof with a key ID (keyID not ""), the key's proof
// buffers, kept for its next proof (Bases().ProofBuffer), and H stays in
// the first of them for the H MSM (MSMG1 with backend.Call.FromComputeH:
// keptH); otherwise they are allocated here and released through the
// backend's Releaser (buffer.release spans). Errors:
// lengths that differ from the domain, device memory, driver errors naming
// the operation.
func (b *Backend) ComputeH(ctx context.Context, keyID string, domain *fft.Domain, a, bv, c []fr.Element) (err error) {
	if f := b.Fault(); f != nil {
		return fmt.Errorf("cuda compute H: %w", f)
	}
	defer func() { err = b.checkFault(err) }()
	n := int(domain.Cardinality)
	if len(a) != n || len(bv) != n || len(c) != n {
		return fmt.Errorf("cuda compute H: vectors of length %d, %d, %d, domain of %d", len(a), len(bv), len(c), n)
	}
	if _, err := ntt.Log2(n); err != nil {
		return err
	}
	if err := b.ensureReady(ctx); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	defer b.lock(ctx)()
	// The H an earlier ComputeH kept (its MSM never ran) goes back first,
	// so this call gets the key's buffer again.
	b.dropH()
	bufs := make([]*cudaspans.DeviceBuffer, 0, 3)
	var giveBack []func()
	defer func() {
		for i, g := range giveBack {
			if i == 0 && err == nil && keyID != "" {
				// H stays on the device for the H MSM (keptH).
				b.h = keptH{keyID: keyID, host: &a[0], n: n, buf: bufs[0], giveBack: g}
				continue
			}
			g()
		}
	}()
	for _, name := range []string{"a", "b", "c"} {
		buf, g, err := b.vector(ctx, keyID, name, n*frBytes)
		if err != nil {
			return fmt.Errorf("cuda compute H: %w", err)
		}
		bufs, giveBack = append(bufs, buf), append(giveBack, g)
	}
	mode := b.hostCopy
	if n*frBytes < b.minStaged() {
		mode = backend.HostCopyPageable
	}
	if mode == backend.HostCopyRegister {
		// Pinned for the upload, the kernels and the download of a; on an
		// error return, no copy may still be reading them when unpinned.
		var unpins []func()
		for i, v := range [][]fr.Element{a, bv, c} {
			unpins = append(unpins, b.pin(ctx, []string{"a", "b", "c"}[i], v))
		}
		defer func() {
			_ = b.s.Synchronize(ctx)
			for _, u := range unpins {
				u()
			}
		}()
	}
	// Each vector's own mode: in HostCopyRegistered, by DMA from its
	// registered buffer, or staged when it has none.
	modes := [3]backend.HostCopy{mode, mode, mode}
	if mode == backend.HostCopyRegistered {
		// Held for the upload, the kernels and the download of a; on an
		// error return, no copy may still be reading them when let go.
		var holds []func()
		for i, v := range [][]fr.Element{a, bv, c} {
			modes[i] = backend.HostCopyStaged
			if release, ok := b.registered(ctx, v); ok {
				modes[i] = backend.HostCopyRegistered
				holds = append(holds, release)
			}
		}
		defer func() {
			_ = b.s.Synchronize(ctx)
			for _, h := range holds {
				h()
			}
		}()
	}
	for i, v := range [][]fr.Element{a, bv, c} {
		if err := b.copyVector(ctx, modes[i], []string{"a", "b", "c"}[i], dirHtoD, bufs[i].Ptr(), v); err != nil {
			return fmt.Errorf("cuda compute H: upload: %w", err)
		}
	}
	if err := b.ntt.ComputeH(ctx, b.s, domain, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr()); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	if err := b.copyVector(ctx, modes[0], "h", dirDtoH, bufs[0].Ptr(), a); err != nil {
		return fmt.Errorf("cuda compute H: download: %w", err)
	}
	if err := b.s.Synchronize(ctx); err != nil {
		return fmt.Errorf("cuda compute H: %w", err)
	}
	return nil
}
