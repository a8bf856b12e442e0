package tracefile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// spanSpec is one span of a constructed trace: depth-first, parent by index.
type spanSpec struct {
	parent     int // index of the parent in the list, -1 for the root
	name       string
	start, end float64 // ms
	attrs      map[string]any
}

func buildSpans(trace string, specs []spanSpec) []tracefile.Span {
	out := make([]tracefile.Span, len(specs))
	for i, s := range specs {
		out[i] = tracefile.Span{TraceID: trace, SpanID: fmt.Sprintf("%016x", i+1), Name: s.name, Start: at(s.start), End: at(s.end), Attrs: s.attrs}
		if s.parent >= 0 {
			out[i].ParentID = fmt.Sprintf("%016x", s.parent+1)
		}
	}
	return out
}

func profile(t *testing.T, spans []tracefile.Span) tracefile.Profile {
	t.Helper()
	traces := tracefile.BuildTraces(spans)
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	return tracefile.ProfileOf(traces[0])
}

var merkle = map[string]any{"cuzk.circuit.id": "merkle", "cuzk.circuit.constraints": int64(1 << 20)}

// seedTrace is the story this project began with, as one proof: release
// "async" frees the buffers after the prove (under engine.job); "sync"
// frees them inside pipeline.prove, so the GPU stage's timer grows though
// every kernel runs as fast. synth is the synthesis time in ms.
func seedTrace(id, release string, synth float64) []tracefile.Span {
	p := 100 + synth // prove starts
	specs := []spanSpec{
		{-1, "engine.job", 0, 0, merkle},
		{0, "engine.queue", 0, 100, nil},
		{0, "pipeline.synthesize", 100, p, nil},
		{0, "pipeline.prove", p, 0, nil},
		{3, "groth16.prove", p + 50, p + 4950, nil},
		{4, "msm.g1.a", p + 100, p + 2100, nil},
		{5, "msm.kernel", p + 100, p + 700, nil},
		{5, "msm.kernel", p + 700, p + 1300, nil},
		{5, "msm.kernel", p + 1300, p + 1900, nil},
		{4, "groth16.compute_h", p + 2200, p + 4200, nil},
	}
	rel := map[string]any{"cuzk.release.mode": release}
	if release == "sync" {
		specs = append(specs, spanSpec{3, "buffer.release", p + 5000, p + 7000, rel})
		specs[3].end = p + 7000
		specs[0].end = p + 7050
	} else {
		specs[3].end = p + 5000
		specs = append(specs, spanSpec{0, "buffer.release", p + 5100, p + 9100, rel})
		specs[0].end = p + 9200
	}
	return buildSpans(id, specs)
}

