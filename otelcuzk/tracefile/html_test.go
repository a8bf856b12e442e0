package tracefile

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// htmlT0 is the start of the test traces.
var htmlT0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func testSpan(id, parent, name, service string, startMS, endMS int) Span {
	s := Span{
		TraceID: strings.Repeat("ab", 16),
		SpanID:  "000000000000000" + id,
		Name:    name,
		Service: service,
		Start:   htmlT0.Add(time.Duration(startMS) * time.Millisecond),
		End:     htmlT0.Add(time.Duration(endMS) * time.Millisecond),
	}
	if parent != "" {
		s.ParentID = "000000000000000" + parent
	}
	return s
}

// testTrace: a caller service and a prover service; pipeline.prove (10..110
// ms) has children covering 20..40 and 50..70, so 60 ms is untraced, of
// which the untraced processor marked the largest gap 70..110.
func testTrace() []Span {
	job := testSpan("2", "1", "engine.job", "cuzk", 5, 120)
	job.Attrs = map[string]any{
		"cuzk.request.id":          "req-</script><img src=x onerror=alert(1)>",
		"cuzk.circuit.constraints": int64(1024),
		"cuzk.digest":              []byte{0xde, 0xad},
	}
	job.Status = Status{Code: StatusError, Message: "failed"}
	other := testSpan("8", "", "elsewhere", "cuzk", 0, 1)
	other.TraceID = strings.Repeat("cd", 16)
	return []Span{
		testSpan("1", "", "curio.task", "curio", 0, 130),
		// Out of order on purpose: the page orders by tree and start.
		testSpan("6", "3", "untraced", "cuzk", 70, 110),
		testSpan("5", "3", "msm.g1.a", "cuzk", 50, 70),
		job,
		testSpan("3", "2", "pipeline.prove", "cuzk", 10, 110),
		testSpan("4", "3", "groth16.compute_h", "cuzk", 20, 40),
		testSpan("7", "9", "orphan", "cuzk", 111, 112), // parent not exported
		other, // another trace: left out
	}
}

var traceDataRE = regexp.MustCompile(`(?s)<script id="trace-data" type="application/json">(.*?)</script>`)

func TestWriteHTMLEmbedsEverySpanInTreeOrder(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, testTrace()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	m := traceDataRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no trace-data script element")
	}
	var got htmlTrace
	if err := json.Unmarshal([]byte(m[1]), &got); err != nil {
		t.Fatalf("embedded JSON: %v", err)
	}
	var names []string
	for _, s := range got.Spans {
		names = append(names, s.Name)
	}
	want := "curio.task engine.job pipeline.prove groth16.compute_h msm.g1.a untraced orphan"
	if strings.Join(names, " ") != want {
		t.Errorf("rows %q, want %q", strings.Join(names, " "), want)
	}
	depths := []int{0, 1, 2, 3, 3, 3, 0}
	for i, s := range got.Spans {
		if s.Depth != depths[i] {
			t.Errorf("%s depth %d, want %d", s.Name, s.Depth, depths[i])
		}
	}
	byName := map[string]htmlSpan{}
	for _, s := range got.Spans {
		byName[s.Name] = s
	}
	if p := byName["pipeline.prove"]; math.Abs(p.UntracedMS-60) > 1e-9 || p.StartMS != 10 || p.DurationMS != 100 {
		t.Errorf("pipeline.prove %+v, want start 10, duration 100, untraced 60 (the untraced span not counted as cover)", p)
	}
	if u := byName["untraced"]; !u.UntracedSpan || u.UntracedMS != 0 {
		t.Errorf("untraced row %+v", u)
	}
	if j := byName["engine.job"]; !j.Error || j.Service != "cuzk" || j.Attributes["cuzk.circuit.constraints"] != float64(1024) || j.Attributes["cuzk.digest"] != "dead" {
		t.Errorf("engine.job row %+v", j)
	}
	if got.TraceID != strings.Repeat("ab", 16) || got.DurationMS != 130 {
		t.Errorf("trace %s, %v ms", got.TraceID, got.DurationMS)
	}
	if strings.Join(got.Services, ",") != "curio,cuzk" {
		t.Errorf("services %v", got.Services)
	}
	// Layers: engine.job (5..120 ms) broken down into pipeline.prove
	// (10..110) and its own untraced 15 ms.
	wantLayers := []htmlLayer{
		{Parent: "engine.job", Name: "engine.job", Spans: 1, TotalMS: 115, Share: 1},
		{Parent: "engine.job", Name: "pipeline.prove", Spans: 1, TotalMS: 100, Share: 100.0 / 115},
		{Parent: "engine.job", Name: "untraced", Spans: 1, TotalMS: 15, Share: 15.0 / 115},
	}
	if len(got.Layers) != len(wantLayers) {
		t.Fatalf("layers %+v, want %+v", got.Layers, wantLayers)
	}
	for i, w := range wantLayers {
		g := got.Layers[i]
		if g.Parent != w.Parent || g.Name != w.Name || g.Spans != w.Spans || math.Abs(g.TotalMS-w.TotalMS) > 1e-9 || math.Abs(g.Share-w.Share) > 1e-9 {
			t.Errorf("layer %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestWriteHTMLIsSelfContainedAndEscaped(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, testTrace()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"http://", "https://", "<link", "src=\"", "<img", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: not self-contained or not escaped", bad)
		}
	}
	if n := strings.Count(page, "</script>"); n != 2 {
		t.Errorf("%d </script>: an attribute closed the data element", n)
	}
	if !strings.Contains(page, "<title>trace abab") {
		t.Error("title lacks the trace id")
	}
}

func TestWriteHTMLRejectsEmptyTrace(t *testing.T) {
	if err := WriteHTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("empty trace accepted")
	}
}

func TestHTMLWritesNonFiniteAttributesAsText(t *testing.T) {
	line := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}}]},"scopeSpans":[{"spans":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"cuda.memcpy.htod","startTimeUnixNano":"1000","endTimeUnixNano":"2000",` +
		`"attributes":[{"key":"cuda.gbps","value":{"doubleValue":"NaN"}},{"key":"x","value":{"doubleValue":"-Infinity"}},` +
		`{"key":"xs","value":{"arrayValue":{"values":[{"doubleValue":1.5},{"doubleValue":"Infinity"}]}}}]}]}]}]}`
	spans, err := ReadOTLPJSONLines(strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, spans); err != nil {
		t.Fatalf("WriteHTML of a trace with NaN and infinite attributes: %v", err)
	}
	for _, want := range []string{"NaN", "-Inf", "+Inf"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
