package backend

import (
	"context"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel/attribute"
)

// BaseSet is a fixed vector of MSM bases from a proving key. ID names it
// uniquely and stably (hash of the constraint system plus the key part, e.g.
// "3f2a…:g1.a"), so a backend may keep it resident across proofs (cuzk's
// hot tier of the SRS). ID is "" when the caller has no stable identity
// for the key (groth16.Prove without WithKeyID): such a set must not be kept
// resident, since another key may later come with the same "" ID.
type BaseSet[P any] struct {
	ID     string
	Points []P
}

// Call is what one MSM call carries beside its bases and scalars, passed
// explicitly by the prove to its backend, and by the CUDA backend on to
// prover/gpu/msm as it is.
type Call struct {
	// Span is the span to record (semconv.SpanMSMG1A, ...); "" records
	// the MSM's copies and kernels as children of the span in ctx.
	Span string
	// KeyID is the proof's key (groth16.WithKeyID; "" without one, or
	// outside a proof). With a KeyID the CUDA backend's MSM workspace is
	// that key's proof buffer (msm.DeviceBases.ProofBuffer), kept for the
	// key's next proof.
	KeyID string
	// Attributes are added to Span: the cuzk.msm.scalars.* counts of the
	// scalars of the wire MSMs (groth16.ScalarCounts.Attributes), nil for
	// the others.
	Attributes []attribute.KeyValue
	// Late, when not nil, returns attributes known only once the MSM is
	// under way: the prover counts the wire MSMs' scalars in [2, 2^64)
	// (cuzk.msm.scalars.small, a Montgomery reduction a scalar) beside
	// the MSM instead of holding the device for it. A backend that
	// records Span calls Late once, after its work, and adds what it
	// returns before ending the span; Late may block until the count is
	// done. A backend may ignore it (the prover waits for its counts
	// before it releases the scalars either way).
	Late func() []attribute.KeyValue
	// FromComputeH says the scalars are a prefix of the a that the last
	// ComputeH of this KeyID returned (the coefficients of H), unchanged
	// since. A backend that kept H on its device after ComputeH (the CUDA
	// backend) then reads them there instead of copying them from the
	// host again; any other backend ignores it. The prover sets it for
	// msm.g1.h only.
	FromComputeH bool
}

// Backend runs the heavy steps of the Groth16 prover (DESIGN.md, Backends).
// The prove algorithm (prover/groth16) calls them; the CPU backend uses
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
	// keyID is the proof's key (groth16.WithKeyID; "" without one), for
	// a backend that keeps per-key state beside the resident bases (the
	// CUDA backend's device buffers, sized by the first proof of a key and
	// reused by the next).
	ComputeH(ctx context.Context, keyID string, domain *fft.Domain, a, b, c []fr.Element) error

	// MSMG1 returns Σ scalars[i]·bases.Points[i] (len(scalars) ==
	// len(bases.Points)); call.Span is the span name to record (msm.g1.a,
	// ...), with call.Attributes among its attributes.
	MSMG1(ctx context.Context, call Call, bases BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error)

	// MSMG2 is MSMG1 on G2 (msm.g2.b).
	MSMG2(ctx context.Context, call Call, bases BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error)

	// Close releases what the backend holds (device memory, resident bases).
	Close() error
}

// KeyPreparer is an optional interface of a Backend that keeps state per
// proving key (resident bases, device buffers). prover.Prover calls PrepareKey
// when it loads a circuit's keys, with the key ID its proofs carry
// (groth16.WithKeyID: keycache.Keys.Hash) and the BLS12-381 proving key, so the
// key's first proof finds that state made and allocates nothing.
//
// The CUDA backend uploads the key's base sets and allocates its proof
// buffers, the NTT tables of its domain and its pinned scalar buffer
// there. An error leaves the key usable: its first proof makes what is
// missing, as it would without PrepareKey (the Prover records the error as
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

// BatchAdder is an optional interface of a Backend that sums a subset of a
// base set without scalars: the batch addition of the bit split
// (groth16.BitSplit). Both the CPU backend (prover/cpu) and the CUDA
// backend (prover/gpu) implement it; for another Backend, the prove sums
// the bits with the CPU backend's.
type BatchAdder interface {
	// BatchAddG1 returns Σ bases.Points[idx[i]] over i; call.Span is the
	// span to record (msm.g1.a.batch_add, ...), with cuzk.msm.size =
	// len(idx); call.KeyID the proof's key. An index out of range is an
	// error naming it.
	BatchAddG1(ctx context.Context, call Call, bases BaseSet[curve.G1Affine], idx []uint32) (curve.G1Jac, error)
	// BatchAddG2 is BatchAddG1 on G2 (msm.g2.b.batch_add).
	BatchAddG2(ctx context.Context, call Call, bases BaseSet[curve.G2Affine], idx []uint32) (curve.G2Jac, error)
}

// BaseEvicter is implemented by backends that keep proving-key bases resident
// (the CUDA backend's hot tier): Prover.EvictCircuit calls EvictBases with the
// key's ID, the hash of its constraint system, so that the base sets whose
// BaseSet.ID starts with keyID + ":" leave the device.
type BaseEvicter interface {
	EvictBases(ctx context.Context, keyID string) error
}

// Warmer is an optional interface of a Backend that has work to do before
// its first proof (the CUDA backend compiles or loads its kernel modules).
// Warmup does it and returns when the backend is ready; a daemon reports
// NOT_SERVING until then. Safe to call more than once (later calls return
// at once); ctx ends the wait, not necessarily the work. Its error names
// the backend once, as a Factory's does ("cuda backend: warm-up: REASON"),
// so its callers add only what they know (the daemon its GPU).
type Warmer interface {
	Warmup(ctx context.Context) error
}
