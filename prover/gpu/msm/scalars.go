package msm

import (
	"context"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// scalarBytes is the size of one scalar, an fr.Element in Montgomery form,
// on the host and on the device (fr_t).
const scalarBytes = 32

// scalars are an MSM's n scalars (fr.Element layout, Montgomery form): in
// host memory (host), or already on the device (dev, n·32 bytes), as
// prover/gpu's ComputeH leaves H for the H MSM. Either way each chunk's
// scalars are copied into the workspace, where the digit kernels read them
// (from the host: cuda.memcpy.htod; on the device: cuda.memcpy.dtod).
type scalars struct {
	host []fr.Element
	dev  cudaspans.DevicePtr
	n    int
}

func hostScalars(v []fr.Element) scalars { return scalars{host: v, n: len(v)} }

// slice returns scalars [start, start+k).
func (sc scalars) slice(start, k int) scalars {
	if sc.dev != 0 {
		return scalars{dev: sc.dev + cudaspans.DevicePtr(start*scalarBytes), n: k}
	}
	return hostScalars(sc.host[start : start+k])
}

// copyTo enqueues the copy of the scalars to dst on s.
func (sc scalars) copyTo(ctx context.Context, s *cudaspans.Stream, dst cudaspans.DevicePtr) error {
	if sc.dev != 0 {
		return s.CopyDtoD(ctx, dst, sc.dev, sc.n*scalarBytes)
	}
	return cudaspans.HtoD(ctx, s, dst, sc.host)
}
