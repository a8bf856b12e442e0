package cudaspans

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

func TestCPhasesOnAStreamAreTimedByItsEvents(t *testing.T) {
	f := newFixture(t)
	k := f.kernel(t, "c_kernel", 2*time.Millisecond)
	s := f.stream(t)
	pctx, parent := f.parent(context.Background(), semconv.SpanMSMG1B)
	ctx, sess := f.c.BeginSession(pctx)
	h, release := CParent(ctx)
	defer release()

	ph := cBegin(h, "c.batch", s.Handle())
	if ph == 0 {
		t.Fatal("cBegin on a known stream returned 0")
	}
	cSetAttr(ph, semconv.KeyMSMSize.Int(1<<20))
	// The C code's own launches on the stream, seen here as one launch.
	if err := s.Launch(context.Background(), k, D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	nested := cBegin(ph, "c.host_step", 0)
	f.clock.advance(300 * time.Microsecond)
	cEnd(nested)
	cEnd(ph)
	cEnd(ph) // a second end is ignored
	if len(f.ended("c.batch")) != 0 {
		t.Fatal("device phase emitted before Synchronize")
	}
	if err := sess.End(); err != nil {
		t.Fatal(err)
	}
	parent.End(trace.WithTimestamp(f.clock.now()))

	b := f.ended("c.batch")
	if len(b) != 1 {
		t.Fatalf("%d c.batch spans", len(b))
	}
	pid := f.ended(semconv.SpanMSMG1B)[0].SpanContext().SpanID()
	if b[0].Parent().SpanID() != pid {
		t.Error("device phase not under the C parent's span")
	}
	if d := b[0].EndTime().Sub(b[0].StartTime()); d < 2*time.Millisecond {
		t.Errorf("device phase lasts %v, less than the kernel it bracketed", d)
	}
	if mustAttr(t, b[0], semconv.KeyCUDAClock).AsString() != "gpu" || mustAttr(t, b[0], semconv.KeyMSMSize).AsInt64() != 1<<20 {
		t.Errorf("device phase attributes: %v", b[0].Attributes())
	}
	hs := f.ended("c.host_step")
	if len(hs) != 1 || hs[0].Parent().SpanID() != pid || mustAttr(t, hs[0], semconv.KeyCUDAClock).AsString() != "host" {
		t.Fatalf("nested host phase: %v", hs)
	}
	g := f.ended(semconv.SpanGPUTotal)
	if len(g) != 1 || mustAttr(t, g[0], semconv.KeyCUDAOpCount).AsInt64() != 1 {
		t.Errorf("the device phase did not count towards gpu.total: %v", g)
	}
	release()
	if cBegin(h, "late", 0) != 0 {
		t.Error("a released parent still begins spans")
	}
	cSetAttr(0, semconv.KeyMSMSize.Int(1))
	cEnd(0)
}

func TestCPhaseOnAnUnknownStreamFallsBackToTheHostClock(t *testing.T) {
	f := newFixture(t)
	ctx, parent := f.parent(context.Background(), "p")
	h, release := CParent(ctx)
	defer release()
	ph := cBegin(h, "c.foreign", StreamHandle(0xdead))
	cEnd(ph)
	parent.End()
	sp := f.ended("c.foreign")
	if len(sp) != 1 || mustAttr(t, sp[0], semconv.KeyCUDAClock).AsString() != "host" {
		t.Fatalf("unknown stream phase: %v", sp)
	}
}

func TestCPhaseEndedAfterItsStreamClosedRecordsNothingOnIt(t *testing.T) {
	f := newFixture(t)
	s := f.stream(t)
	pctx, parent := f.parent(context.Background(), semconv.SpanMSMG1B)
	defer parent.End()
	h, release := CParent(pctx)
	defer release()
	ph := cBegin(h, "c.batch", s.Handle())
	if ph == 0 {
		t.Fatal("cBegin on a known stream returned 0")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.drv.mu.Lock()
	before := f.drv.calls["EventRecord"]
	f.drv.mu.Unlock()
	cEnd(ph)
	f.drv.mu.Lock()
	after := f.drv.calls["EventRecord"]
	f.drv.mu.Unlock()
	if after != before {
		t.Errorf("ending the phase recorded %d events on the destroyed stream", after-before)
	}
}
