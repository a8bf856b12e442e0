package tracefile_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// The waterfall says what prover/engine's cuzk.abandoned.* attributes
// record, which no span's name does: on engine.abandoned (the work a
// cancelled job left running, outliving its engine.job) the step and what
// it holds, on the next job's engine.queue how long of its wait was for
// that work and whose it was. Spans written to a trace file by
// otelcuzk.New and read back.
func TestWaterfallSaysWhatAbandonedWorkHeldAndWhoWaitedForIt(t *testing.T) {
	tr, flush := newTraceFile(t)
	// The cancelled job: its key setup cancelled at 2.8 s, left running
	// to 52.8 s.
	ctx, job := tr.Start(context.Background(), semconv.SpanEngineJob, trace.WithTimestamp(at(0)))
	_, ab := tr.Start(ctx, semconv.SpanEngineAbandoned, trace.WithTimestamp(at(2800)), trace.WithAttributes(
		semconv.KeyJobID.String("job-1"), semconv.KeyAbandonedStep.String(semconv.SpanKeysSetup),
		semconv.KeyAbandonedSynthesisSlot.Bool(true)))
	job.End(trace.WithTimestamp(at(2800)))
	ab.End(trace.WithTimestamp(at(52800)))
	// The next job, queued from 1 s to 52.8 s.
	ctx, next := tr.Start(context.Background(), semconv.SpanEngineJob, trace.WithTimestamp(at(1000)))
	_, queue := tr.Start(ctx, semconv.SpanEngineQueue, trace.WithTimestamp(at(1000)))
	queue.SetAttributes(semconv.KeyAbandonedWaitMS.Float64(50000), semconv.KeyAbandonedJobID.String("job-1"),
		semconv.KeyAbandonedStep.String(semconv.SpanKeysSetup))
	queue.End(trace.WithTimestamp(at(52800)))
	next.End(trace.WithTimestamp(at(53000)))

	var out bytes.Buffer
	if err := tracefile.Waterfall(&out, readFile(t, flush()), tracefile.WaterfallOptions{ASCII: true}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"engine.abandoned  keys.setup left running, holding a synthesis slot",
		"engine.queue  waited 50000.000 ms for abandoned keys.setup of job-1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("waterfall lacks %q:\n%s", want, text)
		}
	}
}
