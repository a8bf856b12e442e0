package prover

import (
	"context"
	"sync"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
)

// BaseSet is a fixed vector of MSM bases from a proving key. ID names it
// uniquely and stably (hash of the constraint system plus the key part, e.g.
// "3f2a…:g1.a"), so a backend may keep it resident across proofs (cuzk's
// hot tier of the SRS). ID is "" when the caller has no stable identity
// for the key (prover.Prove without WithKeyID): such a set must not be kept
// resident, since another key may later come with the same "" ID.
type BaseSet[P any] struct {
	ID     string
	Points []P
}

// Backend runs the heavy steps of the Groth16 prover (DESIGN.md, Backends).
// The prove algorithm in this package calls them; the CPU backend uses
// gnark-crypto, the CUDA backend (prover/gpu) its own kernels. A Backend is
// safe for concurrent use by one prove at a time per device; the algorithm
// may run the MSMs of one proof concurrently.
//
// Every method records its own spans as children of the span in ctx.
// Scalars and points are gnark-crypto values in Montgomery form.
type Backend interface {
	// Name is "cpu" or "cuda" (the cuzk.backend attribute).
	Name() string

	// ComputeH computes the quotient H = (A·B − C)/Z of Groth16 (DIZK,
	// eprint 2018/691, fig. 4) in place: a, b and c hold the evaluations of
	// the R1CS on the domain (each of length domain.Cardinality, padded with
	// zeros by the caller); on return a holds the coefficients of H in
	// bit-reversed order, exactly as gnark's computeH returns them and as
	// the proving key's [Zᵢ]₁ bases expect, and b, c are scratch. It follows
	// gnark's computeH: inverse NTT (DIF: natural in, bit-reversed out),
	// coset NTT (DIT: bit-reversed in, natural out), pointwise
	// (a·b − c)/(gⁿ − 1), inverse coset NTT (DIF), so no bit-reversal pass
	// is needed.
	// The caller records the groth16.compute_h span around the call; the
	// backend records its steps (ntt.inverse, ntt.coset,
	// groth16.pointwise, ntt.inverse_coset, copies) as its children.
	ComputeH(ctx context.Context, domain *fft.Domain, a, b, c []fr.Element) error

	// MSMG1 returns Σ scalars[i]·bases.Points[i] (len(scalars) ==
	// len(bases.Points)); span is the span name to record (msm.g1.a, ...),
	// with MSMScalarAttributes(ctx) among its attributes.
	MSMG1(ctx context.Context, span string, bases BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error)

	// MSMG2 is MSMG1 on G2 (msm.g2.b).
	MSMG2(ctx context.Context, span string, bases BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error)

	// Close releases what the backend holds (device memory, resident bases).
	Close() error
}

// KeyPreparer is an optional interface of a Backend that keeps state per
// proving key (resident bases, device buffers). Pipeline calls PrepareKey
// when it loads a circuit's keys, with the key ID its proofs carry
// (WithKeyID: keycache.Keys.Hash) and the BLS12-381 proving key, so the
// key's first proof finds that state made and allocates nothing.
//
// The CUDA backend uploads the key's base sets and allocates its proof
// buffers, the NTT tables of its domain and its pinned scalar buffer
// there. An error leaves the key usable: its first proof makes what is
// missing, as it would without PrepareKey (Pipeline records the error as
// an event on the span in its ctx and loads the circuit all the same).
// Its spans (keys.preload, cuda.malloc, ...) are children of ctx's.
type KeyPreparer interface {
	PrepareKey(ctx context.Context, keyID string, pk groth16.ProvingKey) error
}

// ProofScoper is an optional interface of a Backend that owns a device for
// the length of one proof. ProveAssignment calls BeginProof after the
// groth16.prove span starts and before the first backend call, passes the
// returned context to every backend call of that proof, and calls the end
// function once the last device work of the proof (the MSMs) has
// returned, before groth16.prove ends, on success and on error alike.
//
// The CUDA backend waits for the device there (a gpu.lock span), opens a
// device session, and its end function emits gpu.total (first to last
// device operation of the proof, GPU clock) as a child of groth16.prove
// and gives the device back. The end function's error is the session's
// (synchronizing the device); calling it twice is a no-op.
type ProofScoper interface {
	BeginProof(ctx context.Context) (context.Context, func() error)
}

// BackendOptions are what a backend factory is given.
type BackendOptions struct {
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

// DeviceSettings tune how a device backend works, in the backend's own
// words; its factory refuses values it does not know (the CUDA backend:
// gpu.CheckDeviceSettings). cmd/cuzk fills them from CUZK_CUDA_HOST_COPY
// and CUZK_CUDA_MSM_G2, the one place those are read.
type DeviceSettings struct {
	// HostCopy is how host vectors reach the device and come back:
	// "staged" (through pinned staging memory; "" is this default),
	// "register" (pinned in place per call) or "pageable".
	HostCopy string
	// MSMG2 is where the G2 MSM runs: "gpu" ("" is this default) or
	// "cpu" (gnark-crypto, overlapping the device's G1 work).
	MSMG2 string
}

// BackendFactory opens a backend. A factory whose hardware is missing
// returns an error wrapping ErrBackendUnavailable that says why in one line.
type BackendFactory func(ctx context.Context, opts BackendOptions) (Backend, error)

var (
	backendsMu sync.Mutex
	backends   = map[string]BackendFactory{}
)

// RegisterBackend makes a backend available under name ("cpu", "cuda") to
// NewPipeline and LookupBackend. Device backends register from their
// package's init, so a binary has the CUDA backend exactly when it imports
// prover/gpu. It panics if name is registered twice.
func RegisterBackend(name string, f BackendFactory) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic("prover: backend registered twice: " + name)
	}
	backends[name] = f
}

// LookupBackend returns the factory registered under name.
func LookupBackend(name string) (BackendFactory, bool) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	f, ok := backends[name]
	return f, ok
}

type proofKeyIDKey struct{}

// ProofKeyID returns the key ID (WithKeyID) of the proof that a backend
// call's ctx belongs to: ProveAssignment puts it in the ctx of every
// backend call, for backends that keep per-key state beside the resident
// bases (the CUDA backend's device buffers, sized by the first proof of a
// key and reused by the next). "" outside ProveAssignment or without
// WithKeyID.
func ProofKeyID(ctx context.Context) string {
	id, _ := ctx.Value(proofKeyIDKey{}).(string)
	return id
}
