package otelcuzk

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protojson"
)

func TestValidUTF8ReplacesEachInvalidByte(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"plain":             "plain",
		"héllo ✓":           "héllo ✓",
		"a\xffb":            "a\uFFFDb",
		"\xff\xfe":          "\uFFFD\uFFFD",
		"cut \xe2\x9c":      "cut \uFFFD\uFFFD", // a 3-byte rune cut short
		"\xc0\xaf overlong": "\uFFFD\uFFFD overlong",
	} {
		if got := ValidUTF8(in); got != want || !utf8.ValidString(got) {
			t.Errorf("ValidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

// emitBadBatch ends, in one batch, a good span, a span with invalid UTF-8
// in every string a span carries (and a bad tracer scope), then another
// good span.
func emitBadBatch(tel *Telemetry) {
	good := tel.TracerProvider.Tracer("test")
	_, s := good.Start(context.Background(), "good.before", trace.WithAttributes(attribute.String("k", "v")))
	s.End()

	bad := tel.TracerProvider.Tracer("scope\xff", trace.WithInstrumentationVersion("v\xfe"))
	link := trace.Link{SpanContext: s.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("link\xff", "lv\xff")}}
	_, b := bad.Start(context.Background(), "bad\xffname",
		trace.WithLinks(link),
		trace.WithAttributes(
			attribute.String("key\xff", "value"),
			attribute.String("value", "v\xffv"),
			attribute.StringSlice("slice", []string{"ok", "s\xff"}),
			attribute.Int("n", 7),
		))
	b.AddEvent("event\xff", trace.WithAttributes(attribute.String("ek", "ev\xff")))
	b.RecordError(errors.New("open /sector\xff: no such file"))
	b.SetStatus(codes.Error, "status\xff message")
	b.End()

	_, s = good.Start(context.Background(), "good.after")
	s.End()
}

// checkCleanRequestJSON checks one exported request, as protojson: every
// string valid, the replacement character where the raw bytes were, and
// all three spans present.
func checkCleanJSON(t *testing.T, js string) {
	t.Helper()
	if !utf8.ValidString(js) {
		t.Fatalf("export is not valid UTF-8")
	}
	for _, want := range []string{
		"bad\uFFFDname", "key\uFFFD", "v\uFFFDv", "s\uFFFD", "event\uFFFD", "ev\uFFFD",
		"/sector\uFFFD: no such file", "status\uFFFD message", "link\uFFFD", "lv\uFFFD",
		"scope\uFFFD", "v\uFFFD", "res\uFFFD", "good.before", "good.after",
	} {
		if !strings.Contains(js, want) {
			t.Errorf("export lacks %q:\n%s", want, js)
		}
	}
}

func TestInvalidUTF8NeverLosesABatchOverOTLP(t *testing.T) {
	eachProtocol(t, func(t *testing.T, protocol string) {
		r := &receiver{}
		endpoint := startReceiver(t, r, protocol)
		tel := newTel(t, WithEndpoint(endpoint), WithProtocol(protocol), WithInsecure(), WithoutUntraced(),
			WithResourceAttributes(attribute.String("note", "res\xff")), WithLogWriter(&strings.Builder{}))
		emitBadBatch(tel)
		// One more batch after it: a failure would have started the
		// cooldown and lost this one too.
		emit(tel, 2)
		shutdown(t, tel)
		if n := r.spanCount(); n != 5 {
			t.Fatalf("receiver got %d spans, want 5 (3 in the batch with the bad span, 2 after)", n)
		}
		var all strings.Builder
		for _, e := range r.got() {
			b, err := protojson.Marshal(e.req)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
		}
		checkCleanJSON(t, all.String())
		if d := tel.DroppedSpans(); d != 0 {
			t.Errorf("DroppedSpans = %d, want 0", d)
		}
	})
}

func TestInvalidUTF8ReachesTheFileExporterCleaned(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tel := newTel(t, WithTraceFile(path), WithoutUntraced(), WithResourceAttributes(attribute.String("note", "res\xff")))
	emitBadBatch(tel)
	shutdown(t, tel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("line is not JSON: %s", line)
		}
	}
	// The file holds \ufffd escapes or the raw character; decode to compare.
	var decoded strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(v)
		decoded.Write(out)
	}
	// json.Marshal escapes nothing but HTML; U+FFFD stays a raw character.
	checkCleanJSON(t, decoded.String())
}

// A custom exporter (WithExporter) is handed the cleaned span too; a valid
// span is handed through as the same value.
func TestCustomExporterGetsCleanedSpansAndValidOnesUntouched(t *testing.T) {
	clearEnv(t)
	exp := &recordingExporter{}
	tel := newTel(t, WithExporter(exp), WithSyncExport(), WithoutUntraced())
	emitBadBatch(tel)
	shutdown(t, tel)
	if len(exp.spans) != 3 {
		t.Fatalf("exporter got %d spans, want 3", len(exp.spans))
	}
	for _, s := range exp.spans {
		if !spanValidUTF8(s) {
			t.Errorf("span %q still has invalid UTF-8", s.Name())
		}
	}
	if got := exp.spans[1].Name(); got != "bad\uFFFDname" {
		t.Errorf("bad span name = %q", got)
	}
	if got := exp.spans[1].SpanContext().SpanID(); !got.IsValid() {
		t.Errorf("cleaned span lost its span id")
	}
}

// recordingExporter keeps the spans it is handed, as handed.
type recordingExporter struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (e *recordingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spans = append(e.spans, spans...)
	return nil
}

func (e *recordingExporter) Shutdown(context.Context) error { return nil }
