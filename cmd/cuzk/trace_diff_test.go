package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// otlpSpan is one span of a constructed trace file line.
type otlpSpan struct {
	id, parent, name string
	start, end       float64 // ms after t0
	attrs            map[string]string
}

// otlpLine writes spans of trace as one OTLP JSON line, as the exporter does.
func otlpLine(trace string, spans []otlpSpan) string {
	const t0 = 1764400000000000000
	var parts []string
	for _, s := range spans {
		m := map[string]any{
			"traceId": trace, "spanId": s.id, "name": s.name, "kind": 1,
			"startTimeUnixNano": fmt.Sprint(t0 + int64(s.start*1e6)), "endTimeUnixNano": fmt.Sprint(t0 + int64(s.end*1e6)),
		}
		if s.parent != "" {
			m["parentSpanId"] = s.parent
		}
		var attrs []any
		for k, v := range s.attrs {
			attrs = append(attrs, map[string]any{"key": k, "value": map[string]any{"stringValue": v}})
		}
		if attrs != nil {
			m["attributes"] = attrs
		}
		b, _ := json.Marshal(m)
		parts = append(parts, string(b))
	}
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}}]},"scopeSpans":[{"spans":[` + strings.Join(parts, ",") + `]}]}]}`
}

// seedRun is one proof of the seed's story: release "async" frees the
// buffers after the prove, "sync" inside it; synth is the synthesis in ms.
func seedRun(trace, release, circuit string, synth float64) string {
	p := 100 + synth
	job := map[string]string{"cuzk.circuit.id": circuit}
	rel := map[string]string{"cuzk.release.mode": release}
	spans := []otlpSpan{
		{"0000000000000001", "", "engine.job", 0, 0, job},
		{"0000000000000002", "0000000000000001", "engine.queue", 0, 100, nil},
		{"0000000000000003", "0000000000000001", "pipeline.synthesize", 100, p, nil},
		{"0000000000000004", "0000000000000001", "pipeline.prove", p, 0, nil},
		{"0000000000000005", "0000000000000004", "groth16.prove", p + 50, p + 4950, nil},
		{"0000000000000006", "0000000000000005", "msm.g1.a", p + 100, p + 2100, nil},
	}
	if release == "sync" {
		spans = append(spans, otlpSpan{"0000000000000007", "0000000000000004", "buffer.release", p + 5000, p + 7000, rel})
		spans[3].end, spans[0].end = p+7000, p+7050
	} else {
		spans = append(spans, otlpSpan{"0000000000000007", "0000000000000001", "buffer.release", p + 5100, p + 9100, rel})
		spans[3].end, spans[0].end = p+5000, p+9200
	}
	return otlpLine(trace, spans)
}

const (
	idA = "0af7651916cd43dd8448eb211c80319c"
	idB = "4bf92f3577b34da6a3ce929d0e0e4736"
)

// copyOf writes a copy of the file at path under another name: the same
// traces in a second file, which a diff may compare with the first.
func copyOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy-"+filepath.Base(path))
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return cp
}

func writeLines(t *testing.T, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The seed's story from two trace files: the verdict names the release
// inside the prove on B; --json and --html; --fail-over exits 2 only when
// the chosen layer regressed by more.
func TestTraceDiffFilesNamesTheCause(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	b := writeLines(t, "b.jsonl", seedRun(idB, "sync", "merkle", 6500))
	page := filepath.Join(t.TempDir(), "diff.html")
	out, err := runTraceCmd(t, "trace", "diff", a, b, "--threshold-ms", "100", "--html", page)
	if err != nil {
		t.Fatalf("trace diff: %v\n%s", err, out)
	}
	for _, want := range []string{
		"pipeline.prove +2.0 s: buffer.release +2.0 s (only on B, cuzk.release.mode: sync), untraced +0.0 ms",
		"[only A]", "[only B]", "trace " + idA, "trace " + idB, "HTML diff: " + page,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	html, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(html), `"path":"engine.job/pipeline.prove/buffer.release"`) || !strings.Contains(string(html), "<!DOCTYPE html>") {
		t.Errorf("HTML page: %v", err)
	}

	out, err = runTraceCmd(t, "trace", "diff", "--json", a, b)
	var doc struct{ Verdicts []string }
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Verdicts) == 0 {
		t.Errorf("--json: %v\n%s", err, out)
	}

	// B is faster overall (−5.7 s): the root did not regress ...
	if _, err := runTraceCmd(t, "trace", "diff", a, b, "--fail-over", "5"); err != nil {
		t.Errorf("--fail-over on a faster run: %v", err)
	}
	// ... but pipeline.prove did, by 40 %.
	_, err = runTraceCmd(t, "trace", "diff", a, b, "--fail-over", "5", "--fail-layer", "pipeline.prove")
	ec, ok := err.(cli.ExitCoder)
	if !ok || ec.ExitCode() != exitRegressed || !strings.Contains(err.Error(), "engine.job/pipeline.prove regressed: +2.0 s (40.0 %)") {
		t.Errorf("--fail-layer pipeline.prove: %v, want exit %d naming the regression", err, exitRegressed)
	}
	if _, err := runTraceCmd(t, "trace", "diff", a, b, "--fail-over", "50", "--fail-layer", "pipeline.prove"); err != nil {
		t.Errorf("a 40 %% regression under --fail-over 50: %v", err)
	}
}

// Sets: --all and --last N compare medians per path over the jobs of each
// file; without them a file of several traces gives its last, with a note.
func TestTraceDiffSetsOfTraces(t *testing.T) {
	var la, lb []string
	for i, synth := range []float64{10000, 30000, 11000} {
		la = append(la, seedRun(fmt.Sprintf("%032x", i+1), "sync", "merkle", synth))
	}
	for i, synth := range []float64{6000, 7000, 90000} {
		lb = append(lb, seedRun(fmt.Sprintf("%032x", i+11), "sync", "merkle", synth))
	}
	a, b := writeLines(t, "a.jsonl", la...), writeLines(t, "b.jsonl", lb...)
	out, err := runTraceCmd(t, "trace", "diff", a, b, "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	synth := func(out string) (float64, float64) {
		var doc struct {
			Nodes []struct {
				Children []struct {
					Path string
					AMS  float64 `json:"a_ms"`
					BMS  float64 `json:"b_ms"`
				}
			}
		}
		json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &doc)
		for _, c := range doc.Nodes[0].Children {
			if c.Path == "engine.job/pipeline.synthesize" {
				return c.AMS, c.BMS
			}
		}
		t.Fatalf("no synthesis in %s", out)
		return 0, 0
	}
	if sa, sb := synth(out); sa != 11000 || sb != 7000 {
		t.Errorf("--all: synthesis medians %v, %v; want 11000, 7000", sa, sb)
	}
	out, err = runTraceCmd(t, "trace", "diff", a, b, "--last", "2", "--json")
	if sa, sb := synth(out); err != nil || sa != 20500 || sb != 48500 {
		t.Errorf("--last 2: synthesis medians %v, %v (%v); want 20500, 48500 (ties in start broken by trace id)", sa, sb, err)
	}
	out, err = runTraceCmd(t, "trace", "diff", a, b)
	if err != nil || !strings.Contains(out, "holds 3 traces; comparing the last") {
		t.Errorf("several traces without a choice: %v\n%s", err, out)
	}
}

// Malformed and mismatched inputs: one clear line, non-zero exit.
func TestTraceDiffBadInput(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	b := writeLines(t, "b.jsonl", seedRun(idB, "sync", "mulchain", 6500))
	garbage := writeLines(t, "g.jsonl", "{not json")
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"one argument":       {[]string{a}, "want two arguments"},
		"different circuit":  {[]string{a, b}, "A is of circuit merkle, B of mulchain"},
		"missing trace id":   {[]string{a, a, "--trace-id-b", idB}, "B: trace " + idB + ": not found"},
		"not a trace id":     {[]string{a, a, "--trace-id-a", "xyz"}, "--trace-id-a xyz: not a trace id"},
		"malformed file":     {[]string{a, garbage}, "is not a trace file"},
		"missing file":       {[]string{a, filepath.Join(t.TempDir(), "nope")}, "no such file"},
		"unknown layer":      {[]string{a, copyOf(t, a), "--fail-over", "1", "--fail-layer", "nosuch"}, "--fail-layer nosuch"},
		"last and all":       {[]string{a, a, "--last", "2", "--all"}, "not both"},
		"remote with last":   {[]string{idA, idB, "--jaeger", "http://127.0.0.1:1", "--last", "2"}, "take a FILE"},
		"unreachable":        {[]string{idA, idB, "--jaeger", "http://127.0.0.1:1"}, "127.0.0.1:1"},
		"typo with --jaeger": {[]string{a + "x", idB, "--jaeger", "http://127.0.0.1:1"}, "A: " + a + "x is neither a file (no such file or directory) nor a trace id (up to 32 hex digits) to fetch from --jaeger"},
		"typo with --tempo":  {[]string{idA, "b.jsnl", "--tempo", "http://127.0.0.1:1"}, "B: b.jsnl is neither a file (no such file or directory) nor a trace id (up to 32 hex digits) to fetch from --tempo"},
	} {
		out, err := runTraceCmd(t, append([]string{"trace", "diff"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line containing %q (output %q)", name, err, c.want, out)
		}
		if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() == exitRegressed {
			t.Errorf("%s: an input error exits %d, the regression status", name, exitRegressed)
		}
	}
}

// A large input streams: a side whose file begins with a 100 MiB line of
// zero bytes (over the 64 MiB cap) is read past it, with a note, and
// compared.
func TestTraceDiffStreamsLargeInput(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	b := filepath.Join(t.TempDir(), "b.jsonl")
	f, _ := os.Create(b)
	f.Truncate(100 << 20)
	f.Seek(0, 2)
	f.WriteString("\n" + seedRun(idB, "sync", "merkle", 6500) + "\n")
	f.Close()
	out, err := runTraceCmd(t, "trace", "diff", a, b, "--threshold-ms", "100")
	if err != nil || !strings.Contains(out, "longer than 67108864 bytes, skipped") || !strings.Contains(out, "buffer.release +2.0 s (only on B, cuzk.release.mode: sync)") {
		t.Errorf("diff past a 100 MiB line: %v\n%s", err, out)
	}
}

// A and B as trace ids in Jaeger: both fetched, compared as files are.
func TestTraceDiffFromJaeger(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		job := func(trace, prove string) string {
			return `{"data":[{"traceID":"` + trace + `","spans":[
{"traceID":"` + trace + `","spanID":"00000000000000a1","operationName":"engine.job","references":[],"startTime":1764400000000000,"duration":100000,"tags":[],"processID":"p1"},
{"traceID":"` + trace + `","spanID":"00000000000000a2","operationName":"pipeline.prove","references":[{"refType":"CHILD_OF","traceID":"` + trace + `","spanID":"00000000000000a1"}],"startTime":1764400000010000,"duration":` + prove + `,"tags":[],"processID":"p1"}],
"processes":{"p1":{"serviceName":"cuzk","tags":[]}}}],"errors":null}`
		}
		switch r.URL.Path {
		case "/api/traces/" + idA:
			w.Write([]byte(job(idA, "50000")))
		case "/api/traces/" + idB:
			w.Write([]byte(job(idB, "80000")))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`))
		}
	}))
	defer srv.Close()
	out, err := runTraceCmd(t, "trace", "diff", idA, idB, "--jaeger", srv.URL, "--json")
	if err != nil || !strings.Contains(out, `"path": "engine.job/pipeline.prove"`) || !strings.Contains(out, `"delta_ms": 30`) {
		t.Errorf("diff from Jaeger: %v\n%s", err, out)
	}
	if _, err := runTraceCmd(t, "trace", "diff", idA, "1111111111111111111111111111111a", "--jaeger", srv.URL); err == nil || !strings.Contains(err.Error(), "B:") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing B: %v", err)
	}
}

