package cudaspans

import (
	"errors"
	"fmt"
	"testing"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

func TestStickyResultsMatchErrSticky(t *testing.T) {
	for code, want := range map[int]bool{700: true, 719: true, 214: true, 999: true, 46: true,
		2: false, 1: false, 100: false, 500: false, 600: false} {
		err := fmt.Errorf("msm: %w", &Error{Call: "cuStreamSynchronize", Code: code, Name: "X", Message: "m"})
		if got := errors.Is(err, ErrSticky); got != want {
			t.Errorf("CUresult %d: errors.Is(ErrSticky) = %v, want %v", code, got, want)
		}
	}
	if errors.Is(&Error{Code: 700}, ErrOutOfMemory) || errors.Is(&Error{Code: 2}, ErrSticky) {
		t.Error("out of memory and sticky errors are told apart")
	}
}

func TestCUDAErrorsHaveTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&Error{Call: "cuStreamSynchronize", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}, semconv.ErrorTypeDeviceFault},
		{&Error{Call: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}, semconv.ErrorTypeOutOfMemory},
		{&Error{Call: "cuInit", Code: 100, Name: "CUDA_ERROR_NO_DEVICE"}, semconv.ErrorTypeNoDevice},
		{&Error{Call: "cuInit", Code: 35, Name: "CUDA_ERROR_INSUFFICIENT_DRIVER"}, semconv.ErrorTypeNoDevice},
		{&Error{Call: "cuLaunchKernel", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE"}, semconv.ErrorTypeCUDA},
		{&CompileError{Module: "msm", Call: "nvrtcCompileProgram", Result: "NVRTC_ERROR_COMPILATION"}, semconv.ErrorTypeCUDA},
		{fmt.Errorf("%w: libcuda.so.1: not found", ErrNoDevice), semconv.ErrorTypeNoDevice},
		{fmt.Errorf("compile: %w", ErrNoCompiler), semconv.ErrorTypeCUDA},
		{fmt.Errorf("chunk: %w", ErrOutOfMemory), semconv.ErrorTypeOutOfMemory},
		{ErrSticky, semconv.ErrorTypeDeviceFault},
	} {
		if got := semconv.ErrorType(fmt.Errorf("msm: %w", tc.err)); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
