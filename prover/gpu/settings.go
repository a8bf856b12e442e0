package gpu

import (
	"fmt"

	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// HostCopy is how the backend moves host vectors (a, b, c, H, the MSM
// scalars) to and from the device. The vectors come from mmap'd pageable
// memory, from which the driver copies through its own small staging
// buffers at a fraction of the link's bandwidth.
type HostCopy string

const (
	// HostCopyStaged copies through pinned staging memory owned by the
	// backend (allocated on first use, kept between proofs, released at
	// Close): ComputeH's vectors in chunks of StageChunk bytes, the CPU
	// copy of one chunk overlapping the DMA of the previous one; MSM
	// scalars copied into one pinned buffer, which the MSM uploads from.
	// The CPU copies run on several goroutines. The default.
	HostCopyStaged HostCopy = "staged"
	// HostCopyRegister pins the caller's memory with cuMemHostRegister for
	// the duration of each call (cuda.host_register, then a buffer.release
	// span of kind pinned that unregisters it).
	HostCopyRegister HostCopy = "register"
	// HostCopyPageable copies from the pageable memory as it is.
	HostCopyPageable HostCopy = "pageable"
)

// ParseHostCopy parses "staged", "register" or "pageable" ("" is staged).
func ParseHostCopy(s string) (HostCopy, error) {
	switch HostCopy(s) {
	case "", HostCopyStaged:
		return HostCopyStaged, nil
	case HostCopyRegister, HostCopyPageable:
		return HostCopy(s), nil
	}
	return "", fmt.Errorf("cuda backend: host copy mode %q (want staged, register or pageable)", s)
}

// SetHostCopy changes how host vectors are copied (default: staged, or
// BackendOptions.Device.HostCopy at Open). It waits for the operation in
// flight.
func (b *Backend) SetHostCopy(m HostCopy) error {
	if _, err := ParseHostCopy(string(m)); err != nil {
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

// Where MSMG2 runs (BackendOptions.Device.MSMG2, SetMSMG2).
const (
	// MSMG2GPU runs the G2 MSM on the device, after or before the G1
	// MSMs (they share the device). The default.
	MSMG2GPU = "gpu"
	// MSMG2CPU runs the G2 MSM on the CPU with gnark-crypto, taking no
	// device lock, so it overlaps the GPU's G1 work.
	MSMG2CPU = "cpu"
)

// SetMSMG2 chooses where MSMG2 runs: MSMG2GPU or MSMG2CPU ("" is the
// default, the GPU). It waits for the operation in flight.
func (b *Backend) SetMSMG2(where string) error {
	onCPU, err := parseMSMG2(where)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.g2OnCPU = onCPU
	b.mu.Unlock()
	return nil
}

func parseMSMG2(where string) (onCPU bool, err error) {
	switch where {
	case "", MSMG2GPU:
		return false, nil
	case MSMG2CPU:
		return true, nil
	}
	return false, fmt.Errorf("cuda backend: G2 MSM placement %q (want gpu or cpu)", where)
}

// CheckDeviceSettings validates the settings Open takes
// (backend.DeviceSettings: HostCopy as ParseHostCopy, MSMG2 gpu or cpu)
// without a device, so a command can refuse a typo at start on any host
// rather than on the first GPU host. Errors name the field's value and the
// words it wants; Open returns the same.
func CheckDeviceSettings(s backend.DeviceSettings) error {
	_, _, err := parseDeviceSettings(s)
	return err
}

func parseDeviceSettings(s backend.DeviceSettings) (HostCopy, bool, error) {
	hc, err := ParseHostCopy(s.HostCopy)
	if err != nil {
		return "", false, err
	}
	g2OnCPU, err := parseMSMG2(s.MSMG2)
	if err != nil {
		return "", false, err
	}
	return hc, g2OnCPU, nil
}