// The seed's case: synthesis 3.5 s faster, the GPU stage 2 s slower with
// every kernel as fast, the release inside the prove on B only. The diff
// names the release as the cause of the GPU stage's growth.
func TestDiffNamesTheReleaseAsTheCauseOfTheSeedsCase(t *testing.T) {
	a := profile(t, seedTrace(traceA, "async", 10000))
	b := profile(t, seedTrace(traceB, "sync", 6500))
	d, err := tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{b}, tracefile.DiffOptions{ThresholdMS: 100, ThresholdPct: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := "pipeline.prove +2.0 s: buffer.release +2.0 s (only on B, cuzk.release.mode: sync), untraced +0.0 ms"
	found := false
	for _, v := range d.Verdicts {
		found = found || v == want
		if strings.HasPrefix(v, "groth16.prove") || strings.HasPrefix(v, "msm.g1.a") {
			t.Errorf("verdict for a layer that did not move: %q", v)
		}
	}
	if !found {
		t.Errorf("verdicts %q lack %q", d.Verdicts, want)
	}
	synth := d.Find("engine.job/pipeline.synthesize")
	if synth == nil || synth.Delta() != -3500*time.Millisecond || !d.Moved(synth) {
		t.Errorf("synthesis %+v, want −3.5 s and moved", synth)
	}
	kern := d.Find("msm.kernel")
	if kern == nil || kern.Delta() != 0 || kern.CountA != 3 || kern.CountB != 3 || kern.A != 1800*time.Millisecond || d.Moved(kern) {
		t.Errorf("kernels %+v, want 3 summed to 1800 ms on each side, unmoved", kern)
	}
	relA, relB := d.Find("engine.job/buffer.release"), d.Find("engine.job/pipeline.prove/buffer.release")
	if relA == nil || !relA.OnlyA() || relB == nil || !relB.OnlyB() {
		t.Errorf("release paths: A %+v, B %+v; want one on each side only", relA, relB)
	}
	// engine.job's children: largest move first (the async release, 4 s).
	if root := d.Roots[0]; root.Name != "engine.job" || root.Children[0] != relA || root.Children[1] != synth {
		t.Errorf("engine.job's children are not sorted by move: %v", names2(root.Children))
	}
	if d.Verdicts[0] != "engine.job −5.7 s: buffer.release −4.0 s (only on A, cuzk.release.mode: async), pipeline.synthesize −3.5 s, pipeline.prove +2.0 s, untraced −150.0 ms" {
		t.Errorf("first verdict %q", d.Verdicts[0])
	}
	// Untraced per side: the job's own gaps (19300 − 100 − 10000 − 5000 −
	// 4000 ms on A, 13650 − 100 − 6500 − 7000 ms on B), and over the trace.
	if root := d.Roots[0]; root.UntracedA != 200*time.Millisecond || root.UntracedB != 50*time.Millisecond {
		t.Errorf("engine.job untraced A %v, B %v; want 200ms, 50ms", root.UntracedA, root.UntracedB)
	}

	var text bytes.Buffer
	if err := tracefile.WriteDiff(&text, d, 0); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"   10000.000     6500.000    -3500.000   -35.0%",
		"   19300.000    13650.000    -5650.000   -29.3%    200.000     50.000  engine.job  *",
		"[only A]", "[only B]", "msm.kernel ×3/3", want,
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, text.String())
		}
	}
	var js bytes.Buffer
	if err := tracefile.WriteDiffJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Verdicts []string
		Nodes    []struct {
			Path     string
			DeltaMS  float64 `json:"delta_ms"`
			Children []struct {
				Path  string
				Only  string
				Pct   *float64 `json:"delta_pct"`
				Moved bool
			}
		}
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatalf("JSON: %v\n%s", err, js.String())
	}
	if len(doc.Nodes) != 1 || doc.Nodes[0].DeltaMS != -5650 || doc.Nodes[0].Children[0].Only != "A" || len(doc.Verdicts) != len(d.Verdicts) {
		t.Errorf("JSON document %+v", doc)
	}
}

func names2(ns []*tracefile.DiffNode) []string {
	return each(ns, func(n *tracefile.DiffNode) string { return n.Path })
}

// Identical traces (other ids) give no move and no one-side path.
func TestDiffOfIdenticalTracesHasNoMoves(t *testing.T) {
	a := profile(t, seedTrace(traceA, "sync", 5000))
	b := profile(t, seedTrace(traceB, "sync", 5000))
	d, err := tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{b}, tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Verdicts) != 0 {
		t.Errorf("verdicts %q", d.Verdicts)
	}
	n := 0
	d.Walk(func(x *tracefile.DiffNode) {
		n++
		if x.Delta() != 0 || x.OnlyA() || x.OnlyB() || d.Moved(x) {
			t.Errorf("%s moved: %+v", x.Path, x)
		}
	})
	if n != 9 { // engine.job, queue, synthesize, prove, groth16.prove, msm.g1.a, msm.kernel, compute_h, release
		t.Errorf("%d paths, want 9", n)
	}
	var text bytes.Buffer
	tracefile.WriteDiff(&text, d, 0)
	if !strings.Contains(text.String(), "no span moved by 1 ms and 5 % or more") || strings.Contains(text.String(), "*") {
		t.Errorf("text:\n%s", text.String())
	}
	// Thresholds of exactly 0: still no move, a change of 0 is none.
	d, err = tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{b}, tracefile.DiffOptions{Exact: true})
	if err != nil || len(d.Verdicts) != 0 {
		t.Errorf("thresholds of 0: %v, verdicts %q", err, d.Verdicts)
	}
	text.Reset()
	tracefile.WriteDiff(&text, d, 0)
	if !strings.Contains(text.String(), "no span moved by 0 ms and 0 % or more") {
		t.Errorf("text under thresholds of 0:\n%s", text.String())
	}
}

