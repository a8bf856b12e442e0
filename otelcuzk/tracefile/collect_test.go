package tracefile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

func tid32(i int) string { return fmt.Sprintf("%032x", i+1) }

// Traces arrive interleaved and children before their root: the
// Collector lists every trace with its root and extent, keeps the latest
// MaxTraces to start, and drops the spans of the others.
func TestCollectorKeepsTheLatestTraces(t *testing.T) {
	c := tracefile.NewCollector(tracefile.CollectOptions{MaxTraces: 2})
	for i := range 4 {
		// children first: the root (earliest start) arrives last
		c.Add(mk(tid32(i), "c1", "r", "child", float64(100*i+10), float64(100*i+20)))
	}
	for i := range 4 {
		c.Add(mk(tid32(i), "r", "", "engine.job", float64(100*i), float64(100*i+50)))
		c.Add(mk(tid32(i), "r", "", "engine.job", float64(100*i), float64(100*i+50))) // repeated
	}
	col := c.Collection()
	if len(col.Summaries) != 4 || col.Evicted != 2 {
		t.Fatalf("%d summaries, %d evicted; want 4 and 2", len(col.Summaries), col.Evicted)
	}
	for i, s := range col.Summaries {
		if s.ID != tid32(i) || s.Root != "engine.job" || s.Duration().Milliseconds() != 50 {
			t.Errorf("summary %d = %+v, want trace %s rooted at engine.job, 50 ms", i, s, tid32(i))
		}
		if kept := i >= 2; s.Kept != kept || (len(col.Spans[s.ID]) > 0) != kept {
			t.Errorf("trace %d kept %v with %d spans, want kept %v", i, s.Kept, len(col.Spans[s.ID]), kept)
		}
	}
	if latest, ok := col.Latest(); !ok || latest.ID != tid32(3) || len(col.Spans[latest.ID]) != 2 || latest.Spans != 2 {
		t.Errorf("latest %+v with %d spans, want trace 3 with 2 (the repeat kept once)", latest, len(col.Spans[latest.ID]))
	}
}

// The span cap of one trace and the byte budget over all bound the memory
// whatever the input; what is left out is counted.
func TestCollectorCapsSpansAndBytes(t *testing.T) {
	c := tracefile.NewCollector(tracefile.CollectOptions{MaxSpansPerTrace: 10})
	for i := range 25 {
		c.Add(mk(tid32(0), fmt.Sprint(i), "", "s", float64(i), float64(i+1)))
	}
	col := c.Collection()
	if s := col.Summaries[0]; len(col.Spans[s.ID]) != 10 || s.Dropped != 15 || s.Spans != 25 {
		t.Errorf("summary %+v with %d spans kept, want 10 kept, 15 dropped, 25 seen", s, len(col.Spans[s.ID]))
	}

	// One trace alone is held to the byte budget too (its spans fewer
	// than the span cap, each with a 1 KiB attribute).
	c = tracefile.NewCollector(tracefile.CollectOptions{MaxKeptBytes: 100 << 10})
	for i := range 1000 {
		s := mk(tid32(0), fmt.Sprint(i), "", "s", float64(i), float64(i+1))
		s.Attrs = map[string]any{"a": strings.Repeat("x", 1024)}
		c.Add(s)
	}
	col = c.Collection()
	if s := col.Summaries[0]; len(col.Spans[s.ID]) == 0 || len(col.Spans[s.ID]) > 100 || s.Dropped != 1000-len(col.Spans[s.ID]) {
		t.Errorf("summary %+v with %d spans kept, want under 100 (100 KiB) and the rest dropped", s, len(col.Spans[s.ID]))
	}

	c = tracefile.NewCollector(tracefile.CollectOptions{MaxKeptBytes: 100 << 10})
	for i := range 10_000 {
		c.Add(mk(tid32(i), "r", "", "engine.job", float64(i), float64(i+1)))
	}
	col = c.Collection()
	kept := col.Kept()
	if len(col.Summaries) != 10_000 || len(kept) == 0 || len(kept) > 500 || col.Evicted != 10_000-len(kept) {
		t.Fatalf("%d listed, %d kept, %d evicted: want all listed, a few hundred kept within 100 KiB", len(col.Summaries), len(kept), col.Evicted)
	}
	if kept[len(kept)-1].ID != tid32(9999) || kept[0].ID != tid32(10_000-len(kept)) {
		t.Errorf("kept %s..%s, want the latest traces", kept[0].ID, kept[len(kept)-1].ID)
	}
}

