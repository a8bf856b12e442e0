package prover

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// BatchAdder is an optional interface of a Backend that sums a subset of a
// base set without scalars: the batch addition of the bit split. Both the
// CPU backend and the CUDA backend (prover/gpu) implement it; for another
// Backend, ProveAssignment sums the bits with the CPU backend's methods.
type BatchAdder interface {
	// BatchAddG1 returns Σ bases.Points[idx[i]] over i; span is the span
	// to record (msm.g1.a.batch_add, ...), with cuzk.msm.size = len(idx).
	// An index out of range is an error naming it.
	BatchAddG1(ctx context.Context, span string, bases BaseSet[curve.G1Affine], idx []uint32) (curve.G1Jac, error)
	// BatchAddG2 is BatchAddG1 on G2 (msm.g2.b.batch_add).
	BatchAddG2(ctx context.Context, span string, bases BaseSet[curve.G2Affine], idx []uint32) (curve.G2Jac, error)
}

// BitSplit says when the MSMs over wire values (msm.g1.a, msm.g1.b,
// msm.g1.k, msm.g2.b) are split by the value of each wire: the wires equal
// to 0 are skipped, those equal to 1 are summed by batch addition of their
// bases (BatchAdder; a child span NAME.batch_add), and only the rest go
// through Pippenger (the backend's MSM with the 0 and 1 scalars set to 0,
// whose digits make no bucket entry; a child span NAME.tail). The split is
// made per proof from the witness, while H is computed.
type BitSplit int

const (
	// BitSplitOff never splits: every MSM is one Pippenger MSM (the
	// default). On the H200 the split measured slower than Pippenger alone
	// (bench/bitsplit.md): the GPU's Pippenger drops the zero digits and
	// sums the ones in one bucket already, and the tail still pays the
	// digit and sort passes over every wire.
	BitSplitOff BitSplit = iota
	// BitSplitAuto splits an MSM when at least BitSplitMinOnes of its
	// scalars are 1: below that, a batch addition's launches and passes
	// cost more than the bits it takes out of Pippenger.
	BitSplitAuto
	// BitSplitOn splits every MSM with at least one scalar equal to 1.
	BitSplitOn
)

// BitSplitMinOnes is the fewest scalars equal to 1 for which BitSplitAuto
// splits an MSM.
const BitSplitMinOnes = 1 << 12

// String returns "auto", "off" or "on".
func (b BitSplit) String() string {
	switch b {
	case BitSplitAuto:
		return "auto"
	case BitSplitOff:
		return "off"
	case BitSplitOn:
		return "on"
	}
	return fmt.Sprintf("BitSplit(%d)", int(b))
}

// ParseBitSplit parses "off" (or ""), "auto" or "on".
func ParseBitSplit(s string) (BitSplit, error) {
	switch s {
	case "auto":
		return BitSplitAuto, nil
	case "", "off":
		return BitSplitOff, nil
	case "on":
		return BitSplitOn, nil
	}
	return 0, fmt.Errorf("bit split %q (want off, auto or on)", s)
}

// bitSplitOption is WithBitSplit's option, read by ProveAssignment and by
// NewPipeline (which passes it to the proves it runs).
type bitSplitOption BitSplit

func (o bitSplitOption) applyProve(c *config)    { c.bitSplit = BitSplit(o) }
func (o bitSplitOption) applyPipeline(c *config) { c.bitSplit = BitSplit(o) }

// WithBitSplit sets when the wire MSMs are split by bit value (BitSplit;
// default BitSplitOff). Read by Prove, ProveAssignment and NewPipeline.
func WithBitSplit(b BitSplit) interface {
	ProveOption
	PipelineOption
} {
	return bitSplitOption(b)
}

// wants reports whether an MSM whose scalars have counts c is split.
func (b BitSplit) wants(c ScalarCounts) bool {
	switch b {
	case BitSplitOn:
		return c.One > 0
	case BitSplitAuto:
		return c.One >= BitSplitMinOnes
	}
	return false
}