// --all reads a file of more jobs than the reader keeps spans of: the
// traces let go are profiled first, so every job is in the medians.
func TestTraceDiffAllPastTheMemoryBudget(t *testing.T) {
	const n = 16_000 // 7 spans, about 2.4 KB estimated each: 38 MB, past the 24 MiB a side keeps
	var b strings.Builder
	for i := range n {
		b.WriteString(seedRun(fmt.Sprintf("%032x", i+1), "sync", "merkle", float64(1000+i%7)))
		b.WriteByte('\n')
	}
	file := filepath.Join(t.TempDir(), "many.jsonl")
	os.WriteFile(file, []byte(b.String()), 0o644)
	out, err := runTraceCmd(t, "trace", "diff", file, copyOf(t, file), "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fmt.Sprintf(`"traces_a": %d`, n)) || !strings.Contains(out, fmt.Sprintf(`"traces_b": %d`, n)) {
		t.Errorf("want all %d traces on each side:\n%s", n, out[:min(len(out), 600)])
	}
	if strings.Contains(out, "left out") {
		t.Errorf("spans left out:\n%s", out[:min(len(out), 600)])
	}
}

// --last N counts jobs, not the status polls a daemon's file holds
// between them.
func TestTraceDiffLastCountsJobsNotPolls(t *testing.T) {
	var lines []string
	for i, synth := range []float64{10000, 30000, 11000} {
		lines = append(lines, seedRun(fmt.Sprintf("%032x", i+1), "sync", "merkle", synth))
		for k := range 5 {
			lines = append(lines, otlpLine(fmt.Sprintf("%030x%02x", i+1, k+1), []otlpSpan{{"00000000000000c1", "", "cuzk.v1.ProvingEngine/GetStatus", 20000 + float64(k), 20001 + float64(k), nil}}))
		}
	}
	file := writeLines(t, "daemon.jsonl", lines...)
	out, err := runTraceCmd(t, "trace", "diff", file, copyOf(t, file), "--last", "2", "--json")
	if err != nil || !strings.Contains(out, `"traces_a": 2`) {
		t.Fatalf("--last 2 over polls: %v\n%s", err, out[:min(len(out), 400)])
	}
	if !strings.Contains(out, `"path": "engine.job/pipeline.synthesize",
          "name": "pipeline.synthesize",
          "depth": 1,
          "a_ms": 20500`) {
		t.Errorf("want the median synthesis of the last 2 jobs (30 s, 11 s):\n%s", out[:min(len(out), 1500)])
	}
}

