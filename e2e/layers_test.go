package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// syntheticProveTrace builds the CPU tree of cpuLayerParents: each span
// 1 ms inside its parent, two buffer.release spans.
func syntheticProveTrace() []tracefile.Span {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ids := map[string]string{}
	var spans []tracefile.Span
	var add func(name string, depth int)
	add = func(name string, depth int) {
		id := fmt.Sprintf("%016x", len(spans)+1)
		ids[name] = id
		s := tracefile.Span{
			TraceID: strings.Repeat("ab", 16), SpanID: id, Name: name, Service: "cuzk",
			Start: t0.Add(time.Duration(depth) * time.Millisecond),
			End:   t0.Add(time.Duration(100-depth) * time.Millisecond),
		}
		if p := cpuLayerParents[name]; p != "" {
			s.ParentID = ids[p]
		}
		spans = append(spans, s)
	}
	add("engine.job", 0)
	for _, n := range []string{"engine.queue", "pipeline.synthesize", "pipeline.prove", "pipeline.serialize", "proof.verify"} {
		add(n, 1)
	}
	add("groth16.prove", 2)
	for _, n := range []string{"groth16.compute_h", "msm.g1.a", "msm.g1.b", "msm.g1.k", "msm.g1.h", "msm.g2.b", "buffer.release", "buffer.release"} {
		add(n, 3)
	}
	return spans
}

// TestLayerErrorsCatchBrokenTrees: the e2e tree check accepts the whole
// tree and names each kind of breakage.
func TestLayerErrorsCatchBrokenTrees(t *testing.T) {
	if errs := layerErrors(syntheticProveTrace(), ""); errs != nil {
		t.Fatalf("whole tree rejected: %v", errs)
	}
	for name, c := range map[string]struct {
		breakIt func([]tracefile.Span) []tracefile.Span
		want    string
	}{
		"missing layer": {func(s []tracefile.Span) []tracefile.Span {
			return dropSpan(s, "proof.verify")
		}, "no proof.verify"},
		"wrong parent": {func(s []tracefile.Span) []tracefile.Span {
			s[indexOf(s, "msm.g1.a")].ParentID = s[indexOf(s, "pipeline.prove")].SpanID
			return s
		}, `msm.g1.a`},
		"outside parent": {func(s []tracefile.Span) []tracefile.Span {
			s[indexOf(s, "msm.g2.b")].End = s[indexOf(s, "groth16.prove")].End.Add(time.Millisecond)
			return s
		}, "msm.g2.b"},
		"async release under engine.job": {func(s []tracefile.Span) []tracefile.Span {
			s[indexOf(s, "buffer.release")].ParentID = s[0].SpanID
			return s
		}, "buffer.release"},
		"engine.job not under the server span": {func(s []tracefile.Span) []tracefile.Span { return s }, "engine.job"},
	} {
		root := ""
		if strings.HasPrefix(name, "engine.job") {
			root = "cuzk.v1.ProvingEngine/Prove"
		}
		errs := layerErrors(c.breakIt(syntheticProveTrace()), root)
		if len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("%s: errors %v, want one about %s", name, errs, c.want)
		}
	}
}

func indexOf(spans []tracefile.Span, name string) int {
	for i, s := range spans {
		if s.Name == name {
			return i
		}
	}
	panic("no span " + name)
}

func dropSpan(spans []tracefile.Span, name string) []tracefile.Span {
	i := indexOf(spans, name)
	return append(spans[:i], spans[i+1:]...)
}