// Sets are compared by their medians per path; a path missing from a
// trace counts 0 there.
func TestDiffComparesMediansOverSets(t *testing.T) {
	var a, b []tracefile.Profile
	for i, synth := range []float64{10000, 30000, 11000} {
		spans := seedTrace(tid32(i), "sync", synth)
		if i == 0 { // a first proof that compiled its kernels
			spans = append(spans, tracefile.Span{TraceID: tid32(i), SpanID: "00000000000000ff", ParentID: spans[0].SpanID, Name: "cuda.compile", Start: at(1), End: at(7001)})
		}
		a = append(a, profile(t, spans))
	}
	for i, synth := range []float64{6000, 7000} {
		b = append(b, profile(t, seedTrace(tid32(10+i), "sync", synth)))
	}
	d, err := tracefile.DiffProfiles(a, b, tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	synth := d.Find("pipeline.synthesize")
	if synth.A != 11000*time.Millisecond || synth.B != 6500*time.Millisecond {
		t.Errorf("synthesis medians A %v B %v, want 11 s and 6.5 s", synth.A, synth.B)
	}
	compile := d.Find("engine.job/cuda.compile")
	if compile == nil || compile.TracesA != 1 || compile.A != 0 || !compile.OnlyA() {
		t.Errorf("a path in 1 of 3 traces: %+v, want median 0, in 1 trace, on A only", compile)
	}
	if d.TracesA != 3 || d.TracesB != 2 {
		t.Errorf("traces %d, %d", d.TracesA, d.TracesB)
	}
}

// Different circuits, a side that mixes circuits, no root in common, an
// empty side: errors, the first three wrapping ErrMismatch.
func TestDiffRefusesMismatchedInputs(t *testing.T) {
	a := profile(t, seedTrace(traceA, "sync", 5000))
	other := seedTrace(traceB, "sync", 5000)
	other[0].Attrs = map[string]any{"cuzk.circuit.id": "mulchain", "cuzk.circuit.constraints": int64(1024)}
	b := profile(t, other)
	gap := profile(t, buildSpans(traceB, []spanSpec{{-1, "e2e.gap", 0, 10, nil}}))
	for name, c := range map[string]struct {
		a, b []tracefile.Profile
		want string
	}{
		"circuits":   {[]tracefile.Profile{a}, []tracefile.Profile{b}, "A is of circuit merkle, B of mulchain"},
		"mixed side": {[]tracefile.Profile{a, b}, []tracefile.Profile{a}, "side A mixes circuits"},
		"roots":      {[]tracefile.Profile{a}, []tracefile.Profile{gap}, "no root span in common"},
	} {
		_, err := tracefile.DiffProfiles(c.a, c.b, tracefile.DiffOptions{})
		if !errors.Is(err, tracefile.ErrMismatch) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line wrapping ErrMismatch with %q", name, err, c.want)
		}
	}
	if _, err := tracefile.DiffProfiles(nil, []tracefile.Profile{a}, tracefile.DiffOptions{}); err == nil {
		t.Error("an empty side gave no error")
	}
}

