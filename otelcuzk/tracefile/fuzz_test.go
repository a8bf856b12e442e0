package tracefile_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// The fuzz tests feed the readers of outside input (trace files, Jaeger's
// and Tempo's answers) arbitrary bytes. Whatever they accept must be spans
// the rest of the package can rely on (ids of the right length in
// lowercase hex, no span ending before it starts), and what they produce
// must go through the tree, the waterfall, the HTML, the diff (a trace
// against itself moves nothing) and the timeline without a panic.
// Seeds: testdata/fuzz/<name>/ (real files of each shape); scripts/fuzz.sh
// runs each for $FUZZTIME.

var (
	hexTraceID = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hexSpanID  = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

func checkSpans(t *testing.T, spans []tracefile.Span) {
	t.Helper()
	for _, s := range spans {
		if !hexTraceID.MatchString(s.TraceID) || !hexSpanID.MatchString(s.SpanID) || (s.ParentID != "" && !hexSpanID.MatchString(s.ParentID)) {
			t.Fatalf("span with bad ids: %+v", s)
		}
		if s.End.Before(s.Start) {
			t.Fatalf("span ends before it starts: %+v", s)
		}
	}
	traces := tracefile.BuildTraces(spans)
	for _, tr := range traces {
		tracefile.Layers(tr)
		// A trace against itself: nothing moved.
		p := tracefile.ProfileOf(tr)
		d, err := tracefile.DiffProfiles([]tracefile.Profile{p}, []tracefile.Profile{p}, tracefile.DiffOptions{})
		if err != nil {
			t.Fatalf("diff of a trace with itself: %v", err)
		}
		if len(d.Verdicts) > 0 {
			t.Fatalf("a trace moved against itself: %q", d.Verdicts)
		}
		if err := tracefile.WriteDiff(io.Discard, d, 0); err != nil {
			t.Fatal(err)
		}
		if err := tracefile.WriteDiffHTML(io.Discard, d, spans, spans); err != nil {
			t.Fatal(err)
		}
	}
	if jobs := tracefile.TimelineJobs(traces); len(jobs) > 0 {
		if err := tracefile.WriteTimeline(io.Discard, jobs, tracefile.TimelineOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := tracefile.WriteTimelineHTML(io.Discard, jobs); err != nil {
			t.Fatal(err)
		}
	}
	if err := tracefile.Waterfall(io.Discard, spans, tracefile.WaterfallOptions{}); err != nil {
		t.Fatalf("waterfall: %v", err)
	}
	if len(spans) > 0 {
		if err := tracefile.WriteHTML(io.Discard, spans); err != nil {
			t.Fatalf("HTML: %v", err)
		}
	}
}

func dedup(spans []tracefile.Span) []tracefile.Span {
	seen := map[[2]string]bool{}
	var out []tracefile.Span
	for _, s := range spans {
		if k := [2]string{s.TraceID, s.SpanID}; !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	return out
}

// FuzzReadOTLPJSONLines: the strict reader and the streaming reader on the
// same bytes. Both give valid spans; on one line that the strict reader
// accepts, the streaming reader gives the same spans and skips nothing.
func FuzzReadOTLPJSONLines(f *testing.F) {
	f.Add([]byte(traceLine(traceA, "00000000000000a1", "a") + "\n" + traceLine(traceA, "00000000000000a2", "b")))
	f.Fuzz(func(t *testing.T, data []byte) {
		strict, strictErr := tracefile.ReadOTLPJSONLines(bytes.NewReader(data))
		if strictErr == nil {
			checkSpans(t, strict)
		}
		var streamed []tracefile.Span
		var skipped []error
		err := tracefile.ScanOTLPJSONLines(bytes.NewReader(data), tracefile.ScanOptions{MaxLineBytes: 1 << 16},
			func(s tracefile.Span) error { streamed = append(streamed, s); return nil },
			func(e error) { skipped = append(skipped, e) })
		if err != nil {
			t.Fatalf("scan of an in-memory input: %v", err)
		}
		streamed = dedup(streamed)
		checkSpans(t, streamed)
		if strictErr == nil && !bytes.ContainsAny(data, "\n\r") && len(data) <= 1<<16 {
			if len(skipped) != 0 || len(streamed) != len(strict) {
				t.Fatalf("strict read %d spans, stream %d with skips %v", len(strict), len(streamed), skipped)
			}
			for i := range strict {
				if strict[i].SpanID != streamed[i].SpanID || strict[i].Name != streamed[i].Name {
					t.Fatalf("span %d: strict %+v, stream %+v", i, strict[i], streamed[i])
				}
			}
		}
	})
}

// FuzzParseJaegerJSON: Jaeger's query API answer.
func FuzzParseJaegerJSON(f *testing.F) {
	f.Add([]byte(`{"data":[{"traceID":"1","spans":[{"traceID":"1","spanID":"2","operationName":"x","startTime":1,"duration":1,"references":[{"refType":"CHILD_OF","traceID":"1","spanID":"3"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		traces, err := tracefile.ParseJaegerJSON(data)
		if err != nil {
			return
		}
		for _, spans := range traces {
			checkSpans(t, spans)
		}
	})
}

// answer is an http.RoundTripper that answers every request with one body.
type answer []byte

func (a answer) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(a)), Request: r, Header: http.Header{}}, nil
}

// FuzzFetchTempo: Tempo's /api/traces answer, through FetchTempo.
func FuzzFetchTempo(f *testing.F) {
	f.Add([]byte(`{"batches":[{"scopeSpans":[{"spans":[{"traceId":"CvdlGRbNQ92ESOshHIAxnA==","spanId":"t61rcWkgMzE=","name":"engine.job","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		client := &http.Client{Transport: answer(data)}
		spans, err := tracefile.FetchTempo(context.Background(), client, "http://tempo.invalid", traceA)
		if err != nil {
			return
		}
		checkSpans(t, spans)
	})
}
