package tracefile_test

import (
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

func mk(trace, id, parent, name string, start, end float64) tracefile.Span {
	return tracefile.Span{TraceID: trace, SpanID: id, ParentID: parent, Name: name, Start: at(start), End: at(end)}
}

func TestBuildTracesOrphansCyclesAndOrder(t *testing.T) {
	spans := []tracefile.Span{
		mk("t2", "a", "", "late-root", 100, 200),
		mk("t1", "b", "caller-span-in-curio", "engine.job", 0, 50), // parent in another service's data
		mk("t1", "c", "b", "engine.queue", 0, 10),
		mk("t1", "c", "b", "engine.queue", 0, 10), // repeated
		mk("t1", "x", "y", "cycle-x", 20, 30),
		mk("t1", "y", "x", "cycle-y", 21, 29),
		mk("t1", "s", "s", "self-parent", 40, 41),
	}
	traces := tracefile.BuildTraces(spans)
	if len(traces) != 2 || traces[0].ID != "t1" || traces[1].ID != "t2" {
		t.Fatalf("traces %v, want t1 then t2 (by start)", traces)
	}
	t1 := traces[0]
	if t1.Spans != 5 {
		t.Errorf("t1 has %d spans, want 5 (duplicate dropped)", t1.Spans)
	}
	seen := 0
	t1.Walk(func(n *tracefile.Node) bool { seen++; return true })
	if seen != 5 {
		t.Fatalf("walk reaches %d spans, want all 5 (cycles broken, not dropped)", seen)
	}
	if got := names(t1.Roots); len(got) < 3 || got[0] != "engine.job" {
		t.Errorf("roots = %v, want engine.job (orphan) first, and the cycle and self-parent as roots", got)
	}
	if n := find(t1, "engine.queue"); n == nil || n.Depth != 1 {
		t.Errorf("engine.queue not under engine.job")
	}
}

func TestBuildTracesUntracedClipsLateChildrenAndSkipsUntracedSpans(t *testing.T) {
	spans := []tracefile.Span{
		mk("t", "p", "", "pipeline.prove", 0, 100),
		mk("t", "w", "p", "groth16.prove", 0, 40),
		mk("t", "r", "p", semconv.SpanBufferRelease, 70, 300), // async, ends after its parent
		mk("t", "u", "p", semconv.SpanUntraced, 40, 70),       // the processor's span is not coverage
	}
	tr := tracefile.BuildTraces(spans)[0]
	if got := find(tr, "pipeline.prove").Untraced; got != 30*time.Millisecond {
		t.Errorf("untraced = %v, want 30ms (40..70)", got)
	}
	if tr.UntracedTotal() != 30*time.Millisecond {
		t.Errorf("UntracedTotal = %v", tr.UntracedTotal())
	}
	if tr.Duration() != 300*time.Millisecond {
		t.Errorf("trace duration = %v, want 300ms (to the late release's end)", tr.Duration())
	}
}

func TestLayersFallBackToRoots(t *testing.T) {
	tr := tracefile.BuildTraces([]tracefile.Span{
		mk("t", "a", "", "curio.task", 0, 100),
		mk("t", "b", "a", "client.call", 10, 90),
		mk("t", "c", "a", "client.call", 90, 95),
	})[0]
	ls := tracefile.Layers(tr)
	if len(ls) != 3 {
		t.Fatalf("layers = %+v, want root, client.call, untraced", ls)
	}
	if ls[1].Name != "client.call" || ls[1].Count != 2 || ls[1].Duration != 85*time.Millisecond {
		t.Errorf("client.call layer = %+v", ls[1])
	}
	if ls[2].Name != tracefile.LayerUntraced || ls[2].Duration != 15*time.Millisecond || ls[2].Share != 0.15 {
		t.Errorf("untraced layer = %+v", ls[2])
	}
}