// The HTML page embeds both waterfalls on one axis (the longer trace's
// duration) with each row's path, the moved rows and the one-side rows
// marked, and nothing that a span name could break out of.
func TestWriteDiffHTMLMarksMovedSpansOnOneAxis(t *testing.T) {
	sa, sb := seedTrace(traceA, "async", 10000), seedTrace(traceB, "sync", 6500)
	sb[4].Name = "groth16.prove</script><b>"
	sa[4].Name = sb[4].Name
	d, err := tracefile.DiffProfiles([]tracefile.Profile{profile(t, sa)}, []tracefile.Profile{profile(t, sb)}, tracefile.DiffOptions{ThresholdMS: 100})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := tracefile.WriteDiffHTML(&page, d, sa, sb); err != nil {
		t.Fatal(err)
	}
	s := page.String()
	if strings.Contains(s, "</script><b>") || strings.Count(s, "</script>") != 2 {
		t.Error("a span name closed the script element")
	}
	i, j := strings.Index(s, `type="application/json">`), strings.Index(s, "</script>")
	var doc struct {
		AxisMS float64 `json:"axis_ms"`
		A, B   struct {
			DurationMS float64 `json:"duration_ms"`
			Spans      []struct {
				Path    string
				Moved   bool
				Only    bool
				DeltaMS float64 `json:"delta_ms"`
			}
		}
	}
	if err := json.Unmarshal([]byte(s[i+len(`type="application/json">`):j]), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.AxisMS != 19300 || doc.A.DurationMS != 19300 || doc.B.DurationMS != 13650 {
		t.Errorf("axis %v, A %v, B %v; want one axis of 19300 ms", doc.AxisMS, doc.A.DurationMS, doc.B.DurationMS)
	}
	marks := map[string]string{}
	for _, sp := range doc.B.Spans {
		marks[sp.Path] = fmt.Sprintf("moved=%v only=%v delta=%v", sp.Moved, sp.Only, sp.DeltaMS)
	}
	for path, want := range map[string]string{
		"engine.job/pipeline.prove":                "moved=true only=false delta=2000",
		"engine.job/pipeline.prove/buffer.release": "moved=true only=true delta=2000",
		"engine.job/pipeline.prove/" + sa[4].Name:  "moved=false only=false delta=0",
		"engine.job/pipeline.synthesize":           "moved=true only=false delta=-3500",
	} {
		if marks[path] != want {
			t.Errorf("B row %s: %s, want %s", path, marks[path], want)
		}
	}
	if err := tracefile.WriteDiffHTML(&page, d, nil, sb); err == nil {
		t.Error("a side without spans gave no error")
	}
}

func TestFormatDelta(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Second: "+2.0 s", -9800 * time.Millisecond: "−9.8 s", 350 * time.Millisecond: "+350.0 ms",
		-10 * time.Microsecond: "+0.0 ms", -60 * time.Microsecond: "−0.1 ms", 0: "+0.0 ms",
	} {
		if got := tracefile.FormatDelta(d); got != want {
			t.Errorf("FormatDelta(%v) = %q, want %q", d, got, want)
		}
	}
}

// A daemon's job sits under its server span (and the caller's): paths
// start at engine.job, so it compares with a cuzk prove run path for
// path, and the spans above the job match nothing.
func TestDiffComparesFromEngineJob(t *testing.T) {
	local := seedTrace(traceA, "sync", 5000)
	daemon := seedTrace(traceB, "sync", 5000)
	server := tracefile.Span{TraceID: traceB, SpanID: "00000000000000ee", Name: "cuzk.v1.ProvingEngine/SubmitProof", Start: at(-5), End: at(20000)}
	daemon[0].ParentID = server.SpanID
	daemon = append(daemon, server)
	pa, pb := profile(t, local), profile(t, daemon)
	if pb.Root != "engine.job" || pb.Jobs != 1 || pb.Path("engine.job", "pipeline.prove") == nil || pb.Path("cuzk.v1.ProvingEngine/SubmitProof") != nil {
		t.Fatalf("daemon profile: root %q, %d jobs", pb.Root, pb.Jobs)
	}
	if pb.Total != pa.Total {
		t.Errorf("totals %v and %v: want the job's duration, not the server span's", pa.Total, pb.Total)
	}
	d, err := tracefile.DiffProfiles([]tracefile.Profile{pa}, []tracefile.Profile{pb}, tracefile.DiffOptions{})
	if err != nil || len(d.Verdicts) != 0 || len(d.Roots) != 1 {
		t.Fatalf("diff %v, verdicts %q, roots %d", err, d.Verdicts, len(d.Roots))
	}
	var page bytes.Buffer
	if err := tracefile.WriteDiffHTML(&page, d, local, daemon); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `"path":"cuzk.v1.ProvingEngine/SubmitProof","name"`) || !strings.Contains(page.String(), `"path":"engine.job/pipeline.prove","name"`) {
		t.Error("the HTML rows do not carry the job's paths")
	}
}

