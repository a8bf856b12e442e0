package groth16

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// BitSplit says when the MSMs over wire values (msm.g1.a, msm.g1.b,
// msm.g1.k, msm.g2.b) are split by the value of each wire: the wires equal
// to 0 are skipped, those equal to 1 are summed by batch addition of their
// bases (backend.BatchAdder; a child span NAME.batch_add), and only the rest go
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

// WithBitSplit sets when the wire MSMs are split by bit value (BitSplit;
// default BitSplitOff). Read by Prove and ProveAssignment
// (prover.WithBitSplit passes it from a Prover).
func WithBitSplit(b BitSplit) ProveOption {
	return proveOption(func(c *config) { c.bitSplit = b })
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
	counts ScalarCounts // Total, Zero and One; Small comes from small
	ones   []uint32
	small  func() int // the scalars in [2, 2^64), counted beside the MSM; blocks until known
}

// zeroOneAttributes are the counts known before the MSM starts.
func (c ScalarCounts) zeroOneAttributes() []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.KeyMSMScalarsZero.Int(c.Zero),
		semconv.KeyMSMScalarsOne.Int(c.One),
	}
}

// late returns cuzk.msm.scalars.small once counted (backend.Call.Late).
func (w wireMSM) late() []attribute.KeyValue {
	if w.small == nil {
		return nil
	}
	return []attribute.KeyValue{semconv.KeyMSMScalarsSmall.Int(w.small())}
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
}](p *proving, ctx context.Context, name, keyID string, bases backend.BaseSet[A], scalars []fr.Element, w wireMSM,
	msm func(context.Context, backend.Call, backend.BaseSet[A], []fr.Element) (J, error),
	batch func(context.Context, backend.Call, backend.BaseSet[A], []uint32) (J, error)) (res J, err error) {
	call := backend.Call{Span: name, KeyID: keyID, Attributes: w.counts.zeroOneAttributes(), Late: w.late}
	if w.ones == nil {
		return msm(ctx, call, bases, scalars)
	}
	tail := w.counts.Total - w.counts.Zero - w.counts.One
	ctx, span := p.cfg.tracer().Start(ctx, name, trace.WithAttributes(
		semconv.KeyMSMSize.Int(len(scalars)),
		semconv.KeyBackend.String(p.backend.Name()),
		semconv.KeyMSMBatchAddPoints.Int(len(w.ones)),
		semconv.KeyMSMTailPoints.Int(tail),
	), trace.WithAttributes(w.counts.zeroOneAttributes()...))
	defer func() {
		span.SetAttributes(w.late()...)
		semconv.SetError(span, err)
		span.End()
	}()
	ones, err := batch(ctx, backend.Call{Span: name + semconv.SpanSuffixBatchAdd, KeyID: keyID}, bases, w.ones)
	if err != nil {
		return res, err
	}
	// The ones are zeros in the tail; its small scalars are the MSM's.
	tailCall := backend.Call{Span: name + semconv.SpanSuffixTail, KeyID: keyID, Attributes: w.tailCounts().zeroOneAttributes(), Late: w.late}
	res, err = msm(ctx, tailCall, bases, scalars)
	if err != nil {
		return res, err
	}
	PJ(&res).AddAssign(&ones)
	return res, nil
}

// batchAdder returns the backend's BatchAdder, or the CPU backend's.
func (p *proving) batchAdder() backend.BatchAdder {
	if b, ok := p.backend.(backend.BatchAdder); ok {
		return b
	}
	return cpu.New(p.cfg.tp)
}

// countSmallFn is countSmall; tests slow it down.
var countSmallFn = countSmall

// split counts the zeros and ones of one wire MSM's scalars and, when the
// proof's BitSplit wants it, takes the wires equal to 1 out of scalars
// (set to 0 in place) as the batch addition's indexes. The scalars in
// [2, 2^64) are counted beside the MSMs (w.small), not before them: that
// count leaves Montgomery form once a scalar (BenchmarkCountScalars:
// 5.4-9.3 ms a 2^20 vector on this project's 2-core VM), which held the device
// idle between compute_h and the MSMs (a median 3.8 ms a proof at 2^20
// and 13.0 ms at 2^22 in the daemon on an H100,
// bench/devices/2026-12-07-5.md); the comparisons alone cost about a
// hundredth of it. releaseAll waits for the count before the scalars'
// buffers go.
func (p *proving) split(scalars []fr.Element) wireMSM {
	w := wireMSM{counts: countZeroOne(scalars)}
	if p.cfg.bitSplit.wants(w.counts) {
		w.ones = takeOnes(scalars)
	}
	var n int
	done := make(chan struct{})
	p.counting.Add(1)
	go func() {
		defer p.counting.Done()
		defer close(done)
		n = countSmallFn(scalars)
	}()
	w.small = func() int { <-done; return n }
	return w
}
