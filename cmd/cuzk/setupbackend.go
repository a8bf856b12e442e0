package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/gpu/fixedbase"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
	"github.com/otelcuzk/otelcuzk/prover/setup"
)

// setupBackend is how `cuzk setup --backend NAME` makes missing keys:
// "cpu" is gnark's groth16.Setup, "cuda" prover/setup with the GPU's
// fixed-base multiplications on device 0, "auto" (or "") cuda when a
// device and NVRTC are usable, else cpu with one line on the notice
// writer saying why, as `cuzk prove` picks. The device is opened (its
// kernels compiled or loaded from the kernel cache) on the first setup,
// so a cached key costs no device start.
type setupBackend struct {
	name   string
	notice io.Writer
	engine *fixedbase.Engine
	used   string // the backend of the last setup: "cpu" or "cuda"
}

// newSetupBackend checks name. Errors: a name other than cpu, cuda, auto.
func newSetupBackend(name string, notice io.Writer) (*setupBackend, error) {
	switch name {
	case "cpu", "cuda", "auto", "":
		return &setupBackend{name: name, notice: notice}, nil
	}
	return nil, fmt.Errorf("--backend %q: want cpu, cuda or auto", name)
}

// Setup is the keycache.SetupFunc. Errors: for "cuda", the device's or the
// compile's; the setup's.
func (b *setupBackend) Setup(ctx context.Context, ccs constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
	if b.name != "cpu" && b.engine == nil {
		e, err := fixedbase.Open(ctx, 0)
		switch {
		case err == nil:
			b.engine = e
		case b.name == "cuda":
			return nil, nil, fmt.Errorf("setup backend cuda: %w", err)
		case errors.Is(err, cudaspans.ErrNoDevice) || errors.Is(err, cudaspans.ErrNoCompiler):
			fmt.Fprintf(b.notice, "backend auto: %v; using cpu\n", err)
			b.name = "cpu"
		default:
			return nil, nil, fmt.Errorf("setup backend auto: %w", err)
		}
	}
	if b.engine == nil {
		b.used = "cpu"
		return groth16.Setup(ccs)
	}
	b.used = "cuda"
	pk, vk, err := setup.Setup(ctx, ccs, setup.WithMultiplier(b.engine, "cuda"))
	if err != nil {
		return nil, nil, err
	}
	return pk, vk, nil
}

var _ keycache.SetupFunc = (*setupBackend)(nil).Setup

// Close releases the device, if one was opened.
func (b *setupBackend) Close() {
	if b.engine != nil {
		_ = b.engine.Close()
	}
}

// ephemeralKeys is `cuzk prove --ephemeral-keys`: the key cache options
// that make the request's keys in memory (setup, prove, verify, discard;
// no key file read or written), by the setup backend that matches the
// prove's --backend (cpu: gnark's groth16.Setup; cuda and auto: the GPU's
// when usable). Without the flag it returns nothing. closeFn releases the
// setup's device.
func ephemeralKeys(on bool, backend string, notice io.Writer) (opts []keycache.Option, b *setupBackend, err error) {
	if !on {
		return nil, nil, nil
	}
	if b, err = newSetupBackend(backend, notice); err != nil {
		return nil, nil, err
	}
	return []keycache.Option{keycache.WithSetup(b.Setup), keycache.WithEphemeralKeys()}, b, nil
}
