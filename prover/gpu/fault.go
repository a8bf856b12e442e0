package gpu

import (
	"errors"
	"fmt"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// Fault returns the error that fenced the device off (wrapping
// backend.ErrDeviceFault and the sticky cudaspans.Error), or nil while the
// device is healthy. Safe to call concurrently.
func (b *Backend) Fault() error {
	if e := b.fault.Load(); e != nil {
		return *e
	}
	return nil
}

// checkFault turns a sticky CUDA error into a device fault: the device is
// fenced off (Fault) and the error wraps backend.ErrDeviceFault, so the
// engine takes the worker out of service and hands its proof to another.
// Other errors pass unchanged.
func (b *Backend) checkFault(err error) error {
	if err == nil || errors.Is(err, backend.ErrDeviceFault) || !errors.Is(err, cudaspans.ErrSticky) {
		return err
	}
	ordinal := -1
	if b.c != nil {
		ordinal = b.c.Device().Ordinal
	}
	f := fmt.Errorf("%w on cuda:%d: %w", backend.ErrDeviceFault, ordinal, err)
	b.fault.CompareAndSwap(nil, &f)
	return *b.fault.Load()
}
