package e2e

import "testing"

func TestMetricValueSumsSamplesOfOneName(t *testing.T) {
	const exposition = `# HELP cuzk_spans_dropped_total Spans lost.
# TYPE cuzk_spans_dropped_total counter
cuzk_spans_dropped_total{otel_scope_name="github.com/otelcuzk/otelcuzk"} 7
cuzk_spans_dropped_total{otel_scope_name="other"} 2
cuzk_spans_dropped_total_created 1.7e9
cuzk_queue_depth 3
`
	if v, ok := metricValue(exposition, "cuzk_spans_dropped_total"); !ok || v != 9 {
		t.Errorf("cuzk_spans_dropped_total = %v, %v; want 9, true", v, ok)
	}
	if v, ok := metricValue(exposition, "cuzk_queue_depth"); !ok || v != 3 {
		t.Errorf("cuzk_queue_depth = %v, %v; want 3, true", v, ok)
	}
	if _, ok := metricValue(exposition, "cuzk_spans"); ok {
		t.Error("a prefix of a name matched")
	}
}
