package backend

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
)

// Options are what a backend factory is given.
type Options struct {
	// DeviceOrdinal selects the GPU for device backends (0-based).
	DeviceOrdinal int
	// Releaser frees the backend's large buffers (pinned, device) in its
	// release mode, as buffer.release spans; nil means synchronously
	// (buffer.OrSync on TracerProvider).
	Releaser *buffer.Releaser
	// TracerProvider records the backend's spans; nil means the global one.
	TracerProvider trace.TracerProvider
	// Device tunes a device backend (the CPU has nothing to tune and
	// ignores it); the zero value is the backend's default.
	Device DeviceSettings
}

// Factory opens a backend. Its error names the backend once, as
// prover.New passes it on unwrapped: a factory whose hardware is missing
// returns an *UnavailableError (Unavailable: "cuda backend unavailable:
// REASON", wrapping ErrUnavailable), any other error starts with the
// backend's name ("cuda backend: REASON").
type Factory func(ctx context.Context, opts Options) (Backend, error)

var (
	backendsMu sync.Mutex
	backends   = map[string]Factory{}
)

// Register makes a backend available under name ("cpu", "cuda") to
// prover.New and Lookup. Device backends register from their
// package's init, so a binary has the CUDA backend exactly when it imports
// prover/gpu. It panics if name is registered twice.
func Register(name string, f Factory) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic("backend: registered twice: " + name)
	}
	backends[name] = f
}

// NotBuiltIn is the error for a backend name nothing registered, an
// *UnavailableError: "cuda backend unavailable: not built into this binary
// (it registers from prover/gpu)".
func NotBuiltIn(name string) error {
	return Unavailable(name, errNotBuiltIn)
}

var errNotBuiltIn = errors.New("not built into this binary (it registers from prover/gpu)")

// Lookup returns the factory registered under name.
func Lookup(name string) (Factory, bool) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	f, ok := backends[name]
	return f, ok
}
