package gpu

import (
	"context"
	"fmt"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/backend"
)

var _ backend.BatchAdder = (*Backend)(nil)

// BatchAddG1 implements backend.BatchAdder on the device: the bases of the
// wires idx (the ones equal to 1) summed by msm.BatchAdd's tree of batched
// affine additions over the resident base set, under the device lock, as
// MSMG1 runs. Refused once the device faulted; a fault it meets fences the
// device off. Before the kernels are loaded by a warm-up that did not
// include them (tests' stand-in warm-ups), it sums on the CPU.
func (b *Backend) BatchAddG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], idx []uint32) (curve.G1Jac, error) {
	return deviceBatchAdd(b, ctx, call.Span, func() (curve.G1Jac, error) {
		return b.batch.G1Resident(ctx, call, b.s, b.bases, bases, idx)
	}, func() (curve.G1Jac, error) { return b.cpu.BatchAddG1(ctx, call, bases, idx) })
}

// BatchAddG2 is BatchAddG1 on G2 (msm.g2.b.batch_add). With the G2 MSM on
// the CPU (SetMSMG2(MSMG2CPU)) it runs on the CPU too, taking no device
// lock.
func (b *Backend) BatchAddG2(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G2Affine], idx []uint32) (curve.G2Jac, error) {
	b.mu.Lock()
	onCPU := b.g2OnCPU
	b.mu.Unlock()
	cpu := func() (curve.G2Jac, error) { return b.cpu.BatchAddG2(ctx, call, bases, idx) }
	if onCPU {
		return cpu()
	}
	return deviceBatchAdd(b, ctx, call.Span, func() (curve.G2Jac, error) {
		return b.batch.G2Resident(ctx, call, b.s, b.bases, bases, idx)
	}, cpu)
}

func deviceBatchAdd[J any](b *Backend, ctx context.Context, span string, run, cpu func() (J, error)) (res J, err error) {
	if f := b.Fault(); f != nil {
		return res, fmt.Errorf("cuda %s: %w", span, f)
	}
	defer func() { err = b.checkFault(err) }()
	if err := b.ensureReady(ctx); err != nil {
		return res, fmt.Errorf("cuda %s: %w", span, err)
	}
	if b.batch == nil {
		return cpu()
	}
	defer b.lock(ctx)()
	return run()
}
