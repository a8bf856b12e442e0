package backend

import "github.com/otelcuzk/otelcuzk/otelcuzk/semconv"

// Errors of backends that callers branch on with errors.Is. Each declares
// its error.type (semconv.NewError).
var (
	// ErrUnavailable is returned when a requested backend cannot run on
	// this host (for the CUDA backend it wraps cudaspans.ErrNoDevice).
	// error.type no_device.
	ErrUnavailable = semconv.NewError(semconv.ErrorTypeNoDevice, "backend unavailable")
	// ErrNoDeviceMemory is returned by Prover.MemInfo for a backend
	// without device memory (the CPU). error.type no_device.
	ErrNoDeviceMemory = semconv.NewError(semconv.ErrorTypeNoDevice, "no device memory")
	// ErrDeviceFault is wrapped by a backend's error when its device can no
	// longer be trusted with work (a sticky CUDA error: an illegal address,
	// an Xid, a lost device), as opposed to an error of the one proof. An
	// engine marks the worker's device unhealthy, takes no more work to it,
	// and hands the proof to another worker. error.type device_fault.
	ErrDeviceFault = semconv.NewError(semconv.ErrorTypeDeviceFault, "device fault")
)
