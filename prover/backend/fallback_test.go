package backend

import (
	"errors"
	"fmt"
	"testing"
)

// The fallback line names the reason once: the chain of wrappers each
// adding its package's prefix, and dlopen's repeated library name, read
// "backend auto: cuda backend: backend unavailable: cuda: no CUDA device:
// dlopen libcuda.so.1: libcuda.so.1: cannot open ...".
func TestFallbackNoticeNamesTheReasonOnce(t *testing.T) {
	noDevice := errors.New("no CUDA device")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("cuda backend: %w", fmt.Errorf("%w: cuda: %w", ErrUnavailable,
			fmt.Errorf("%w: dlopen libcuda.so.1: libcuda.so.1: cannot open shared object file: No such file or directory", noDevice))),
			"backend auto: cuda unavailable (no CUDA device: dlopen libcuda.so.1: cannot open shared object file: No such file or directory); using cpu"},
		{fmt.Errorf("fixedbase: %w", fmt.Errorf("%w: dlopen libcuda.so.1: libcuda.so.1: cannot open shared object file", noDevice)),
			"backend auto: cuda unavailable (no CUDA device: dlopen libcuda.so.1: cannot open shared object file); using cpu"},
		{fmt.Errorf("%w: the driver reports 0 devices", noDevice),
			"backend auto: cuda unavailable (no CUDA device: the driver reports 0 devices); using cpu"},
		{fmt.Errorf("%w: cuda backend not built into this binary (it registers from prover/gpu)", ErrUnavailable),
			"backend auto: cuda unavailable (cuda backend not built into this binary (it registers from prover/gpu)); using cpu"},
		// An UnavailableError gives its Reason, whatever wraps it.
		{fmt.Errorf("GPU 0 (H100): %w", Unavailable("cuda", fmt.Errorf("%w: dlopen libcuda.so.1: libcuda.so.1: cannot open shared object file", noDevice))),
			"backend auto: cuda unavailable (no CUDA device: dlopen libcuda.so.1: cannot open shared object file); using cpu"},
		{NotBuiltIn("cuda"), "backend auto: cuda unavailable (not built into this binary (it registers from prover/gpu)); using cpu"},
	} {
		if got := FallbackNotice(c.err); got != c.want {
			t.Errorf("FallbackNotice(%q)\n = %q\nwant %q", c.err, got, c.want)
		}
	}
}
