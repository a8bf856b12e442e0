package gpu

import (
	"context"
	"fmt"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// MSMG1 implements backend.Backend.MSMG1 on the GPU with the Pippenger MSM
// of prover/gpu/msm over bases kept resident on the device (uploaded on
// first use of bases.ID, reused by later proofs); call names the span
// (msm.g1.a, ...) and the proof's key, whose pinned scalars and device
// workspace it uses. A set without an ID is not kept resident: its points
// are copied to the device with the scalars for this MSM only. With
// call.FromComputeH, scalars that are the H the last ComputeH of the key
// left on the device are read there (keptH), not copied from the host.
func (b *Backend) MSMG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], scalars []fr.Element) (res curve.G1Jac, err error) {
	if res, ok, err := b.msmKeptH(ctx, call, bases, scalars); ok {
		return res, err
	}
	return deviceMSM(b, ctx, call, len(bases.Points), scalars, func(ctx context.Context, sc []fr.Element) (curve.G1Jac, error) {
		return b.msm.G1Resident(ctx, call, b.s, b.bases, bases, sc)
	})
}

// MSMG2 implements backend.Backend.MSMG2: on the GPU as MSMG1 does (the G2
// kernels, bases resident), or, after SetMSMG2(MSMG2CPU), on the CPU with
// gnark-crypto's MultiExp (cpu.Backend), taking no device lock, so it runs
// while the GPU works on the G1 MSMs.
func (b *Backend) MSMG2(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G2Affine], scalars []fr.Element) (res curve.G2Jac, err error) {
	b.mu.Lock()
	onCPU := b.g2OnCPU
	b.mu.Unlock()
	if onCPU {
		return b.cpu.MSMG2(ctx, call, bases, scalars)
	}
	return deviceMSM(b, ctx, call, len(bases.Points), scalars, func(ctx context.Context, sc []fr.Element) (curve.G2Jac, error) {
		return b.msm.G2Resident(ctx, call, b.s, b.bases, bases, sc)
	})
}

// deviceMSM is the device path MSMG1 and MSMG2 share: refused once the
// device faulted, scalars checked against the nbases bases, run (the
// group's resident MSM) given the scalars as the host copy mode wants them
// (withScalars), and a fault it meets recorded (checkFault).
func deviceMSM[J any](b *Backend, ctx context.Context, call backend.Call, nbases int, scalars []fr.Element, run func(ctx context.Context, sc []fr.Element) (J, error)) (res J, err error) {
	span := call.Span
	if f := b.Fault(); f != nil {
		return res, fmt.Errorf("cuda %s: %w", span, f)
	}
	defer func() { err = b.checkFault(err) }()
	if len(scalars) != nbases {
		return res, fmt.Errorf("cuda %s: %d scalars for %d bases", span, len(scalars), nbases)
	}
	err = b.withScalars(ctx, call, scalars, func(ctx context.Context, sc []fr.Element) (err error) {
		res, err = run(ctx, sc)
		return err
	})
	return res, err
}

// withScalars takes the device and runs msm with the scalars as the host
// copy mode wants them: copied into pinned staging memory, pinned in
// place, from their registered buffer (HostCopyRegistered: msm's ctx marks
// the copies' spans; staged when the scalars have none), or as they are.
func (b *Backend) withScalars(ctx context.Context, call backend.Call, scalars []fr.Element, msm func(context.Context, []fr.Element) error) error {
	span := call.Span
	if err := b.ensureReady(ctx); err != nil {
		return fmt.Errorf("cuda %s: %w", span, err)
	}
	defer b.lock(ctx)()
	sc := scalars
	if len(scalars)*frBytes >= b.minStaged() {
		mode := b.hostCopy
		if mode == backend.HostCopyRegistered {
			release, ok := b.registered(ctx, scalars)
			if ok {
				ctx = registeredCopies(ctx, "msm.scalars")
				defer func() {
					// As in ComputeH: no copy may still read the scalars
					// when their buffer may be unregistered.
					_ = b.s.Synchronize(ctx)
					release()
				}()
			} else {
				mode = backend.HostCopyStaged
			}
		}
		switch mode {
		case backend.HostCopyStaged:
			var err error
			if sc, err = b.stagedScalars(ctx, call.KeyID, scalars); err != nil {
				return fmt.Errorf("cuda %s: %w", span, err)
			}
		case backend.HostCopyRegister:
			unpin := b.pin(ctx, "msm.scalars", scalars)
			defer func() {
				// As in ComputeH: on an error return a copy may still be
				// reading the scalars; none may when they are unpinned.
				_ = b.s.Synchronize(ctx)
				unpin()
			}()
		}
	}
	return msm(ctx, sc)
}
