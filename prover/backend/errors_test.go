package backend

import (
	"errors"
	"fmt"
	"testing"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// An unavailable backend is named once, with its reason once; errors.Is
// finds ErrUnavailable and the reason's sentinel, errors.As the
// UnavailableError, and its error.type is no_device.
func TestUnavailableNamesTheBackendOnce(t *testing.T) {
	noDevice := errors.New("no CUDA device")
	err := fmt.Errorf("GPU 1 (H100): %w", Unavailable("cuda", fmt.Errorf("%w: the driver reports 0 devices", noDevice)))
	if want := "GPU 1 (H100): cuda backend unavailable: no CUDA device: the driver reports 0 devices"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, noDevice) {
		t.Errorf("error %q: errors.Is finds ErrUnavailable %v, the reason %v; want both", err, errors.Is(err, ErrUnavailable), errors.Is(err, noDevice))
	}
	var u *UnavailableError
	if !errors.As(err, &u) || u.Backend != "cuda" || u.Reason.Error() != "no CUDA device: the driver reports 0 devices" {
		t.Errorf("errors.As: %+v", u)
	}
	if got := semconv.ErrorType(err); got != semconv.ErrorTypeNoDevice {
		t.Errorf("error.type %q, want %q", got, semconv.ErrorTypeNoDevice)
	}
	if got, want := NotBuiltIn("cuda").Error(), "cuda backend unavailable: not built into this binary (it registers from prover/gpu)"; got != want {
		t.Errorf("NotBuiltIn: %q, want %q", got, want)
	}
}