// A file of more traces than MaxSummaries (a daemon's, appended to for
// ever, gains a trace per status poll): the latest traces are listed and
// the last proof is the one shown; the earliest are let go, counted, and a
// span of one of them that comes later is counted, not listed anew.
func TestCollectorListsTheLatestTracesPastMaxSummaries(t *testing.T) {
	var evicted []string
	c := tracefile.NewCollector(tracefile.CollectOptions{MaxSummaries: 3, OnEvict: func(spans []tracefile.Span) {
		evicted = append(evicted, spans[0].TraceID)
	}})
	for i := range 5 {
		c.Add(mk(tid32(i), "r", "", "engine.job", float64(10*i), float64(10*i+1)))
	}
	c.Add(mk(tid32(0), "late", "r", "child", 2, 3)) // trace 0 was let go
	col := c.Collection()
	if len(col.Summaries) != 3 || col.Unlisted != 2 || col.UnlistedSpans != 1 {
		t.Fatalf("%d listed, %d unlisted, %d spans of unlisted traces; want 3, 2 and 1", len(col.Summaries), col.Unlisted, col.UnlistedSpans)
	}
	for i, s := range col.Summaries {
		if s.ID != tid32(i+2) || !s.Kept {
			t.Errorf("listed %d: %+v, want trace %s kept", i, s, tid32(i+2))
		}
	}
	if l, _ := col.Latest(); l.ID != tid32(4) || len(col.Spans[l.ID]) != 1 {
		t.Errorf("latest %+v, want the last trace %s", l, tid32(4))
	}
	if fmt.Sprint(evicted) != fmt.Sprint([]string{tid32(0), tid32(1)}) {
		t.Errorf("OnEvict got %v, want the two traces let go", evicted)
	}
}

// OnEvict receives each trace's spans as they are let go; spans that
// arrive for an evicted trace are counted as late.
func TestCollectorOnEvictAndLateSpans(t *testing.T) {
	var evicted []string
	c := tracefile.NewCollector(tracefile.CollectOptions{MaxTraces: 1, OnEvict: func(spans []tracefile.Span) {
		evicted = append(evicted, fmt.Sprintf("%s:%d", spans[0].TraceID[31:], len(spans)))
	}})
	c.Add(mk(tid32(0), "r", "", "engine.job", 0, 10))
	c.Add(mk(tid32(0), "c", "r", "child", 1, 2))
	c.Add(mk(tid32(1), "r", "", "engine.job", 20, 30)) // evicts trace 0
	c.Add(mk(tid32(0), "d", "r", "late", 3, 4))
	col := c.Collection()
	if fmt.Sprint(evicted) != "[1:2]" {
		t.Errorf("evicted %v, want trace 1 (tid32(0)) with its 2 spans", evicted)
	}
	if s := col.Summaries[0]; s.Kept || s.Late != 1 || s.Spans != 3 {
		t.Errorf("summary %+v, want evicted with 1 late span of 3", s)
	}
}

// A daemon's file ends with status polls: the latest trace is the latest
// proof (one with engine.job), not the latest poll.
func TestCollectionLatestIsTheLatestProof(t *testing.T) {
	c := tracefile.NewCollector(tracefile.CollectOptions{})
	c.Add(mk(tid32(0), "s", "", "cuzk.v1.ProvingEngine/SubmitProof", 0, 100))
	c.Add(mk(tid32(0), "j", "s", "engine.job", 1, 99))
	c.Add(mk(tid32(1), "p", "", "cuzk.v1.ProvingEngine/GetStatus", 150, 151))
	col := c.Collection()
	if l, _ := col.Latest(); l.ID != tid32(0) || l.Jobs != 1 || l.Root != "cuzk.v1.ProvingEngine/SubmitProof" {
		t.Errorf("latest %+v, want the proof's trace", l)
	}
	c = tracefile.NewCollector(tracefile.CollectOptions{})
	c.Add(mk(tid32(0), "a", "", "e2e.gap", 0, 1))
	c.Add(mk(tid32(1), "b", "", "e2e.gap", 5, 6))
	if l, _ := c.Collection().Latest(); l.ID != tid32(1) {
		t.Errorf("without any engine.job: latest %+v, want the last trace", l)
	}
}
