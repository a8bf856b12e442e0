package cudaspans

import (
	"fmt"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ErrNoDevice means CUDA cannot be used on this host: libcuda.so.1 is
// missing, the driver is older than CUDA 12, cuInit failed, or there is no
// device. Errors wrapping it carry the one-line reason; the prover's
// --backend auto falls back to the CPU on it.
var ErrNoDevice = semconv.NewError(semconv.ErrorTypeNoDevice, "no CUDA device")

// ErrOutOfMemory is matched (errors.Is) by an *Error whose result is
// CUDA_ERROR_OUT_OF_MEMORY, so callers can split work into chunks.
var ErrOutOfMemory = semconv.NewError(semconv.ErrorTypeOutOfMemory, "CUDA out of memory")

// ErrNoCompiler means NVRTC (libnvrtc.so.13 or .12) could not be loaded;
// give a precompiled cubin or PTX file instead (LoadModule).
var ErrNoCompiler = semconv.NewError(semconv.ErrorTypeCUDA, "NVRTC not available")

// ErrSticky is matched (errors.Is) by an *Error whose result leaves the
// context unusable for the life of the process: every later call on it
// fails (cuda.h's documentation of each: "the process must be terminated
// and relaunched", or a lost device). The results: CUDA_ERROR_ILLEGAL_ADDRESS
// (700), LAUNCH_TIMEOUT (702), CONTEXT_IS_DESTROYED (709), ASSERT (710),
// HARDWARE_STACK_ERROR (714), ILLEGAL_INSTRUCTION (715), MISALIGNED_ADDRESS
// (716), INVALID_ADDRESS_SPACE (717), INVALID_PC (718), LAUNCH_FAILED (719),
// ECC_UNCORRECTABLE (214), NVLINK_UNCORRECTABLE (220), DEVICE_UNAVAILABLE
// (46) and UNKNOWN (999), which an Xid or a fallen-off-the-bus GPU reports.
var ErrSticky = semconv.NewError(semconv.ErrorTypeDeviceFault, "sticky CUDA error: the device context can no longer be used")

// stickyResults are the CUresults of ErrSticky.
var stickyResults = map[int]bool{46: true, 214: true, 220: true, 700: true, 702: true, 709: true, 710: true,
	714: true, 715: true, 716: true, 717: true, 718: true, 719: true, 999: true}

// CUDA_ERROR_* values of cuda.h that cudaspans branches on.
const (
	cudaSuccess            = 0
	cudaErrorOutOfMemory   = 2
	cudaErrorNoDevice      = 100
	cudaErrorInsufficient  = 35 // CUDA_ERROR_INSUFFICIENT_DRIVER
	cudaErrorNotFound      = 500
	cudaErrorNotReady      = 600
	cudaErrorInvalidValue  = 1
	cudaErrorNotSupported  = 801
	cudaErrorNotPermitted  = 800
	cudaErrorSystemDriver  = 803 // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
	cudaErrorCompatNotSupp = 804 // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
)

// Error is a failed CUDA driver call: the call's name, the CUresult, and
// the names cuGetErrorName and cuGetErrorString give it.
type Error struct {
	Call    string // e.g. "cuMemAlloc"
	Code    int    // CUresult
	Name    string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Message string // e.g. "out of memory"
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.Message)
}

// Is matches ErrOutOfMemory for CUDA_ERROR_OUT_OF_MEMORY, ErrNoDevice
// for CUDA_ERROR_NO_DEVICE and the driver-mismatch results, and ErrSticky
// for the results that poison the context.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrSticky:
		return stickyResults[e.Code]
	case ErrOutOfMemory:
		return e.Code == cudaErrorOutOfMemory
	case ErrNoDevice:
		switch e.Code {
		case cudaErrorNoDevice, cudaErrorInsufficient, cudaErrorSystemDriver, cudaErrorCompatNotSupp:
			return true
		}
	}
	return false
}

// ErrorType is e's error.type (semconv.ErrorType): device_fault for the
// results of ErrSticky, out_of_memory, no_device for the results ErrNoDevice
// matches, else cuda. The CUresult's name stays in the message.
func (e *Error) ErrorType() string {
	switch {
	case e.Is(ErrSticky):
		return semconv.ErrorTypeDeviceFault
	case e.Is(ErrOutOfMemory):
		return semconv.ErrorTypeOutOfMemory
	case e.Is(ErrNoDevice):
		return semconv.ErrorTypeNoDevice
	}
	return semconv.ErrorTypeCUDA
}

// CompileError is a failed NVRTC compile: the nvrtcResult name and the
// compiler's log (file:line: error ...).
type CompileError struct {
	Module string // name given to Compile
	Call   string // e.g. "nvrtcCompileProgram"
	Result string // e.g. "NVRTC_ERROR_COMPILATION"
	Log    string
}

func (e *CompileError) Error() string {
	if e.Log == "" {
		return fmt.Sprintf("compile %s: %s: %s", e.Module, e.Call, e.Result)
	}
	return fmt.Sprintf("compile %s: %s: %s:\n%s", e.Module, e.Call, e.Result, e.Log)
}

// ErrorType is cuda, e's error.type (semconv.ErrorType).
func (e *CompileError) ErrorType() string { return semconv.ErrorTypeCUDA }
