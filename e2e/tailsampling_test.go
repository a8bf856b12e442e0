package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

func tailtraceBin(t testing.TB) string {
	return program(t, "OTELCUZK_TAILTRACE_BIN", "tailtrace", ".", "./cmd/tailtrace")
}

// sendTraces runs tailtrace against col and returns the trace ids it
// printed.
func sendTraces(t *testing.T, col *collectorInstance, service string, args ...string) []string {
	t.Helper()
	out, _ := runProgram(t, 2*time.Minute, col.otlpEnv(service), tailtraceBin(t), args...)
	ids := strings.Fields(out)
	if len(ids) == 0 {
		t.Fatalf("tailtrace %v printed no trace id", args)
	}
	return ids
}

func assertNotSampled(t *testing.T, j *jaegerInstance, what, id string) {
	t.Helper()
	_, err := tracefile.FetchJaeger(context.Background(), nil, j.QueryURL(), id)
	if !errors.Is(err, tracefile.ErrTraceNotFound) {
		t.Errorf("%s %s: %v, want it sampled out", what, id, err)
	}
}

// TestTailSamplingDecidesOnTheWholeProof runs deploy/otel-collector.yaml with
// short settings, as an operator would set them for proofs of at most a few
// seconds: decision_wait 6 s and the root trigger (decision_wait_after_root_received)
// left at the config's default. A trace whose ERROR comes 3 s after its first
// span (later than the 2 s wait that lost such traces before) is kept, and
// so is a 3 s trace over a 2 s "slow" threshold; of 40 fast successful
// traces about the configured 25 % are kept, each whole. A trace shaped like
// a SubmitProof without trace context (its root, the server span, ends at
// once; engine.job fails 12 s later, past the 10 s root trigger the config
// had by default) is kept by the default settings, and lost with the root
// trigger on. With the old settings (decision 2 s after the first span,
// nothing on the root) a late failure is lost: the test would notice a
// config that went back to them. With num_traces 4, a late span of a kept
// trace still joins it after the trace left memory (decision_cache).
func TestTailSamplingDecidesOnTheWholeProof(t *testing.T) {
	j := startJaeger(t)
	backends := []string{"JAEGER_OTLP_ENDPOINT=" + j.OTLPGRPC, "TEMPO_OTLP_ENDPOINT=" + j.OTLPGRPC}
	stamp := time.Now().UnixNano()

	// The parallel subtests run together once the sequential ones are done.
	t.Run("new", func(t *testing.T) {
		t.Parallel()
		col := startCollector(t, "tail", collectorConfig, append(backends,
			"OTELCOL_DECISION_WAIT=6s", "OTELCOL_SLOW_PROOF_MS=2000", "OTELCOL_SAMPLE_PERCENT=25")...)
		svc := fmt.Sprintf("e2e-tail-%d", stamp)
		lateError := sendTraces(t, col, svc, "-verdict-after", "3s", "-error")[0]
		slow := sendTraces(t, col, svc, "-verdict-after", "3s")[0]
		fast := sendTraces(t, col, svc, "-n", "40")
		sent := time.Now()
		traceOf(t, j, lateError, "e2e.proof", "e2e.queue")
		traceOf(t, j, slow, "e2e.proof", "e2e.queue")
		// The fast ones are decided 6 s after they arrived (the processor
		// ticks once a second): wait past that, then count.
		time.Sleep(time.Until(sent.Add(9 * time.Second)))
		kept := 0
		for _, id := range fast {
			spans, err := tracefile.FetchJaeger(context.Background(), nil, j.QueryURL(), id)
			if errors.Is(err, tracefile.ErrTraceNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(spans) != 2 {
				t.Errorf("fast trace %s kept with %d spans, want both", id, len(spans))
			}
			kept++
		}
		// Binomial(40, 0.25): mean 10, standard deviation 2.7; outside
		// [3, 20] has a probability below 0.1 %.
		if kept < 3 || kept > 20 {
			t.Errorf("%d of 40 fast successful traces kept, want about 25 %%", kept)
		}
		t.Logf("kept %d of 40 fast traces at 25 %%", kept)
	})

	t.Run("submit-without-trace-context", func(t *testing.T) {
		t.Parallel()
		col := startCollector(t, "tail-submit", collectorConfig, append(backends,
			"OTELCOL_DECISION_WAIT=16s", "OTELCOL_SLOW_PROOF_MS=60000", "OTELCOL_SAMPLE_PERCENT=0")...)
		id := sendTraces(t, col, fmt.Sprintf("e2e-tail-submit-%d", stamp), "-root-first", "-verdict-after", "12s", "-error")[0]
		if spans := traceOf(t, j, id, "e2e.proof", "e2e.queue", "e2e.job"); len(spans) != 3 {
			t.Errorf("submit-shaped failed trace kept with %d spans, want 3", len(spans))
		}
	})

	t.Run("root-trigger-loses-submit-verdicts", func(t *testing.T) {
		t.Parallel()
		col := startCollector(t, "tail-root", collectorConfig, append(backends,
			"OTELCOL_DECISION_WAIT=16s", "OTELCOL_DECISION_AFTER_ROOT=1s",
			"OTELCOL_SLOW_PROOF_MS=60000", "OTELCOL_SAMPLE_PERCENT=0")...)
		svc := fmt.Sprintf("e2e-tail-root-%d", stamp)
		lost := sendTraces(t, col, svc, "-root-first", "-verdict-after", "4s", "-error")[0]
		// A failed trace whose root ends last is decided 1 s after it:
		// once it is in Jaeger, the root trigger has fired for the first
		// one long ago, and its failure came after.
		early := sendTraces(t, col, svc, "-error")[0]
		traceOf(t, j, early, "e2e.proof", "e2e.queue")
		assertNotSampled(t, j, "failure 4 s after a root that ended at once, decided 1 s after the root", lost)
	})

	t.Run("old-settings-lose-late-errors", func(t *testing.T) {
		col := startCollector(t, "tail-old", collectorConfig, append(backends,
			"OTELCOL_DECISION_WAIT=2s", "OTELCOL_DECISION_AFTER_ROOT=0s",
			"OTELCOL_SLOW_PROOF_MS=2000", "OTELCOL_SAMPLE_PERCENT=0")...)
		svc := fmt.Sprintf("e2e-tail-old-%d", stamp)
		lateError := sendTraces(t, col, svc, "-verdict-after", "3s", "-error")[0]
		early := sendTraces(t, col, svc, "-error")[0]
		traceOf(t, j, early, "e2e.proof", "e2e.queue") // decided after the late one
		time.Sleep(2 * time.Second)
		assertNotSampled(t, j, "failure 3 s after the first span, 2 s decision_wait", lateError)
	})

	t.Run("decision-cache-keeps-late-spans", func(t *testing.T) {
		col := startCollector(t, "tail-cache", collectorConfig, append(backends,
			"OTELCOL_DECISION_WAIT=20s", "OTELCOL_DECISION_AFTER_ROOT=1s", "OTELCOL_NUM_TRACES=4",
			"OTELCOL_SLOW_PROOF_MS=60000", "OTELCOL_SAMPLE_PERCENT=0")...)
		svc := fmt.Sprintf("e2e-tail-cache-%d", stamp)
		ids := sendTraces(t, col, svc, "-late-after", "3s", "-fillers", "8")
		spans := traceOf(t, j, ids[0], "e2e.proof", "e2e.queue", "e2e.release")
		if len(spans) != 3 {
			t.Errorf("kept trace with its late span has %d spans, want 3", len(spans))
		}
	})
}
