package msm

import (
	"context"
	"errors"
	"fmt"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// The bases and the call of an MSM are prover/backend's BaseSet and Call,
// the types the prove passes to its backend: the CUDA backend hands them
// on as they are.

// startCall starts call.Span, when set, as a child of the span in ctx with
// cuzk.msm.size n, cuzk.backend cuda, extra (a base set's ID) and
// call.Attributes; end adds call.Late's attributes, records err on it
// (semconv.SetError) and ends it.
// Without a Span it returns ctx and an end that does nothing, so the
// copies and kernels are children of the span in ctx.
func startCall(ctx context.Context, tracer trace.Tracer, call backend.Call, n int, extra ...attribute.KeyValue) (context.Context, func(error)) {
	if call.Span == "" {
		return ctx, func(error) {}
	}
	attrs := append([]attribute.KeyValue{semconv.KeyMSMSize.Int(n), semconv.KeyBackend.String("cuda")}, extra...)
	ctx, span := tracer.Start(ctx, call.Span, trace.WithAttributes(attrs...), trace.WithAttributes(call.Attributes...))
	return ctx, func(err error) {
		if call.Late != nil {
			span.SetAttributes(call.Late()...)
		}
		semconv.SetError(span, err)
		span.End()
	}
}

// The MSM methods below come in G1 and G2 pairs for callers; each pair is
// one generic path over the curve types (A the affine bases, J the
// Jacobian result, X the device's window sums), with g2 selecting the
// kernels, as the kernels are one template over the coordinate field.

// G1 returns Σ scalars[i]·bases[i] over the first len(scalars) points of a
// resident G1 base set (len(scalars) ≤ bases.Len()), on stream s.
//
// call.Span, when not empty, is the span to record (semconv.SpanMSMG1A,
// ...), with cuzk.msm.size, call.Attributes and the copies and kernels as
// children; with an empty Span they are children of the span in ctx. The
// scalars are gnark's Montgomery form and are converted on the GPU. The
// device workspace is call.KeyID's proof buffer of the set's DeviceBases
// when KeyID is set (kept for the key's next proof), else allocated per
// call and given back through the MSM's Releaser; either is split into
// chunks when the MSM does not fit.
//
// Errors: a length mismatch, a G2 set, an evicted base set, ErrTooLarge
// (wrapping cudaspans.ErrOutOfMemory), and driver errors naming the
// operation.
func (m *MSM) G1(ctx context.Context, call backend.Call, s *cudaspans.Stream, bases *ResidentBases, scalars []fr.Element) (curve.G1Jac, error) {
	return overResident[curve.G1Jac, *curve.G1Jac, msmXYZZ](m, ctx, call, s, false, bases, hostScalars(scalars))
}

// G2 is G1 on G2: Σ scalars[i]·bases[i] over a resident G2 base set
// (PreloadG2), the same kernels compiled for Fp2 coordinates (msm.cu with
// MSM_G2; loaded by Backend.Warmup, else compiled on the first G2 call, a
// cuda.compile span per module).
func (m *MSM) G2(ctx context.Context, call backend.Call, s *cudaspans.Stream, bases *ResidentBases, scalars []fr.Element) (curve.G2Jac, error) {
	return overResident[curve.G2Jac, *curve.G2Jac, msmXYZZ2](m, ctx, call, s, true, bases, hostScalars(scalars))
}

// overResident is G1 and G2.
func overResident[J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, call backend.Call, s *cudaspans.Stream, g2 bool,
	bases *ResidentBases, sc scalars) (J, error) {
	total := infinity[J, X]()
	if bases == nil {
		return total, errors.New("msm: nil base set")
	}
	if bases.g2 != g2 {
		return total, fmt.Errorf("msm: %s MSM over base set %s of %s points", groupName(g2), bases.ID(), groupName(bases.g2))
	}
	if sc.n > bases.Len() {
		return total, fmt.Errorf("msm: %d scalars for %d bases of %s", sc.n, bases.Len(), bases.ID())
	}
	ptr, release, err := bases.acquire()
	if err != nil {
		return total, err
	}
	defer release()
	return sum[J, PJ, X](m, ctx, call, s, g2, bases.owner, ptr, nil, sc)
}

// G1Resident is G1 over a proving-key base set kept in resident, a DeviceBases (the
// way the CUDA backend's MSMG1 should call it): the first call for set.ID
// uploads the points (a keys.preload span under the MSM's span), later
// calls reuse the device copy. len(scalars) ≤ len(set.Points).
//
// A set without an ID (a proof without a key ID) is never kept resident,
// as BaseSet says: it is G1Host over set.Points, the bases copied with
// each chunk and gone when the MSM ends.
func (m *MSM) G1Resident(ctx context.Context, call backend.Call, s *cudaspans.Stream, resident *DeviceBases,
	set backend.BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error) {
	return overDeviceBases[curve.G1Affine, curve.G1Jac, *curve.G1Jac, msmXYZZ](m, ctx, call, s, false, resident, set, hostScalars(scalars))
}

// G2Resident is G1Resident on G2 (the proving key's [B]₂ bases).
func (m *MSM) G2Resident(ctx context.Context, call backend.Call, s *cudaspans.Stream, resident *DeviceBases,
	set backend.BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error) {
	return overDeviceBases[curve.G2Affine, curve.G2Jac, *curve.G2Jac, msmXYZZ2](m, ctx, call, s, true, resident, set, hostScalars(scalars))
}

// G1ResidentOnDevice is G1Resident over n scalars that are already on
// the device at dev (n·32 bytes, fr.Element layout, Montgomery form),
// as prover/gpu's ComputeH leaves the coefficients of H: each chunk's
// scalars are copied into the workspace on the device (a cuda.memcpy.dtod
// span) instead of from the host. The caller keeps the memory at dev
// unchanged until the call returns. n ≤ len(set.Points); set needs an ID
// (a resident set). Errors as G1Resident's.
func (m *MSM) G1ResidentOnDevice(ctx context.Context, call backend.Call, s *cudaspans.Stream, resident *DeviceBases,
	set backend.BaseSet[curve.G1Affine], n int, dev cudaspans.DevicePtr) (curve.G1Jac, error) {
	if dev == 0 || n < 0 {
		return curve.G1Jac{}, fmt.Errorf("msm: %d scalars on the device at %#x", n, uint64(dev))
	}
	return overDeviceBases[curve.G1Affine, curve.G1Jac, *curve.G1Jac, msmXYZZ](m, ctx, call, s, false, resident, set, scalars{dev: dev, n: n})
}

// overDeviceBases is G1Resident and G2Resident.
func overDeviceBases[A any, J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, call backend.Call, s *cudaspans.Stream, g2 bool,
	resident *DeviceBases, set backend.BaseSet[A], sc scalars) (res J, err error) {
	if set.ID == "" {
		if sc.dev != 0 {
			return res, errors.New("msm: scalars on the device need a resident base set (an ID)")
		}
		return overHost[A, J, PJ, X](m, ctx, call, s, g2, set.Points, sc.host)
	}
	ctx, end := startCall(ctx, m.tracer, call, sc.n, semconv.KeyBaseSetID.String(set.ID))
	defer func() { end(err) }()
	if resident == nil {
		return res, errors.New("msm: nil DeviceBases")
	}
	for attempt := 0; ; attempt++ {
		rb, err := preloadSet(ctx, resident, s, set, g2)
		if err != nil {
			return res, err
		}
		res, err = overResident[J, PJ, X](m, ctx, backend.Call{KeyID: call.KeyID}, s, g2, rb, sc)
		if errors.Is(err, ErrBaseSetEvicted) && attempt == 0 {
			// Evicted between the upload and the MSM taking hold of it
			// (an EvictKeys call): upload it again, once.
			continue
		}
		return res, err
	}
}

// G1Host is G1 over bases in host memory: each chunk's bases are copied to
// the device with its scalars, so nothing stays resident. For proving-key
// bases prefer a DeviceBases set, uploaded once.
func (m *MSM) G1Host(ctx context.Context, call backend.Call, s *cudaspans.Stream, bases []curve.G1Affine, scalars []fr.Element) (curve.G1Jac, error) {
	return overHost[curve.G1Affine, curve.G1Jac, *curve.G1Jac, msmXYZZ](m, ctx, call, s, false, bases, scalars)
}

// G2Host is G1Host on G2.
func (m *MSM) G2Host(ctx context.Context, call backend.Call, s *cudaspans.Stream, bases []curve.G2Affine, scalars []fr.Element) (curve.G2Jac, error) {
	return overHost[curve.G2Affine, curve.G2Jac, *curve.G2Jac, msmXYZZ2](m, ctx, call, s, true, bases, scalars)
}

// overHost is G1Host and G2Host.
func overHost[A any, J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, call backend.Call, s *cudaspans.Stream, g2 bool,
	bases []A, scalars []fr.Element) (J, error) {
	if len(scalars) > len(bases) {
		return infinity[J, X](), fmt.Errorf("msm: %d scalars for %d bases", len(scalars), len(bases))
	}
	return sum[J, PJ, X](m, ctx, call, s, g2, nil, 0, cudaspans.AsBytes(bases[:len(scalars)]), hostScalars(scalars))
}

// sum runs the MSM (run) and adds its chunks' combined window sums.
func sum[J any, PJ jacobian[J], X windowSum[J]](m *MSM, ctx context.Context, call backend.Call, s *cudaspans.Stream, g2 bool,
	pool *DeviceBases, basesPtr cudaspans.DevicePtr, hostBases []byte, sc scalars) (J, error) {
	total := infinity[J, X]()
	err := m.run(ctx, call, s, g2, pool, basesPtr, hostBases, sc, func(wsums []byte, c int) {
		part := combineWindows[J, PJ](msmBytesAs[X](wsums), c)
		PJ(&total).AddAssign(&part)
	})
	return total, err
}