// --trace-id picks each side's trace of a file that holds several: given
// twice, A's then B's (before, after or around the arguments); once, the
// trace of both sides; --trace-id-a/--trace-id-b still work.
func TestTraceDiffTraceIDPerSide(t *testing.T) {
	const idC = "00000000000000000000000000000c0c"
	// One file of two proofs (then a third, so neither is "the last").
	both := writeLines(t, "both.jsonl", seedRun(idA, "async", "merkle", 10000), seedRun(idB, "sync", "merkle", 6500), seedRun(idC, "async", "merkle", 1))
	const verdict = "pipeline.prove +2.0 s: buffer.release +2.0 s (only on B, cuzk.release.mode: sync)"
	for name, args := range map[string][]string{
		"after the files":    {both, both, "--trace-id", idA, "--trace-id", idB},
		"before the files":   {"--trace-id", idA, "--trace-id", idB, both, both},
		"around the files":   {"--trace-id", idA, both, both, "--trace-id", idB},
		"one side each form": {both, both, "--trace-id-a", idA, "--trace-id-b", idB},
	} {
		out, err := runTraceCmd(t, append([]string{"trace", "diff", "--threshold-ms", "100"}, args...)...)
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
			continue
		}
		for _, want := range []string{verdict, "A: " + both + ", trace " + idA, "B: " + both + ", trace " + idB} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
	}

	// Once: both sides' trace, here the same proof in two files.
	other := writeLines(t, "other.jsonl", seedRun(idA, "async", "merkle", 10000), seedRun(idC, "sync", "merkle", 1))
	out, err := runTraceCmd(t, "trace", "diff", both, other, "--trace-id", idA)
	if err != nil || !strings.Contains(out, "A: "+both+", trace "+idA) || !strings.Contains(out, "B: "+other+", trace "+idA) {
		t.Errorf("one --trace-id for two files: %v\n%s", err, out)
	}
	out, err = runTraceCmd(t, "trace", "diff", both, other, "--trace-id", idA, "--json")
	var doc struct{ Verdicts []string }
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Verdicts) != 0 {
		t.Errorf("one --trace-id, the same proof on both sides: %v, want no moves\n%s", err, out)
	}

	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"once, same file":   {[]string{both, both, "--trace-id", idA}, "would compare trace " + idA + " with itself; give --trace-id twice"},
		"once, not in B":    {[]string{both, other, "--trace-id", idB}, "B: trace " + idB + ": not found in " + other + " (one --trace-id names both sides' trace; give it twice"},
		"three times":       {[]string{both, both, "--trace-id", idA, "--trace-id", idB, "--trace-id", idC}, "--trace-id given 3 times: at most twice"},
		"with --trace-id-a": {[]string{both, both, "--trace-id", idA, "--trace-id-b", idB}, "give --trace-id, or --trace-id-a/--trace-id-b, not both"},
		"bad B id":          {[]string{both, both, "--trace-id", idA, "--trace-id", "xyz"}, "--trace-id (B's) xyz: not a trace id"},
		"not found, B":      {[]string{both, both, "--trace-id", idA, "--trace-id", "ab"}, "B: trace 000000000000000000000000000000ab: not found in " + both},
		"remote":            {[]string{idA, idB, "--jaeger", "http://127.0.0.1:1", "--trace-id", idA}, "take a FILE"},
	} {
		out, err := runTraceCmd(t, append([]string{"trace", "diff"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line containing %q (output %q)", name, err, c.want, out)
		}
	}
}

// --last 0 is an error, not "no --last": a set of no traces compares nothing.
func TestTraceDiffLastZeroIsAnError(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	for _, n := range []string{"0", "-1"} {
		out, err := runTraceCmd(t, "trace", "diff", a, a, "--last", n)
		if err == nil || !strings.Contains(err.Error(), "--last "+n+": want a positive count of traces") {
			t.Errorf("--last %s: err %v, want a one-line refusal (output %q)", n, err, out)
		}
	}
	if out, err := runTraceCmd(t, "trace", "diff", a, copyOf(t, a), "--last", "1"); err != nil {
		t.Errorf("--last 1: %v\n%s", err, out)
	}
}

// --fail-over takes a finite percentage of 0 or more: a negative, NaN or
// infinite one would leave the gate off while it looks set, so it is
// refused (exit 1, not the regression status); --fail-layer needs
// --fail-over; not given, there is no gate.
func TestTraceDiffFailOverRefusesWhatDisablesTheGate(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	b := writeLines(t, "b.jsonl", seedRun(idB, "sync", "merkle", 6500))
	for _, v := range []string{"-5", "-0.1", "NaN", "+Inf", "inf"} {
		for _, args := range [][]string{{a, b, "--fail-over", v}, {"--fail-over", v, a, b}} {
			out, err := runTraceCmd(t, append([]string{"trace", "diff", "--fail-layer", "pipeline.prove"}, args...)...)
			if err == nil || !strings.Contains(err.Error(), "want a finite percentage of 0 or more") || strings.Contains(err.Error(), "\n") {
				t.Errorf("--fail-over %s (%v): err %v, want a one-line refusal (output %q)", v, args, err, out)
			}
			if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() == exitRegressed {
				t.Errorf("--fail-over %s: a usage error exits %d, the regression status", v, exitRegressed)
			}
		}
	}
	out, err := runTraceCmd(t, "trace", "diff", a, b, "--fail-layer", "pipeline.prove")
	if err == nil || !strings.Contains(err.Error(), "--fail-layer pipeline.prove checks nothing without --fail-over") {
		t.Errorf("--fail-layer alone: err %v, want a refusal (output %q)", err, out)
	}
	// 0 is a gate: pipeline.prove is slower on B at all.
	_, err = runTraceCmd(t, "trace", "diff", a, b, "--fail-over", "0", "--fail-layer", "pipeline.prove")
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitRegressed {
		t.Errorf("--fail-over 0 on a slower layer: %v, want exit %d", err, exitRegressed)
	}
	if out, err := runTraceCmd(t, "trace", "diff", a, b); err != nil {
		t.Errorf("no --fail-over: %v, want no gate\n%s", err, out)
	}
}

// A and B that come to the same traces of one file are refused however
// they were chosen (one file twice, --last or --all of one file, one
// side's --trace-id naming the other's last proof, one id twice, one
// remote trace twice); sets of one file that differ, and two traces of
// one file, compare.
func TestTraceDiffRefusesATraceComparedWithItself(t *testing.T) {
	const idC = "00000000000000000000000000000c0c"
	one := writeLines(t, "one.jsonl", seedRun(idA, "async", "merkle", 10000))
	both := writeLines(t, "both.jsonl", seedRun(idA, "async", "merkle", 10000), seedRun(idB, "sync", "merkle", 6500), seedRun(idC, "async", "merkle", 1))
	link := filepath.Join(t.TempDir(), "link.jsonl")
	if err := os.Symlink(both, link); err != nil {
		t.Fatal(err)
	}
	jaeger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the same remote trace twice was fetched: %s", r.URL)
	}))
	defer jaeger.Close()
	const hint = "pick two traces with --trace-id twice, A's trace then B's"
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"one file twice":         {[]string{one, one}, "A and B are both trace " + idA + " of " + one + ": a run compared with itself; " + hint},
		"its last proof twice":   {[]string{both, both}, "A and B are both trace " + idB},
		"through a link":         {[]string{both, link}, "A and B are both trace " + idB},
		"--all of one file":      {[]string{both, both, "--all"}, "A and B are both the same 3 traces of " + both},
		"--last of one file":     {[]string{both, both, "--last", "2"}, "A and B are both the same 2 traces of " + both},
		"--trace-id-a, B's last": {[]string{both, both, "--trace-id-a", idB}, "A and B are both trace " + idB},
		"one id twice":           {[]string{both, both, "--trace-id", idB, "--trace-id", idB}, "A and B are both trace " + idB},
		"one remote trace twice": {[]string{idA, idA, "--jaeger", jaeger.URL}, "A and B are both trace " + idA},
	} {
		out, err := runTraceCmd(t, append([]string{"trace", "diff"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), hint) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line containing %q (output %q)", name, err, c.want, out)
		}
	}
	for name, args := range map[string][]string{
		"two traces of one file":     {both, both, "--trace-id", idA, "--trace-id", idB},
		"--trace-id-a, not B's last": {both, both, "--trace-id-a", idA},
		"the same trace, two files":  {one, copyOf(t, one)},
	} {
		if out, err := runTraceCmd(t, append([]string{"trace", "diff"}, args...)...); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

// --threshold-ms 0 and --threshold-pct 0 are thresholds of zero, not the
// defaults: every change counts by that measure (a change of 0 never
// moves).
func TestTraceDiffThresholdsOfZeroAreKept(t *testing.T) {
	run := func(trace string, x float64) string {
		return otlpLine(trace, []otlpSpan{
			{"0000000000000001", "", "engine.job", 0, 10000 + x, nil},
			{"0000000000000002", "0000000000000001", "pipeline.prove", 0, 10000 + x, nil},
			{"0000000000000003", "0000000000000001", "engine.queue", 0, 5, nil},
		})
	}
	a := writeLines(t, "a.jsonl", run(idA, 0))
	small := writeLines(t, "small.jsonl", run(idB, 0.5)) // +0.5 ms: under the default 1 ms... of the library
	wide := writeLines(t, "wide.jsonl", run(idB, 200))   // +200 ms, 2 %: under the default 5 %

	moved := func(args ...string) (string, []string) {
		t.Helper()
		out, err := runTraceCmd(t, append([]string{"trace", "diff", "--json"}, args...)...)
		var doc struct {
			ThresholdMS  float64 `json:"threshold_ms"`
			ThresholdPct float64 `json:"threshold_pct"`
			Verdicts     []string
		}
		if err != nil || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return fmt.Sprint(doc.ThresholdMS, " ", doc.ThresholdPct), doc.Verdicts
	}
	if th, v := moved(a, small, "--threshold-ms", "0", "--threshold-pct", "0", "--noise-pct", "0"); th != "0 0" || len(v) == 0 || !strings.Contains(v[0], "pipeline.prove +0.5 ms") {
		t.Errorf("--threshold-ms 0 --threshold-pct 0: thresholds %s, verdicts %q; want 0 0 and pipeline.prove +0.5 ms", th, v)
	}
	if th, v := moved(a, wide, "--threshold-pct", "0", "--noise-pct", "0"); th != "10 0" || len(v) == 0 || !strings.Contains(v[0], "pipeline.prove +200.0 ms") {
		t.Errorf("--threshold-pct 0: thresholds %s, verdicts %q; want 10 0 and pipeline.prove +200.0 ms", th, v)
	}
	if th, v := moved(a, wide); th != "10 5" || len(v) != 0 {
		t.Errorf("defaults: thresholds %s, verdicts %q; want 10 5 and no move", th, v)
	}
	if _, v := moved(a, copyOf(t, a), "--threshold-ms", "0", "--threshold-pct", "0"); len(v) != 0 {
		t.Errorf("the same run under thresholds of 0: verdicts %q, want none (a change of 0 is no move)", v)
	}
	out, err := runTraceCmd(t, "trace", "diff", a, small, "--threshold-ms", "0", "--threshold-pct", "0", "--noise-pct", "0")
	if err != nil || !strings.Contains(out, "moved (by 0 ms and 0 % or more)") {
		t.Errorf("text under thresholds of 0: %v\n%s", err, out)
	}
	for _, c := range [][]string{{"--threshold-ms", "-1"}, {"--threshold-pct", "-0.5"}, {"--threshold-ms", "NaN"}, {"--threshold-pct", "+Inf"}, {"--noise-pct", "-1"}} {
		out, err := runTraceCmd(t, append([]string{"trace", "diff", a, small}, c...)...)
		if err == nil || !strings.Contains(err.Error(), c[0]+" ") || !strings.Contains(err.Error(), "want a finite number of 0 or more") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err %v, want a one-line refusal naming the flag (output %q)", c, err, out)
		}
	}
}

