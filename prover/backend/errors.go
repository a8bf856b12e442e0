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

// UnavailableError is the error of a backend that cannot run on this host,
// made by Unavailable. Its text names the backend and says why once:
//
//	cuda backend unavailable: no CUDA device: dlopen libcuda.so.1: cannot open shared object file: No such file or directory
//
// errors.Is finds ErrUnavailable (so its error.type is no_device) and
// whatever Reason wraps (cudaspans.ErrNoDevice); errors.As finds the
// UnavailableError, whose Reason is the why alone.
type UnavailableError struct {
	// Backend is the backend's name ("cuda").
	Backend string
	// Reason is why it cannot run, without the backend's name.
	Reason error
}

// Unavailable returns an *UnavailableError: backend name cannot run on
// this host, because of reason (non-nil).
func Unavailable(name string, reason error) error {
	return &UnavailableError{Backend: name, Reason: reason}
}

func (e *UnavailableError) Error() string {
	return e.Backend + " backend unavailable: " + e.Reason.Error()
}

// Unwrap returns ErrUnavailable and Reason.
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Reason} }
