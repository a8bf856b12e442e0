package semconv

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

func TestAggregateStatsFoldsLaunches(t *testing.T) {
	var a AggregateStats
	for _, ms := range []float64{2.5, 0.5, 4, 1} {
		a.Add(ms)
	}
	if a != (AggregateStats{Count: 4, TotalMS: 8, MinMS: 0.5, MaxMS: 4}) {
		t.Fatalf("stats %+v", a)
	}
	want := []attribute.KeyValue{KeyAggregatedCount.Int(4), KeyAggregatedTotalMS.Float64(8),
		KeyAggregatedMinMS.Float64(0.5), KeyAggregatedMaxMS.Float64(4)}
	got := a.Attributes()
	if len(got) != len(want) {
		t.Fatalf("attributes %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("attribute %d: %v, want %v", i, got[i], want[i])
		}
	}
	// The first launch sets the minimum even when it is larger than zero.
	var b AggregateStats
	b.Add(3)
	if b.MinMS != 3 || b.MaxMS != 3 {
		t.Errorf("one launch: %+v", b)
	}
}