// --depth counts levels below the roots; a negative one is refused.
func TestTraceDiffDepth(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	b := writeLines(t, "b.jsonl", seedRun(idB, "sync", "merkle", 6500))
	out, err := runTraceCmd(t, "trace", "diff", a, b, "--depth", "1")
	if err != nil || !strings.Contains(out, "pipeline.prove") || strings.Contains(out, "msm.g1.a") {
		t.Errorf("--depth 1: %v, want pipeline.prove and not msm.g1.a\n%s", err, out)
	}
	if out, err := runTraceCmd(t, "trace", "diff", a, b, "--depth", "-1"); err == nil || !strings.Contains(err.Error(), "--depth -1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("--depth -1: err %v, want a one-line refusal (output %q)", err, out)
	}
}

// A and B as trace ids in Tempo (its "batches" shape), and a FILE on one
// side with a Tempo trace id on the other: compared as files are.
func TestTraceDiffFromTempo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tempo := func(line string) string { return strings.Replace(line, `"resourceSpans"`, `"batches"`, 1) }
		switch r.URL.Path {
		case "/api/traces/" + idA:
			w.Write([]byte(tempo(seedRun(idA, "async", "merkle", 10000))))
		case "/api/traces/" + idB:
			w.Write([]byte(tempo(seedRun(idB, "sync", "merkle", 6500))))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	const verdict = "pipeline.prove +2.0 s: buffer.release +2.0 s (only on B, cuzk.release.mode: sync), untraced +0.0 ms"
	out, err := runTraceCmd(t, "trace", "diff", idA, idB, "--tempo", srv.URL, "--threshold-ms", "100")
	if err != nil || !strings.Contains(out, verdict) || !strings.Contains(out, "A: trace "+idA) || !strings.Contains(out, "B: trace "+idB) {
		t.Errorf("diff from Tempo: %v\n%s", err, out)
	}
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	out, err = runTraceCmd(t, "trace", "diff", a, idB, "--tempo", srv.URL, "--threshold-ms", "100")
	if err != nil || !strings.Contains(out, verdict) || !strings.Contains(out, "A: "+a+", trace "+idA) {
		t.Errorf("a FILE against a Tempo trace: %v\n%s", err, out)
	}
	_, err = runTraceCmd(t, "trace", "diff", idA, "1111111111111111111111111111111a", "--tempo", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "B:") || !strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing B in Tempo: %v, want one line naming B", err)
	}
	if _, err := runTraceCmd(t, "trace", "diff", idA, idB, "--tempo", srv.URL, "--jaeger", srv.URL); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("--tempo and --jaeger: %v, want a refusal", err)
	}
}

