package tracefile_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// scanAll runs ScanOTLPJSONLines and returns the span names and skip errors.
func scanAll(t *testing.T, r io.Reader, opts tracefile.ScanOptions) ([]string, []error) {
	t.Helper()
	var got []string
	var skipped []error
	err := tracefile.ScanOTLPJSONLines(r, opts, func(s tracefile.Span) error {
		got = append(got, s.Name)
		return nil
	}, func(e error) { skipped = append(skipped, e) })
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return got, skipped
}

func traceLine(trace, id, name string) string {
	return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"` + trace + `","spanId":"` + id + `","name":"` + name + `","startTimeUnixNano":"1000","endTimeUnixNano":"2000"}]}]}]}`
}

const (
	traceA = "0af7651916cd43dd8448eb211c80319c"
	traceB = "4bf92f3577b34da6a3ce929d0e0e4736"
)

// Lines, a pretty-printed document, two values on one line, a line cut
// short (ended by the next document line) and one cut short at the end of
// the input: every good span arrives in order, each broken line is named.
func TestScanOTLPJSONLinesShapesAndDamage(t *testing.T) {
	pretty := "{\n  \"batches\": [\n    {\"scopeSpans\": [{\"spans\": [\n" +
		`      {"traceId": "` + traceA + `", "spanId": "00000000000000b1", "name": "pretty {not a brace}", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}` +
		"\n    ]}]}\n  ]\n}"
	a := traceLine(traceA, "00000000000000a1", "a")
	input := strings.Join([]string{
		a,
		pretty,
		traceLine(traceA, "00000000000000a2", "b") + traceLine(traceA, "00000000000000a3", "c"),
		"",
		a[:len(a)/2], // line 11: a write cut short
		traceLine(traceA, "00000000000000a4", "d"),
		`{"foo":1}`, // line 13: JSON, not OTLP
		a[:30],      // line 14: cut short at the end
	}, "\n")
	got, skipped := scanAll(t, strings.NewReader(input), tracefile.ScanOptions{})
	if want := []string{"a", "pretty {not a brace}", "b", "c", "d"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("spans %v, want %v", got, want)
	}
	var lines []string
	for _, e := range skipped {
		if !errors.Is(e, tracefile.ErrMalformed) {
			t.Errorf("skip error %v does not wrap ErrMalformed", e)
		}
		lines = append(lines, strings.SplitN(e.Error(), ":", 2)[0])
	}
	if want := []string{"line 11", "line 13", "line 14"}; fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("skipped %v, want lines 11, 13, 14: %v", lines, skipped)
	}
}

// --trace-id filters while reading; a bad id is refused before reading.
func TestScanOTLPJSONLinesFiltersByTraceID(t *testing.T) {
	input := traceLine(traceA, "00000000000000a1", "a") + "\n" + traceLine(traceB, "00000000000000b1", "b") + "\n"
	got, _ := scanAll(t, strings.NewReader(input), tracefile.ScanOptions{TraceID: strings.ToUpper(traceB)})
	if fmt.Sprint(got) != "[b]" {
		t.Errorf("filtered spans %v, want [b]", got)
	}
	err := tracefile.ScanOTLPJSONLines(strings.NewReader(input), tracefile.ScanOptions{TraceID: "xyz"}, func(tracefile.Span) error { return nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "not a trace id") {
		t.Errorf("bad id: %v, want 'not a trace id'", err)
	}
}

// zeros is an input of n zero bytes (a sparse file, /dev/zero cut at n).
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// A line far over the cap (256 MiB of zero bytes with a 1 MiB cap) is
// skipped without being held: the good lines around it are read, the skip
// is reported before the line's end is reached, and the reader allocates a
// small fraction of the line.
func TestScanOTLPJSONLinesOverlongLineBoundedMemory(t *testing.T) {
	const long = 256 << 20
	z := &zeros{n: long}
	input := io.MultiReader(
		strings.NewReader(traceLine(traceA, "00000000000000a1", "before")+"\n"),
		z,
		strings.NewReader("\n"+traceLine(traceA, "00000000000000a2", "after")+"\n"),
	)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var got []string
	var skipped []error
	leftAtSkip := int64(-1)
	err := tracefile.ScanOTLPJSONLines(input, tracefile.ScanOptions{MaxLineBytes: 1 << 20}, func(s tracefile.Span) error {
		got = append(got, s.Name)
		return nil
	}, func(e error) {
		skipped = append(skipped, e)
		leftAtSkip = z.n
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[before after]" {
		t.Errorf("spans %v, want [before after]", got)
	}
	if len(skipped) != 1 || !errors.Is(skipped[0], tracefile.ErrLineTooLong) || !strings.Contains(skipped[0].Error(), "line 2") {
		t.Fatalf("skipped %v, want one ErrLineTooLong for line 2", skipped)
	}
	if leftAtSkip < long/2 {
		t.Errorf("the over-long line was reported with %d of its %d bytes left, want it reported at the cap", leftAtSkip, long)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("reading a %d MiB line allocated %d MiB, want it discarded, not held", long>>20, alloc>>20)
	}
}

// A document spread over lines that passes the cap is skipped, and the
// lines after it up to the next document are not reported one by one.
func TestScanOTLPJSONLinesOverlongDocument(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("{\n\"batches\": [\n")
	for range 200 {
		b.WriteString(`{"scopeSpans": [{"spans": [{"traceId": "` + traceA + `", "spanId": "00000000000000b1", "name": "x", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]},` + "\n")
	}
	b.WriteString("{}]}\n" + traceLine(traceA, "00000000000000a2", "next") + "\n")
	got, skipped := scanAll(t, &b, tracefile.ScanOptions{MaxLineBytes: 4096})
	if fmt.Sprint(got) != "[next]" {
		t.Errorf("spans %v, want [next]", got)
	}
	if len(skipped) != 1 || !errors.Is(skipped[0], tracefile.ErrLineTooLong) {
		t.Errorf("skipped %v, want one ErrLineTooLong", skipped)
	}
}

// Every input ReadOTLPJSONLines reads whole, the streaming reader reads to
// the same spans.
func TestScanOTLPJSONLinesAgreesWithStrictReader(t *testing.T) {
	for _, in := range []string{
		traceLine(traceA, "00000000000000a1", "a") + "\n" + traceLine(traceB, "00000000000000b1", "b"),
		strings.ReplaceAll(traceLine(traceA, "00000000000000a1", "a"), ",", ",\n"),
		"\n\n" + traceLine(traceA, "00000000000000a1", "a") + "\r\n",
	} {
		want, err := tracefile.ReadOTLPJSONLines(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		var got []tracefile.Span
		err = tracefile.ScanOTLPJSONLines(strings.NewReader(in), tracefile.ScanOptions{}, func(s tracefile.Span) error {
			got = append(got, s)
			return nil
		}, func(e error) { t.Errorf("skipped %v", e) })
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("stream %v (%v), strict %v", got, err, want)
		}
	}
}

// fn's error stops the scan and is returned.
func TestScanOTLPJSONLinesStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	input := strings.Repeat(traceLine(traceA, "00000000000000a1", "a")+"\n", 5)
	err := tracefile.ScanOTLPJSONLines(strings.NewReader(input), tracefile.ScanOptions{}, func(tracefile.Span) error {
		n++
		return stop
	}, nil)
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err %v after %d spans, want stop after 1", err, n)
	}
}

func TestNormalizeTraceID(t *testing.T) {
	if id, err := tracefile.NormalizeTraceID("ABC"); err != nil || id != strings.Repeat("0", 29)+"abc" {
		t.Errorf("ABC: %q %v", id, err)
	}
	for _, bad := range []string{"", "xyz", strings.Repeat("a", 33), "0000"} {
		if _, err := tracefile.NormalizeTraceID(bad); err == nil || !strings.Contains(err.Error(), "not a trace id") {
			t.Errorf("%q: %v, want 'not a trace id'", bad, err)
		}
	}
}

// A byte-order mark at the start of a file (Windows editors and
// PowerShell's redirection write one) is skipped: the first document's
// spans are read, with nothing reported as unreadable. One later in the
// file is damage like any other.
func TestScanOTLPJSONLinesSkipsALeadingByteOrderMark(t *testing.T) {
	bom := "\xef\xbb\xbf"
	input := bom + traceLine(traceA, "00000000000000a1", "a") + "\n" +
		bom + traceLine(traceA, "00000000000000a2", "b") + "\n" +
		traceLine(traceA, "00000000000000a3", "c")
	got, skipped := scanAll(t, strings.NewReader(input), tracefile.ScanOptions{})
	if want := []string{"a", "c"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("spans %v, want %v", got, want)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "line 2") {
		t.Errorf("skipped %v, want line 2 only", skipped)
	}
}

// A line that is JSON but no object (/etc/hosts' "127.0.0.1 localhost"
// starts with a number) is skipped with a reason in JSON's terms, not
// encoding/json's Go types; the trace's lines are still read.
func TestSkippedNonObjectLinesAreSaidInJSONTerms(t *testing.T) {
	good := line(span(sid1, "", "a", "1000", "2000"))
	in := "127.0.0.1 localhost\n[1]\n" + good + "\n" + `{"resourceSpans":[{"scopeSpans":{"spans":1}}]}` + "\n"
	spans, skipped, err := tracefile.ReadOTLPJSONLinesSkipping(strings.NewReader(in))
	if err != nil || len(spans) != 1 {
		t.Fatalf("%d spans, %v; want the good line's span", len(spans), err)
	}
	want := []string{
		"line 1: malformed OTLP JSON: a JSON number, not an OTLP traces object",
		"line 2: malformed OTLP JSON: a JSON array, not an OTLP traces object",
		`line 4: malformed OTLP JSON: "resourceSpans.scopeSpans" is a JSON object, want an array`,
	}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %q, want %q", skipped, want)
	}
	for i, e := range skipped {
		if !errors.Is(e, tracefile.ErrMalformed) || !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("skipped[%d] = %q, want %q wrapping ErrMalformed", i, e, want[i])
		}
	}
}
