package cpu

import (
	"context"
	"fmt"
	"sync"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// BatchAddG1 implements backend.BatchAdder with Jacobian mixed additions
// (gnark-crypto's G1Jac.AddMixed, total on infinity, P + P and P + (−P))
// over NumCPU chunks of idx in parallel, the chunks' sums added at the end.
func (c *Backend) BatchAddG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], idx []uint32) (curve.G1Jac, error) {
	return cpuBatchAdd[curve.G1Affine, curve.G1Jac](c, ctx, call.Span, bases.Points, idx)
}

// BatchAddG2 implements backend.BatchAdder on G2 as BatchAddG1.
func (c *Backend) BatchAddG2(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G2Affine], idx []uint32) (curve.G2Jac, error) {
	return cpuBatchAdd[curve.G2Affine, curve.G2Jac](c, ctx, call.Span, bases.Points, idx)
}

// batchChunk is the least work one goroutine of a batch addition takes.
const batchChunk = 1 << 14

func cpuBatchAdd[A any, J any, PJ interface {
	*J
	AddMixed(*A) *J
	AddAssign(*J) *J
}](c *Backend, ctx context.Context, name string, bases []A, idx []uint32) (res J, err error) {
	if c == nil {
		return res, fmt.Errorf("%s: %w", name, errNilCPU)
	}
	_, span := c.tracer.Start(ctx, name, trace.WithAttributes(
		semconv.KeyMSMSize.Int(len(idx)), semconv.KeyBackend.String("cpu")))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	var inf J // G1Jac's zero value is not infinity: start from X = Y = 1, Z = 0
	setInfinity(&inf)
	for _, i := range idx {
		if int(i) >= len(bases) {
			return inf, fmt.Errorf("%s: wire index %d of %d bases", name, i, len(bases))
		}
	}
	tasks := max(1, min(c.nbCPU, len(idx)/batchChunk))
	parts := make([]J, tasks)
	var wg sync.WaitGroup
	for t := range tasks {
		lo, hi := len(idx)*t/tasks, len(idx)*(t+1)/tasks
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := inf
			for _, i := range idx[lo:hi] {
				PJ(&acc).AddMixed(&bases[i])
			}
			parts[t] = acc
		}()
	}
	wg.Wait()
	res = inf
	for t := range parts {
		PJ(&res).AddAssign(&parts[t])
	}
	return res, nil
}

// setInfinity sets a G1Jac or G2Jac to the point at infinity.
func setInfinity[J any](p *J) {
	switch q := any(p).(type) {
	case *curve.G1Jac:
		q.FromAffine(&curve.G1Affine{})
	case *curve.G2Jac:
		q.FromAffine(&curve.G2Affine{})
	}
}
