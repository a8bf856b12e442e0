package gpu

import (
	"context"
	"fmt"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// keptH is H as ComputeH left it on the device: the coefficients it also
// copied back into the host vector a (host, n elements), in the key's
// proof buffer compute_h.a (buf), which stays on loan (giveBack) until
// the H MSM reads it (MSMG1 with Call.FromComputeH), the next ComputeH,
// the end of the proof (BeginProof's end function) or Close. So the H
// MSM copies its 32·n bytes of scalars device to device instead of from
// the host: at 2^22 one 128 MiB upload (staged: a CPU copy into pinned
// memory and its DMA) less per proof. Under b.mu.
type keptH struct {
	keyID    string
	host     *fr.Element
	n        int
	buf      *cudaspans.DeviceBuffer
	giveBack func()
}

// dropH gives back the buffer of a kept H, if any. Called with b.mu.
func (b *Backend) dropH() {
	if b.h.giveBack != nil {
		b.h.giveBack()
	}
	b.h = keptH{}
}

// takeH returns the kept H and true when scalars are a prefix of its host
// vector for the same key; the caller then owns the loan (and calls its
// giveBack). Called with b.mu.
func (b *Backend) takeH(keyID string, scalars []fr.Element) (keptH, bool) {
	h := b.h
	if h.buf == nil || keyID == "" || h.keyID != keyID || len(scalars) == 0 || len(scalars) > h.n || &scalars[0] != h.host {
		return keptH{}, false
	}
	b.h = keptH{}
	return h, true
}

// msmKeptH is MSMG1 over the H that ComputeH left on the device, when
// call.FromComputeH says the scalars are that H and the backend kept it
// for call.KeyID (ok false otherwise: the caller copies the scalars from
// the host as for any MSM).
func (b *Backend) msmKeptH(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], scalars []fr.Element) (res curve.G1Jac, ok bool, err error) {
	if !call.FromComputeH || bases.ID == "" || len(scalars) != len(bases.Points) || b.Fault() != nil {
		return res, false, nil
	}
	if err := b.ensureReady(ctx); err != nil {
		return res, false, nil // the host path reports it
	}
	defer b.lock(ctx)()
	h, ok := b.takeH(call.KeyID, scalars)
	if !ok {
		return res, false, nil
	}
	defer h.giveBack()
	res, err = b.msm.G1ResidentOnDevice(ctx, call, b.s, b.bases, bases, len(scalars), h.buf.Ptr())
	if err != nil {
		err = fmt.Errorf("cuda %s: %w", call.Span, b.checkFault(err))
	}
	return res, true, err
}
