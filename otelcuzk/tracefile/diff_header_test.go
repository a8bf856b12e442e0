package tracefile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// withRun marks spans as a cuzk run's: the job span carries the backend,
// and every span the resource's host and build.
func withRun(spans []tracefile.Span, backend, host, build string) []tracefile.Span {
	for i := range spans {
		spans[i].Host, spans[i].Version = host, build
		if spans[i].Name == "engine.job" {
			attrs := map[string]any{"cuzk.backend": backend}
			for k, v := range spans[i].Attrs {
				attrs[k] = v
			}
			spans[i].Attrs = attrs
		}
	}
	return spans
}

// The header names, per side, what ran: circuit, size, backend, release
// mode, host and build, in text, JSON and HTML.
func TestDiffHeaderSaysWhatRanOnEachSide(t *testing.T) {
	a := profile(t, withRun(seedTrace(traceA, "async", 10000), "cpu", "vm-a", "47dd6bd0a1b2"))
	b := profile(t, withRun(seedTrace(traceB, "sync", 6500), "cuda", "h200", "4d8d8a6c0ffe"))
	if a.Run.CircuitID != "merkle" || a.Run.Constraints != 1<<20 || a.Run.Backend != "cpu" || a.Run.Host != "vm-a" || a.Run.Build != "47dd6bd0a1b2" || len(a.Run.Releases) != 1 || a.Run.Releases[0] != "async" {
		t.Fatalf("run %+v", a.Run)
	}
	d, err := tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{b}, tracefile.DiffOptions{ThresholdMS: 100, ThresholdPct: 5})
	if err != nil {
		t.Fatal(err)
	}
	wantA := "merkle 2^20 (1048576 constraints), backend cpu, release async, host vm-a, build 47dd6bd0a1b2"
	wantB := "merkle 2^20 (1048576 constraints), backend cuda, release sync, host h200, build 4d8d8a6c0ffe"
	var text bytes.Buffer
	if err := tracefile.WriteDiff(&text, d, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A: " + wantA + "\n   1 trace, median", "B: " + wantB + "\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := tracefile.WriteDiffJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunA struct {
			Text     string   `json:"text"`
			Backends []string `json:"backends"`
			Hosts    []string `json:"hosts"`
			Builds   []string `json:"builds"`
		} `json:"run_a"`
		RunB struct {
			Releases []string `json:"release_modes"`
		} `json:"run_b"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.RunA.Text != wantA || doc.RunA.Backends[0] != "cpu" || doc.RunA.Hosts[0] != "vm-a" || doc.RunA.Builds[0] != "47dd6bd0a1b2" || doc.RunB.Releases[0] != "sync" {
		t.Errorf("JSON runs %+v", doc)
	}
	var page bytes.Buffer
	if err := tracefile.WriteDiffHTML(&page, d, seedTrace(traceA, "async", 10000), seedTrace(traceB, "sync", 6500)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `"run_a":"`+wantA+`"`) || !strings.Contains(page.String(), `id="run-b"`) {
		t.Error("the HTML page does not carry the sides' runs")
	}
}

// An attribute whose one value differs between the sides is named with
// both values: `cuzk.key.cache_hit: false → true`.
func TestDiffNamesTheChangedAttribute(t *testing.T) {
	run := func(id string, hit bool, load float64) []tracefile.Span {
		return buildSpans(id, []spanSpec{
			{-1, "engine.job", 0, load + 1000, merkle},
			{0, "keys.load", 0, load, map[string]any{"cuzk.key.cache_hit": hit}},
			{0, "pipeline.prove", load, load + 1000, nil},
		})
	}
	d, err := tracefile.DiffProfiles([]tracefile.Profile{profile(t, run(traceA, false, 24000))}, []tracefile.Profile{profile(t, run(traceB, true, 400))}, tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "engine.job −23.6 s: keys.load −23.6 s (cuzk.key.cache_hit: false → true)"
	if len(d.Verdicts) == 0 || !strings.HasPrefix(d.Verdicts[0], want) {
		t.Errorf("verdicts %q, want one starting %q", d.Verdicts, want)
	}
}

// With one trace a side, a change within the noise floor is not a move:
// marked "~", not "*", no verdict, and a line says why and suggests
// --last N; beyond the floor it moves. NoiseFloorPct 0 (Exact) turns the
// floor off.
func TestDiffOneTraceEachUsesTheNoiseFloor(t *testing.T) {
	run := func(id string, msm float64) []tracefile.Span {
		return buildSpans(id, []spanSpec{
			{-1, "engine.job", 0, 100 + msm, merkle},
			{0, "msm.g1.k", 100, 100 + msm, nil},
		})
	}
	a := profile(t, run(traceA, 1000))
	noise := profile(t, run(traceB, 1200)) // +20 %: under the 25 % floor
	real := profile(t, run(traceB, 1400))  // +40 %
	d, err := tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{noise}, tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msm := d.Find("msm.g1.k")
	if d.Moved(msm) || !d.Noisy(msm) || len(d.Verdicts) != 0 || !d.OneTraceEach() {
		t.Errorf("+20 %% with one trace a side: moved %v, noisy %v, verdicts %q", d.Moved(msm), d.Noisy(msm), d.Verdicts)
	}
	var text bytes.Buffer
	if err := tracefile.WriteDiff(&text, d, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"msm.g1.k  ~\n", "~ changed by the thresholds, but within the run-to-run spread", "one trace a side: no run-to-run spread to measure", "25 % of A", "--last N compares N traces a side", "no span moved"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "  *") {
		t.Errorf("a row within the noise floor is starred:\n%s", text.String())
	}
	if d, _ = tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{real}, tracefile.DiffOptions{}); !d.Moved(d.Find("msm.g1.k")) {
		t.Error("+40 % did not move")
	}
	if d, _ = tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{noise}, tracefile.DiffOptions{ThresholdMS: 10, ThresholdPct: 5, Exact: true}); !d.Moved(d.Find("msm.g1.k")) {
		t.Error("with the floor off (Exact, 0), +20 % did not move")
	}
}

// The CPU's MSMs run side by side on its cores: with one trace a side, a
// trade of time between them (msm.g1.a −400 ms, msm.g1.k +400 ms) while
// groth16.prove holds still is not a move, however large each share; the
// same change made one after another (the GPU's MSMs) is, and so is a
// concurrent MSM whose parent moved with it. "cuzk trace diff" of a
// --release sync/async pair on the CPU starred msm.g1.k +139.5 % and
// msm.g1.a −66.0 % under a groth16.prove of +2.4 %.
func TestDiffOneTraceEachDoesNotStarATradeOfTimeBetweenConcurrentSpans(t *testing.T) {
	concurrent := func(id string, a, k, prove float64) []tracefile.Span {
		return buildSpans(id, []spanSpec{
			{-1, "engine.job", 0, 100 + prove, merkle},
			{0, "groth16.prove", 100, 100 + prove, nil},
			{1, "msm.g1.a", 100, 100 + a, nil},
			{1, "msm.g1.k", 101, 101 + k, nil},
		})
	}
	d, err := tracefile.DiffProfiles([]tracefile.Profile{profile(t, concurrent(traceA, 1000, 600, 1000))},
		[]tracefile.Profile{profile(t, concurrent(traceB, 600, 1000, 1010))}, tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"msm.g1.a", "msm.g1.k"} {
		n := d.Find(name)
		if !n.Concurrent || d.Moved(n) || !d.Noisy(n) || !d.SharedTime(n) {
			t.Errorf("%s (concurrent %v): moved %v, noisy %v, shared %v; want a ~, not a move", name, n.Concurrent, d.Moved(n), d.Noisy(n), d.SharedTime(n))
		}
	}
	if len(d.Verdicts) != 0 {
		t.Errorf("verdicts %q, want none", d.Verdicts)
	}
	var text bytes.Buffer
	if err := tracefile.WriteDiff(&text, d, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "ran beside its siblings (they share the cores)") || strings.Contains(text.String(), "  *") {
		t.Errorf("text:\n%s", text.String())
	}

	// The parent moved with its child: a move.
	d, _ = tracefile.DiffProfiles([]tracefile.Profile{profile(t, concurrent(traceA, 1000, 600, 1000))},
		[]tracefile.Profile{profile(t, concurrent(traceB, 1600, 600, 1600))}, tracefile.DiffOptions{})
	if n := d.Find("msm.g1.a"); !d.Moved(n) {
		t.Errorf("msm.g1.a +60 %% with groth16.prove +60 %%: not a move")
	}

	// One after another: each its own time, a move.
	sequential := func(id string, a, k float64) []tracefile.Span {
		return buildSpans(id, []spanSpec{
			{-1, "engine.job", 0, 100 + a + k, merkle},
			{0, "groth16.prove", 100, 100 + a + k, nil},
			{1, "msm.g1.a", 100, 100 + a, nil},
			{1, "msm.g1.k", 100 + a, 100 + a + k, nil},
		})
	}
	d, _ = tracefile.DiffProfiles([]tracefile.Profile{profile(t, sequential(traceA, 1000, 600))},
		[]tracefile.Profile{profile(t, sequential(traceB, 600, 1000))}, tracefile.DiffOptions{})
	for _, name := range []string{"msm.g1.a", "msm.g1.k"} {
		if n := d.Find(name); n.Concurrent || !d.Moved(n) {
			t.Errorf("sequential %s: concurrent %v, moved %v; want a move", name, n.Concurrent, d.Moved(n))
		}
	}
}

// With several traces a side, the spread is measured: a change whose
// sides' ranges overlap is within it, one whose ranges are apart moved.
func TestDiffSetsUseTheirMeasuredSpread(t *testing.T) {
	run := func(id string, msm float64) tracefile.Profile {
		return profile(t, buildSpans(id, []spanSpec{{-1, "engine.job", 0, 100 + msm, merkle}, {0, "msm.g1.k", 100, 100 + msm, nil}}))
	}
	set := func(ms ...float64) []tracefile.Profile {
		var out []tracefile.Profile
		for i, m := range ms {
			out = append(out, run(tid32(i), m))
		}
		return out
	}
	// Medians 1000 and 1100 (+10 %), ranges 900–1150 and 1050–1200: overlap.
	d, err := tracefile.DiffProfiles(set(900, 1000, 1150), set(1050, 1100, 1200), tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if msm := d.Find("msm.g1.k"); d.Moved(msm) || !d.Noisy(msm) || msm.MinA != 900e6 || msm.MaxB != 1200e6 {
		t.Errorf("overlapping ranges: moved %v noisy %v, %+v", d.Moved(msm), d.Noisy(msm), msm)
	}
	// +10 % with tight ranges, 990–1010 and 1090–1110: moved.
	if d, _ = tracefile.DiffProfiles(set(990, 1000, 1010), set(1090, 1100, 1110), tracefile.DiffOptions{}); !d.Moved(d.Find("msm.g1.k")) {
		t.Error("ranges apart did not move")
	}
}

// A change on a baseline under 1 ms is shown in ms, not as a percentage
// (no +2874167.4 % on 0.001 ms), in the text and the JSON.
func TestDiffShowsSubMillisecondBaselinesAsAbsolute(t *testing.T) {
	run := func(id string, queue float64) tracefile.Profile {
		return profile(t, buildSpans(id, []spanSpec{{-1, "engine.job", 0, 1000 + queue, merkle}, {0, "engine.queue", 0, queue, nil}, {0, "pipeline.prove", queue, queue + 1000, nil}}))
	}
	d, err := tracefile.DiffProfiles([]tracefile.Profile{run(traceA, 0.001)}, []tracefile.Profile{run(traceB, 28.742)}, tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := tracefile.WriteDiff(&text, d, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "+28.741 +28.741 ms") || strings.Contains(text.String(), "2874") {
		t.Errorf("text:\n%s", text.String())
	}
	if err := tracefile.WriteDiffJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"name": "engine.queue"`) || !strings.Contains(js.String(), `"delta_pct": null`) {
		t.Errorf("JSON: want delta_pct null for the 0.001 ms baseline:\n%s", js.String())
	}
}