// A child that moves by the thresholds inside a layer that does not (300
// ms is 15 % of the MSM but 0.2 % of the prove around it) is marked "*"
// and named by its layer's verdict; the footer never says nothing moved
// while a row is marked, and "*" is explained. A root without children
// that moved has a verdict of its own.
func TestDiffMarksAndVerdictsAgree(t *testing.T) {
	run := func(id string, msmEnd, hStart, end float64) []tracefile.Span {
		return buildSpans(id, []spanSpec{
			{-1, "engine.job", 0, end, merkle},
			{0, "groth16.prove", 50, end, nil},
			{1, "msm.g1.a", 100, msmEnd, nil},
			{1, "groth16.compute_h", hStart, end - 50, nil},
		})
	}
	a := profile(t, run(traceA, 2100, 2200, 10050))
	b := profile(t, run(traceB, 2400, 2500, 10070))
	d, err := tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{b}, tracefile.DiffOptions{ThresholdMS: 10, ThresholdPct: 5, Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	msm := d.Find("msm.g1.a")
	if !d.Moved(msm) || d.Moved(d.Find("groth16.prove")) || d.Moved(d.Find("engine.job")) {
		t.Fatalf("moved: msm %v, prove %v, job %v; want the MSM only", d.Moved(msm), d.Moved(d.Find("groth16.prove")), d.Moved(d.Find("engine.job")))
	}
	if len(d.Verdicts) != 1 || !strings.HasPrefix(d.Verdicts[0], "groth16.prove +20.0 ms: msm.g1.a +300.0 ms, untraced ") {
		t.Errorf("verdicts %q, want one naming the MSM under groth16.prove", d.Verdicts)
	}
	var text bytes.Buffer
	if err := tracefile.WriteDiff(&text, d, 0); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{"msm.g1.a  *\n", "* moved by 10 ms and 5 % of A or more", "moved (by 10 ms and 5 % or more), by layer:\n  groth16.prove +20.0 ms: msm.g1.a +300.0 ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no span moved") || strings.Contains(out, "groth16.prove  *") {
		t.Errorf("text:\n%s", out)
	}
	// --depth 1 hides the marked row: no legend, the verdict stays.
	text.Reset()
	tracefile.WriteDiff(&text, d, 1)
	if strings.Contains(text.String(), "*") || !strings.Contains(text.String(), "groth16.prove +20.0 ms: msm.g1.a") {
		t.Errorf("--depth 1:\n%s", text.String())
	}

	leaf := func(id string, end float64) tracefile.Profile {
		return profile(t, buildSpans(id, []spanSpec{{-1, "task", 0, end, nil}}))
	}
	d, err = tracefile.DiffProfiles([]tracefile.Profile{leaf(traceA, 100)}, []tracefile.Profile{leaf(traceB, 200)}, tracefile.DiffOptions{})
	if err != nil || len(d.Verdicts) != 1 || d.Verdicts[0] != "task +100.0 ms: untraced +0.0 ms" {
		t.Errorf("a moved root without children: %v, verdicts %q", err, d.Verdicts)
	}
}
