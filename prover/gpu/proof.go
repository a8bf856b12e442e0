package gpu

import (
	"context"
	"sync"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

type proofKey struct{}

// BeginProof implements backend.ProofScoper: it waits for the device (one
// proof at a time per backend) as a gpu.lock span, then begins a device
// session (cudaspans.Context.BeginSession) whose operations are those
// launched with the returned context. The end function ends the session,
// emitting gpu.total (first to last device operation, GPU clock) as a
// child of the span in ctx, and gives the device to the next proof; its
// error is the session's synchronize error; a second call is a no-op.
//
// Before all that it warms the backend (Warmup: a gpu.warmup span when
// modules are compiled or loaded), so the wait for a compile is neither
// gpu.lock nor inside gpu.total; a failed warm-up is returned by the
// proof's first device call.
func (b *Backend) BeginProof(ctx context.Context) (context.Context, func() error) {
	if f := b.Fault(); f != nil {
		return ctx, func() error { return f }
	}
	werr := b.Warmup(ctx)
	_, span := b.tracer.Start(ctx, semconv.SpanGPULock)
	b.proofMu.Lock()
	span.End()
	sctx, sess := b.c.BeginSession(ctx)
	sctx = context.WithValue(sctx, proofKey{}, proofState{b: b, warmErr: werr})
	var once sync.Once
	var err error
	return sctx, func() error {
		once.Do(func() {
			err = b.checkFault(sess.End())
			// An H the proof's MSM did not read (it failed first) goes
			// back with the device.
			b.mu.Lock()
			b.dropH()
			b.mu.Unlock()
			b.proofMu.Unlock()
		})
		return err
	}
}

// lock takes the device for one operation. Inside a proof (BeginProof)
// the proof's gpu.lock span already covers the wait for the device, and a
// wait here is for another MSM of the same proof, so it has no span;
// outside a proof the wait is a gpu.lock span.
func (b *Backend) lock(ctx context.Context) func() {
	if st, ok := ctx.Value(proofKey{}).(proofState); ok && st.b == b {
		b.mu.Lock()
		return b.mu.Unlock
	}
	_, span := b.tracer.Start(ctx, semconv.SpanGPULock)
	b.mu.Lock()
	span.End()
	return b.mu.Unlock
}
