package backend

import "fmt"

// DeviceSettings tune how a device backend works. They are parsed once,
// where they are read (ParseDeviceSettings: cmd/cuzk and the daemon from
// CUZK_CUDA_HOST_COPY and CUZK_CUDA_MSM_G2, daemon.DeviceSettingsFromEnv),
// and a backend takes the typed values as they are (Check refuses a value
// no parse could make). The zero value is the defaults: registered copies
// (HostCopyRegistered), the G2 MSM on the device. The CPU backend ignores them.
type DeviceSettings struct {
	// HostCopy is how host vectors reach the device and come back.
	HostCopy HostCopy
	// MSMG2 is where the G2 MSM runs.
	MSMG2 G2Placement
}

// HostCopy is how a device backend moves host vectors (a, b, c, H, the
// MSM scalars) to and from the device; "" is HostCopyRegistered.
type HostCopy string

// The host copy modes (CUZK_CUDA_HOST_COPY).
const (
	// HostCopyStaged copies through pinned staging memory owned by the
	// backend.
	HostCopyStaged HostCopy = "staged"
	// HostCopyRegister pins the caller's memory for the duration of each
	// call.
	HostCopyRegister HostCopy = "register"
	// HostCopyPageable copies from the pageable memory as it is.
	HostCopyPageable HostCopy = "pageable"
	// HostCopyRegistered registers each mmap'd host buffer
	// (buffer.Mmap) a vector lies in with the driver the first time the
	// backend sees it and keeps it registered until the buffer is
	// unmapped, so a buffer reused by the next proof (release mode pool)
	// is copied by direct DMA with no staging copy and no registration;
	// vectors outside an Mmap, and buffers the driver refuses, are staged.
	// The default: on the H200 at 2^22 (merkle) a proof took 338 ms
	// against 372 staged with --release pool, 348 against 410 with async
	// (a registration of 24.5 ms a proof included), 407 against 416 with
	// sync (bench/gpuprove.md).
	HostCopyRegistered HostCopy = "registered"
)

// G2Placement is where a device backend runs the G2 MSM of B; "" is
// G2OnGPU.
type G2Placement string

// The G2 placements (CUZK_CUDA_MSM_G2).
const (
	// G2OnGPU runs the G2 MSM on the device, beside the G1 MSMs (the
	// default).
	G2OnGPU G2Placement = "gpu"
	// G2OnCPU runs it on the CPU with gnark-crypto, taking no device
	// lock, so it overlaps the device's G1 work.
	G2OnCPU G2Placement = "cpu"
)

// ParseHostCopy parses "staged", "register", "registered" or "pageable"
// ("" is registered, the default).
// The error names the value and the words it wants.
func ParseHostCopy(s string) (HostCopy, error) {
	switch HostCopy(s) {
	case "", HostCopyRegistered:
		return HostCopyRegistered, nil
	case HostCopyRegister, HostCopyStaged, HostCopyPageable:
		return HostCopy(s), nil
	}
	return "", fmt.Errorf("cuda backend: host copy mode %q (want staged, register, registered or pageable)", s)
}

// ParseG2Placement parses "gpu" or "cpu" ("" is gpu). The error names the
// value and the words it wants.
func ParseG2Placement(s string) (G2Placement, error) {
	switch G2Placement(s) {
	case "", G2OnGPU:
		return G2OnGPU, nil
	case G2OnCPU:
		return G2OnCPU, nil
	}
	return "", fmt.Errorf("cuda backend: G2 MSM placement %q (want gpu or cpu)", s)
}

// ParseDeviceSettings parses the words of a host copy mode and a G2
// placement (ParseHostCopy, ParseG2Placement; "" for either is its
// default) into settings. Its error is the first malformed word's.
func ParseDeviceSettings(hostCopy, msmG2 string) (DeviceSettings, error) {
	hc, err := ParseHostCopy(hostCopy)
	if err != nil {
		return DeviceSettings{}, err
	}
	g2, err := ParseG2Placement(msmG2)
	if err != nil {
		return DeviceSettings{}, err
	}
	return DeviceSettings{HostCopy: hc, MSMG2: g2}, nil
}

// Check returns the error of a field no parse could have made (a typed
// value built from another word), as the parse of its word would; nil for
// known values and the zero value.
func (s DeviceSettings) Check() error {
	if _, err := ParseHostCopy(string(s.HostCopy)); err != nil {
		return err
	}
	_, err := ParseG2Placement(string(s.MSMG2))
	return err
}
