package gpu

import (
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// SetHostCopy changes how host vectors are copied (default:
// backend.HostCopyRegistered, or backend.Options.Device.HostCopy at Open); a
// value no backend.ParseHostCopy makes is refused with its error. It waits
// for the operation in flight.
func (b *Backend) SetHostCopy(m backend.HostCopy) error {
	m, err := backend.ParseHostCopy(string(m))
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.hostCopy = m
	b.mu.Unlock()
	return nil
}

// HostCopyMode returns the current host copy mode.
func (b *Backend) HostCopyMode() backend.HostCopy {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hostCopy
}

// SetMSMG2 chooses where MSMG2 runs (default: backend.G2OnGPU, or
// backend.Options.Device.MSMG2 at Open): backend.G2OnGPU after or before
// the G1 MSMs (they share the device), backend.G2OnCPU with gnark-crypto,
// taking no device lock, so it overlaps the GPU's G1 work. A value no
// backend.ParseG2Placement makes is refused with its error. It waits for
// the operation in flight.
func (b *Backend) SetMSMG2(where backend.G2Placement) error {
	g2, err := backend.ParseG2Placement(string(where))
	if err != nil {
		return err
	}
	onCPU := g2 == backend.G2OnCPU
	b.mu.Lock()
	b.g2OnCPU = onCPU
	b.mu.Unlock()
	return nil
}
