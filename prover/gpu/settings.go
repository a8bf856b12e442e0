package gpu

import (
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// HostCopy is backend.HostCopy: how the backend moves host vectors (a,
// b, c, H, the MSM scalars) to and from the device. The vectors come from
// mmap'd pageable memory, from which the driver copies through its own
// small staging buffers at a fraction of the link's bandwidth.
type HostCopy = backend.HostCopy

// The host copy modes, backend's.
const (
	// HostCopyStaged copies through pinned staging memory owned by the
	// backend (allocated on first use, kept between proofs, released at
	// Close): ComputeH's vectors in chunks of StageChunk bytes, the CPU
	// copy of one chunk overlapping the DMA of the previous one; MSM
	// scalars copied into one pinned buffer, which the MSM uploads from.
	// The CPU copies run on several goroutines. The default.
	HostCopyStaged = backend.HostCopyStaged
	// HostCopyRegister pins the caller's memory with cuMemHostRegister for
	// the duration of each call (cuda.host_register, then a buffer.release
	// span of kind pinned that unregisters it).
	HostCopyRegister = backend.HostCopyRegister
	// HostCopyPageable copies from the pageable memory as it is.
	HostCopyPageable = backend.HostCopyPageable
)

// ParseHostCopy is backend.ParseHostCopy: "staged", "register" or
// "pageable" ("" is staged).
func ParseHostCopy(s string) (HostCopy, error) { return backend.ParseHostCopy(s) }

// SetHostCopy changes how host vectors are copied (default: staged, or
// backend.Options.Device.HostCopy at Open). It waits for the operation in
// flight.
func (b *Backend) SetHostCopy(m HostCopy) error {
	m, err := ParseHostCopy(string(m))
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.hostCopy = m
	b.mu.Unlock()
	return nil
}

// HostCopyMode returns the current host copy mode.
func (b *Backend) HostCopyMode() HostCopy {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hostCopy
}

// Where MSMG2 runs (backend.Options.Device.MSMG2, SetMSMG2): the words of
// backend.G2OnGPU and backend.G2OnCPU.
const (
	// MSMG2GPU runs the G2 MSM on the device, after or before the G1
	// MSMs (they share the device). The default.
	MSMG2GPU = string(backend.G2OnGPU)
	// MSMG2CPU runs the G2 MSM on the CPU with gnark-crypto, taking no
	// device lock, so it overlaps the GPU's G1 work.
	MSMG2CPU = string(backend.G2OnCPU)
)

// SetMSMG2 chooses where MSMG2 runs: MSMG2GPU or MSMG2CPU ("" is the
// default, the GPU). It waits for the operation in flight.
func (b *Backend) SetMSMG2(where string) error {
	g2, err := backend.ParseG2Placement(where)
	if err != nil {
		return err
	}
	onCPU := g2 == backend.G2OnCPU
	b.mu.Lock()
	b.g2OnCPU = onCPU
	b.mu.Unlock()
	return nil
}