// --html naming A's or B's trace file (or a link to it) is refused before
// anything is written: the trace would be replaced by the page.
func TestTraceDiffHTMLDoesNotOverwriteAnInput(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	b := writeLines(t, "b.jsonl", seedRun(idB, "sync", "merkle", 6500))
	link := filepath.Join(t.TempDir(), "link.jsonl")
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{a, b} {
		before[p], _ = os.ReadFile(p)
	}
	for _, page := range []string{a, b, link} {
		out, err := runTraceCmd(t, "trace", "diff", a, b, "--html", page)
		if err == nil || !strings.Contains(err.Error(), "--html "+page+": is a trace file this diff reads") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--html %s: err %v, want a one-line refusal (output %q)", page, err, out)
		}
	}
	for p, want := range before {
		if got, _ := os.ReadFile(p); string(got) != string(want) {
			t.Errorf("%s was changed by a refused diff", p)
		}
	}
}

// --fail-layer naming a path on one side only: new on B is a regression
// (exit 2, "new on B"), gone on B is none.
func TestTraceDiffFailOverOnASpanOfOneSide(t *testing.T) {
	a := writeLines(t, "a.jsonl", seedRun(idA, "async", "merkle", 10000))
	b := writeLines(t, "b.jsonl", seedRun(idB, "sync", "merkle", 6500))
	_, err := runTraceCmd(t, "trace", "diff", a, b, "--fail-over", "1000", "--fail-layer", "engine.job/pipeline.prove/buffer.release")
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitRegressed || !strings.Contains(err.Error(), "engine.job/pipeline.prove/buffer.release regressed: +2.0 s (new on B)") {
		t.Errorf("a layer new on B: %v, want exit %d naming it new on B", err, exitRegressed)
	}
	if out, err := runTraceCmd(t, "trace", "diff", a, b, "--fail-over", "0", "--fail-layer", "engine.job/buffer.release"); err != nil {
		t.Errorf("a layer gone on B: %v, want no regression\n%s", err, out)
	}
}
