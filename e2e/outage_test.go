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

// outageExportTimeout is OTEL_EXPORTER_OTLP_TIMEOUT for the outage test:
// the most one export may wait on an unreachable Jaeger. It is long
// against a proof's pace on purpose: a proof that waited on even one
// export would take that much longer, which stands out of the noise of
// a loaded CI machine (the limit below has room for that noise).
const outageExportTimeout = 3 * time.Second

// TestJaegerOutageNeverBlocksProofs: Jaeger stops in the middle of a series
// of proofs through `cuzk serve`. Every proof still succeeds and none takes
// longer than the slowest proof before the outage plus the export timeout;
// the daemon reports the dropped spans (a log line and the metric
// cuzk_spans_dropped_total); once Jaeger is back on the same ports, later
// traces arrive whole.
func TestJaegerOutageNeverBlocksProofs(t *testing.T) {
	j := startJaeger(t)
	stamp := time.Now().UnixNano()
	service := fmt.Sprintf("e2e-outage-%d", stamp)
	env := append(j.otlpEnv("grpc", service),
		fmt.Sprintf("OTEL_EXPORTER_OTLP_TIMEOUT=%d", outageExportTimeout.Milliseconds()),
		"OTEL_BSP_SCHEDULE_DELAY=100")
	d := startDaemon(t, env)
	// The submitting side writes its own spans to a file: this test is
	// about the daemon's exporter.
	clientEnv := []string{"OTEL_SERVICE_NAME=e2e-outage-client", "OTEL_TRACES_EXPORTER=none"}
	timed := func(i int) (time.Duration, string) {
		start := time.Now()
		_, id := submit(t, d, clientEnv, fmt.Sprintf("outage-%d-%d", stamp, i))
		return time.Since(start), id
	}

	// Before: two proofs, the second's trace arrives.
	var slowest time.Duration
	for i := 0; i < 2; i++ {
		took, id := timed(i)
		slowest = max(slowest, took)
		if i == 1 {
			daemonLayers(t, j, id, service)
		}
	}
	if v, ok := droppedSpans(t, d); ok && v != 0 {
		t.Fatalf("cuzk_spans_dropped_total = %v before the outage", v)
	}

	// Outage: Jaeger is gone; proofs go on at the same pace.
	j.Stop()
	// Twice the slowest proof before, plus a second: room for a loaded
	// machine, and still under the slowest plus one export timeout as long
	// as the slowest stays under 2 s (a small proof takes well under 1 s).
	limit := 2*slowest + time.Second
	for i := 2; i < 5; i++ {
		took, _ := timed(i)
		t.Logf("proof %d during the outage: %v (limit %v)", i, took.Round(time.Millisecond), limit.Round(time.Millisecond))
		if took > limit {
			t.Errorf("proof %d during the outage took %v, more than twice the slowest before (%v) plus 1 s: did it wait on an export (timeout %v)?", i, took, slowest, outageExportTimeout)
		}
	}
	// The batch exporter tries (and fails) within its schedule delay plus
	// the export timeout; the loss must then be counted and logged.
	err := waitFor(context.Background(), 30*time.Second, func() error {
		if v, _ := droppedSpans(t, d); v <= 0 {
			return errors.New("cuzk_spans_dropped_total still 0")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.stderr.String(), "dropping spans") {
		t.Errorf("no log line about dropped spans in cuzk serve's output:\n%s", tail([]byte(d.stderr.String()), 2048))
	}

	// Back: same ports. The exporter finds the endpoint again (its probe,
	// then gRPC's reconnect), so keep proving until one trace arrives
	// whole: a proof that overlaps the reconnect may lose its first batch
	// (counted as dropped), a later one must not.
	if err := j.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	want := layerNames()
	for i := 5; ; i++ {
		_, id := timed(i)
		err := waitFor(context.Background(), 8*time.Second, func() error {
			spans, err := tracefile.FetchJaeger(context.Background(), nil, j.QueryURL(), id)
			if err != nil {
				return err
			}
			if missing := missingNames(spans, want); len(missing) > 0 {
				return fmt.Errorf("trace %s lacks %v", id, missing)
			}
			return nil
		})
		if err == nil {
			daemonLayers(t, j, id, service)
			t.Logf("trace of proof %d arrived whole after Jaeger came back", i)
			break
		}
		t.Logf("proof %d after Jaeger's return: %v", i, err)
		if time.Now().After(deadline) {
			t.Fatalf("no whole trace arrived within 90 s of Jaeger's return: %v", err)
		}
	}
}

// missingNames returns the names of want that no span of spans has.
func missingNames(spans []tracefile.Span, want []string) []string {
	have := map[string]bool{}
	for _, s := range spans {
		have[s.Name] = true
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

// droppedSpans reads cuzk_spans_dropped_total from the daemon's metrics.
func droppedSpans(t *testing.T, d *daemon) (float64, bool) {
	t.Helper()
	m, err := d.metrics()
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return metricValue(m, "cuzk_spans_dropped_total")
}
