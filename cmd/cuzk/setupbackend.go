package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
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
// so a cached key costs no device start (setup --backend cuda checks
// that a device is present, checkDevice, before its compile). Safe for
// concurrent use (the daemon's GPU pipelines share one).
type setupBackend struct {
	mu     sync.Mutex
	name   string
	notice io.Writer
	engine *fixedbase.Engine
	used   string // the backend of the last setup: "cpu" or "cuda"
}

// newSetupBackend checks name. Errors: prover.ErrUnknownBackend for a
// name other than cpu, cuda, auto.
func newSetupBackend(name string, notice io.Writer) (*setupBackend, error) {
	switch name {
	case "cpu", "cuda", "auto", "":
		return &setupBackend{name: name, notice: notice}, nil
	}
	return nil, fmt.Errorf("--backend %q: %w", name, prover.ErrUnknownBackend)
}

// checkDevice returns, for "cuda", the error of a host without a usable
// CUDA device (cudaspans.Devices: no driver, no device), before a compile
// that would be wasted: the device itself is opened on the first setup.
// Other backends: nil.
func (b *setupBackend) checkDevice() error {
	if b.name != "cuda" {
		return nil
	}
	if _, err := cudaspans.Devices(); err != nil {
		return fmt.Errorf("setup backend cuda: %w", err)
	}
	return nil
}

// backendHint is err, when it says the backend asked for cannot run here
// (backend.ErrUnavailable, cudaspans.ErrNoDevice or ErrNoCompiler), with
// what to do instead, for the command's one line; else err.
func backendHint(err error) error {
	if errors.Is(err, backend.ErrUnavailable) || errors.Is(err, cudaspans.ErrNoDevice) || errors.Is(err, cudaspans.ErrNoCompiler) {
		return fmt.Errorf("%w; use --backend cpu, or --backend auto to fall back to the CPU", err)
	}
	return err
}

// Setup is the keycache.SetupFunc. Errors: for "cuda", the device's or the
// compile's; the setup's.
func (b *setupBackend) Setup(ctx context.Context, ccs constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
	engine, err := b.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	if engine == nil {
		return groth16.Setup(ccs)
	}
	return setup.Setup(ctx, ccs, setup.WithMultiplier(engine, "cuda"))
}

// open returns the device's engine, opening it on the first call, or nil
// when the setup runs on the CPU; it records which in used.
func (b *setupBackend) open(ctx context.Context) (*fixedbase.Engine, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.name != "cpu" && b.engine == nil {
		e, err := fixedbase.Open(ctx, 0)
		switch {
		case err == nil:
			b.engine = e
		case b.name == "cuda":
			return nil, fmt.Errorf("setup backend cuda: %w", err)
		case errors.Is(err, cudaspans.ErrNoDevice) || errors.Is(err, cudaspans.ErrNoCompiler):
			fmt.Fprintln(b.notice, backend.FallbackNotice(err))
			b.name = "cpu"
		default:
			return nil, fmt.Errorf("setup backend auto: %w", err)
		}
	}
	if b.engine == nil {
		b.used = "cpu"
		return nil, nil
	}
	b.used = "cuda"
	return b.engine, nil
}

var _ keycache.SetupFunc = (*setupBackend)(nil).Setup

// Close releases the device, if one was opened.
func (b *setupBackend) Close() {
	if b.engine != nil {
		_ = b.engine.Close()
	}
}