// takeOnes returns the indexes of the scalars equal to 1, in order, and
// sets those scalars to 0 in place, so that the rest is the tail MSM's
// scalar vector: one pass in chunks on GOMAXPROCS goroutines. 1 is found
// by comparing the Montgomery form (no arithmetic).
func takeOnes(scalars []fr.Element) []uint32 {
	n := len(scalars)
	tasks := max(1, min(runtime.GOMAXPROCS(0), (n+scalarChunk-1)/scalarChunk))
	parts := make([][]uint32, tasks)
	var wg sync.WaitGroup
	for t := range tasks {
		lo, hi := n*t/tasks, n*(t+1)/tasks
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := fr.One()
			var idx []uint32
			for i := lo; i < hi; i++ {
				if scalars[i] == one {
					idx = append(idx, uint32(i))
					scalars[i] = fr.Element{}
				}
			}
			parts[t] = idx
		}()
	}
	wg.Wait()
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	out := make([]uint32, 0, total)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// wireMSM is one MSM over wire values and what the bit split made of it:
// ones is nil when it is not split.
type wireMSM struct {
	counts ScalarCounts
	ones   []uint32
}

// tailCounts are the counts of the tail's scalars: the ones are zeros now.
func (w wireMSM) tailCounts() ScalarCounts {
	c := w.counts
	c.Zero += c.One
	c.One = 0
	return c
}

// splitMSM runs an MSM over wire values as one span name: unsplit, the
// backend's MSM records it itself; split, it is the parent of
// name.batch_add (Σ of the bases of the wires equal to 1) and name.tail
// (the backend's MSM over the other scalars), with cuzk.msm.size, the
// scalar counts, cuzk.msm.batch_add.points and cuzk.msm.tail.points.
func splitMSM[A any, J any, PJ interface {
	*J
	AddAssign(*J) *J
}](p *proving, ctx context.Context, name string, bases BaseSet[A], scalars []fr.Element, w wireMSM,
	msm func(context.Context, string, BaseSet[A], []fr.Element) (J, error),
	batch func(context.Context, string, BaseSet[A], []uint32) (J, error)) (res J, err error) {
	if w.ones == nil {
		return msm(withScalarCounts(ctx, w.counts), name, bases, scalars)
	}
	tail := w.counts.Total - w.counts.Zero - w.counts.One
	ctx, span := p.cfg.tracer().Start(ctx, name, trace.WithAttributes(
		semconv.KeyMSMSize.Int(len(scalars)),
		semconv.KeyBackend.String(p.backend.Name()),
		semconv.KeyMSMBatchAddPoints.Int(len(w.ones)),
		semconv.KeyMSMTailPoints.Int(tail),
	), trace.WithAttributes(w.counts.Attributes()...))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	ones, err := batch(ctx, name+semconv.SpanSuffixBatchAdd, bases, w.ones)
	if err != nil {
		return res, err
	}
	res, err = msm(withScalarCounts(ctx, w.tailCounts()), name+semconv.SpanSuffixTail, bases, scalars)
	if err != nil {
		return res, err
	}
	PJ(&res).AddAssign(&ones)
	return res, nil
}

// batchAdder returns the backend's BatchAdder, or the CPU backend's.
func (p *proving) batchAdder() BatchAdder {
	if b, ok := p.backend.(BatchAdder); ok {
		return b
	}
	return NewCPU(p.cfg.tp)
}

// BatchAddG1 implements BatchAdder with Jacobian mixed additions
// (gnark-crypto's G1Jac.AddMixed, total on infinity, P + P and P + (−P))
// over NumCPU chunks of idx in parallel, the chunks' sums added at the end.
func (c *CPU) BatchAddG1(ctx context.Context, span string, bases BaseSet[curve.G1Affine], idx []uint32) (curve.G1Jac, error) {
	return cpuBatchAdd[curve.G1Affine, curve.G1Jac](c, ctx, span, bases.Points, idx)
}

// BatchAddG2 implements BatchAdder on G2 as BatchAddG1.
func (c *CPU) BatchAddG2(ctx context.Context, span string, bases BaseSet[curve.G2Affine], idx []uint32) (curve.G2Jac, error) {
	return cpuBatchAdd[curve.G2Affine, curve.G2Jac](c, ctx, span, bases.Points, idx)
}

func cpuBatchAdd[A any, J any, PJ interface {
	*J
	AddMixed(*A) *J
	AddAssign(*J) *J
}](c *CPU, ctx context.Context, name string, bases []A, idx []uint32) (res J, err error) {
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
	tasks := max(1, min(c.nbCPU, len(idx)/scalarChunk))
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

// split counts the scalars of one wire MSM by kind and, when the proof's
// BitSplit wants it, takes the wires equal to 1 out of scalars (set to 0
// in place) as the batch addition's indexes.
func (p *proving) split(scalars []fr.Element) wireMSM {
	w := wireMSM{counts: CountScalars(scalars)}
	if p.cfg.bitSplit.wants(w.counts) {
		w.ones = takeOnes(scalars)
	}
	return w
}