// A side whose job did not succeed is flagged in the verdicts (text and
// JSON) and its header, with the error.type and message.
func TestDiffFlagsAJobThatDidNotSucceed(t *testing.T) {
	a := seedTrace(traceA, "async", 10000)
	b := seedTrace(traceB, "async", 10000)
	b[0].Status = tracefile.Status{Code: tracefile.StatusError, Message: "job cancelled"}
	b[0].Attrs = map[string]any{"cuzk.circuit.id": "merkle", "cuzk.circuit.constraints": int64(1 << 20), "error.type": "canceled"}
	d, err := tracefile.DiffProfiles([]tracefile.Profile{profile(t, a)}, []tracefile.Profile{profile(t, b)}, tracefile.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The job's state as cuzk status says it (CANCELLED), not the
	// attribute's spelling beside "job cancelled".
	want := "B: its job did not succeed (CANCELLED: job cancelled); its times are of a run cut short, not comparable"
	if len(d.Failures) != 1 || d.Failures[0] != want || d.RunsB.Failed != 1 || d.RunsA.Failed != 0 {
		t.Fatalf("failures %q, runs A %+v B %+v", d.Failures, d.RunsA, d.RunsB)
	}
	var text, js bytes.Buffer
	_ = tracefile.WriteDiff(&text, d, 0)
	_ = tracefile.WriteDiffJSON(&js, d)
	if !strings.Contains(text.String(), "warning: "+want) || !strings.Contains(text.String(), "1 job did not succeed (CANCELLED)") || !strings.Contains(js.String(), want) {
		t.Errorf("text:\n%s\nJSON:\n%s", text.String(), js.String())
	}
}

// Different sizes of one circuit are refused, naming --normalize; with
// Normalize and the times scaled per constraint they compare.
func TestDiffNormalizeComparesSizesPerConstraint(t *testing.T) {
	run := func(id string, size int64, msm float64) tracefile.Profile {
		return profile(t, buildSpans(id, []spanSpec{{-1, "engine.job", 0, msm, map[string]any{"cuzk.circuit.id": "merkle", "cuzk.circuit.constraints": size}}, {0, "msm.g1.k", 0, msm, nil}}))
	}
	a, b := run(traceA, 1<<16, 1000), run(traceB, 1<<18, 4000)
	_, err := tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{b}, tracefile.DiffOptions{})
	if !errors.Is(err, tracefile.ErrMismatch) || !strings.Contains(err.Error(), "A is of 65536 constraints, B of 262144 (--normalize compares per constraint)") {
		t.Fatalf("sizes: %v", err)
	}
	d, err := tracefile.DiffProfiles([]tracefile.Profile{a}, []tracefile.Profile{b.Scale(0.25)}, tracefile.DiffOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if msm := d.Find("msm.g1.k"); msm.Delta() != 0 || d.Moved(msm) {
		t.Errorf("4× the time at 4× the size: %+v", msm)
	}
	var text bytes.Buffer
	_ = tracefile.WriteDiff(&text, d, 0)
	if !strings.Contains(text.String(), "times per constraint (--normalize): each trace's scaled to 2^16 (65536 constraints)") || !strings.Contains(text.String(), "B: merkle 2^18 (262144 constraints)") {
		t.Errorf("text:\n%s", text.String())
	}
}
