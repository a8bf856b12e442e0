package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// sizedFake is a StagedRunner whose synthesis and prove take times set per
// constraint count; it meters the device.
type sizedFake struct {
	synth, device map[int]time.Duration
	deviceMeter
}

type sizedSyn struct {
	req   prover.Request
	freed chan struct{}
}

func (s *sizedSyn) Release(context.Context) error { return nil }
func (s *sizedSyn) Freed() <-chan struct{}        { return s.freed }
func (s *sizedSyn) Prove(ctx context.Context, dev prover.Device) (*prover.Result, error) {
	return proveOnFake(ctx, s, dev)
}

func (f *sizedFake) Synthesize(_ context.Context, r *prover.Request) (prover.Synthesized, error) {
	f.synthesizing()
	time.Sleep(f.synth[r.Constraints])
	f.synthesized()
	s := &sizedSyn{req: *r, freed: make(chan struct{})}
	close(s.freed)
	return s, nil
}

func (f *sizedFake) Proving() prover.Proving { return prover.Proving{} }

func (f *sizedFake) proveOn(_ context.Context, syn prover.Synthesized) (*prover.Result, error) {
	r := syn.(*sizedSyn).req
	f.prove(f.device[r.Constraints])
	return &prover.Result{Proof: []byte("p"), Backend: "fake"}, nil
}

func (f *sizedFake) Run(ctx context.Context, r *prover.Request) (*prover.Result, error) {
	s, _ := f.Synthesize(ctx, r)
	return s.Prove(ctx, f)
}

// Issue 26 item 4 with fake stages: two sizes interleaved (the large one's
// synthesis and prove four times the small one's), tuned; CRITICAL jobs
// sent behind a queue of NORMAL ones go ahead of them at both stages: no
// NORMAL job leaves the synthesis queue (engine.queue) or the device queue
// (gpu.queue) while a CRITICAL one waits in it. The tuner keeps one choice
// per size, and the device stays fed >= 90 % of the time (deviceMeter).
//
// The order is read from the engine's spans, whose times it takes under
// its lock as a job enters and leaves each queue. The order of the proves
// said less and failed under load: a NORMAL 2^8 job that began its
// synthesis after a CRITICAL 2^10 one began rightly finished first (40
// against 160 ms) and, the device queue empty, was proved first.
func TestMixedSizesTunedCriticalAheadAtBothStages(t *testing.T) {
	f := &sizedFake{
		synth:  map[int]time.Duration{256: 40 * time.Millisecond, 1024: 160 * time.Millisecond},
		device: map[int]time.Duration{256: 5 * time.Millisecond, 1024: 20 * time.Millisecond},
	}
	f.start, f.jobs = time.Now(), 120+4
	rec, tp := spantest.New()
	tuner := NewTuner(16, 1, 16)
	e := newEngine(t, []prover.Runner{f}, WithSynthesisWorkers(1), WithQueueSize(200), WithTuner(tuner), WithTracerProvider(tp))
	names := map[string]string{} // job ID: request ID
	submit := func(id string, size int, p priority.Priority) string {
		r := req(id, p)
		r.Constraints = size
		job := mustSubmit(t, e, r).ID
		names[job] = id
		return job
	}
	var ids []string
	for i := range 120 {
		size := 256
		if i%2 == 1 {
			size = 1024
		}
		ids = append(ids, submit(fmt.Sprintf("n%d", i), size, priority.Normal))
	}
	time.Sleep(300 * time.Millisecond) // the tuner has measured both sizes
	var crit []string
	for i := range 4 {
		size := 256 << (2 * (i % 2))
		crit = append(crit, submit(fmt.Sprintf("crit%d", i), size, priority.Critical))
	}
	for _, id := range append(ids, crit...) {
		if info, err := e.Await(context.Background(), id); err != nil || info.State != StateSucceeded {
			t.Fatalf("job %s: %v %v", id, info.State, err)
		}
	}
	if fed := f.fedShare(); fed < TargetBusy {
		t.Errorf("mixed sizes, tuned: device fed %.1f %% (busy %.1f %%), want >= %.0f %%", 100*fed, 100*f.busyShare(), 100*TargetBusy)
	}
	waits := queueWaits(rec)
	for _, stage := range []string{semconv.SpanEngineQueue, semconv.SpanGPUQueue} {
		w := waits[stage]
		overtaken := 0
		for _, c := range crit {
			cw, ok := w[c]
			if !ok {
				t.Fatalf("no %s span of %s", stage, names[c])
			}
			for _, n := range ids {
				nw := w[n]
				if nw.end.After(cw.start) && nw.end.Before(cw.end) {
					t.Errorf("%s: NORMAL %s left it while CRITICAL %s waited in it", stage, names[n], names[c])
				}
				if nw.start.Before(cw.start) && nw.end.After(cw.end) {
					overtaken++
				}
			}
		}
		if stage == semconv.SpanEngineQueue && overtaken < 4*20 {
			t.Errorf("%s: the CRITICAL jobs went ahead of %d NORMAL ones waiting, want a queue of 20 or more (the batch went too fast)", stage, overtaken)
		}
	}
	if tu := e.Status().Tuning; len(tu) != 2 || tu[0].Constraints != 256 || tu[1].Constraints != 1024 || tu[0].SynthesisMs >= tu[1].SynthesisMs {
		t.Errorf("tuning %+v, want one entry per size, the large one's synthesis longer", tu)
	}
}

// queueWait is when a job entered a queue and when it left it.
type queueWait struct{ start, end time.Time }

// queueWaits returns the waits of rec's ended engine.queue and gpu.queue
// spans by name, then by the ID of their job.
func queueWaits(rec *tracetest.SpanRecorder) map[string]map[string]queueWait {
	jobs := map[trace.SpanID]string{}
	for _, s := range spantest.Named(rec, semconv.SpanEngineJob) {
		if id, ok := spantest.Attr(s, semconv.KeyJobID); ok {
			jobs[s.SpanContext().SpanID()] = id.(string)
		}
	}
	out := map[string]map[string]queueWait{}
	for _, name := range []string{semconv.SpanEngineQueue, semconv.SpanGPUQueue} {
		out[name] = map[string]queueWait{}
		for _, s := range spantest.Named(rec, name) {
			out[name][jobs[s.Parent().SpanID()]] = queueWait{s.StartTime(), s.EndTime()}
		}
	}
	return out
}
