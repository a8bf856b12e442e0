package semconv

import "go.opentelemetry.io/otel/attribute"

// AggregateStats are the GPU times of the kernel launches that one
// aggregate span folds: cudaspans and cupti fold the launches of one kernel
// under one parent beyond their volume limit into a single span, which
// carries these as its cuzk.aggregate.* attributes.
type AggregateStats struct {
	Count                 int
	TotalMS, MinMS, MaxMS float64
}

// Add folds one launch of ms milliseconds.
func (a *AggregateStats) Add(ms float64) {
	if a.Count == 0 || ms < a.MinMS {
		a.MinMS = ms
	}
	if ms > a.MaxMS {
		a.MaxMS = ms
	}
	a.Count++
	a.TotalMS += ms
}

// Attributes are cuzk.aggregate.count, .total_ms, .min_ms and .max_ms.
func (a AggregateStats) Attributes() []attribute.KeyValue {
	return []attribute.KeyValue{
		KeyAggregatedCount.Int(a.Count),
		KeyAggregatedTotalMS.Float64(a.TotalMS),
		KeyAggregatedMinMS.Float64(a.MinMS),
		KeyAggregatedMaxMS.Float64(a.MaxMS),
	}
}
