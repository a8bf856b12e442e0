package otelcuzk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// writeSampleTrace writes a small trace (under the current environment) through Setup's default file
// exporter and returns the file's lines and the spans as the SDK saw them.
func writeSampleTrace(t *testing.T, opts ...Option) ([]string, tracetest.SpanStubs) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	mem := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), append([]Option{WithoutGlobal(), WithTraceFile(path),
		WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(mem)), WithServiceName("filetest")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if p, target := tel.Destination(); p != "file" || target != path {
		t.Fatalf("Destination = %s %s, want file %s", p, target, path)
	}
	tr := tel.TracerProvider.Tracer(semconv.ScopeName)
	ctx, root := tr.Start(context.Background(), semconv.SpanEngineJob, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.KeyRequestID.String("req-1"), semconv.KeyCircuitConstraints.Int(1<<20),
			semconv.KeyUntracedMS.Float64(1.5), semconv.KeyProofVerified.Bool(true),
			attribute.StringSlice("cuzk.names", []string{"a", "b"}), attribute.Int64Slice("cuzk.sizes", []int64{1, 1 << 40})))
	_, child := tr.Start(ctx, semconv.SpanPipelineProve, trace.WithLinks(trace.Link{SpanContext: root.SpanContext()}))
	child.AddEvent("step", trace.WithAttributes(attribute.Int("n", 3)))
	child.SetStatus(codes.Error, "boom")
	child.End()
	root.End()
	want := mem.GetSpans()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) == 0 {
		t.Fatal("trace file is empty")
	}
	return lines, want
}

var (
	hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)
	digit = regexp.MustCompile(`^[0-9]+$`)
)

func TestFileExporterWritesOTLPJSONLayout(t *testing.T) {
	clearEnv(t)
	lines, _ := writeSampleTrace(t)
	for i, line := range lines {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("line %d is not one JSON object: %v", i+1, err)
		}
		if len(doc) != 1 || doc["resourceSpans"] == nil {
			t.Fatalf("line %d: top-level keys %v, want only resourceSpans", i+1, keys(doc))
		}
		var spans []map[string]any
		walk(doc, func(k string, v any) {
			if strings.Contains(k, "_") {
				t.Errorf("field %q is not lowerCamelCase", k)
			}
			if k == "spans" {
				for _, s := range v.([]any) {
					spans = append(spans, s.(map[string]any))
				}
			}
			if k == "intValue" {
				if s, ok := v.(string); !ok || !digit.MatchString(s) {
					t.Errorf("intValue %v (%T) is not a decimal string", v, v)
				}
			}
		})
		for _, s := range spans {
			if id, _ := s["traceId"].(string); !hex32.MatchString(id) {
				t.Errorf("traceId %q is not 32 lowercase hex digits", id)
			}
			if id, _ := s["spanId"].(string); !hex16.MatchString(id) {
				t.Errorf("spanId %q is not 16 lowercase hex digits", id)
			}
			if p, ok := s["parentSpanId"]; ok && !hex16.MatchString(p.(string)) {
				t.Errorf("parentSpanId %q is not 16 lowercase hex digits", p)
			}
			if _, ok := s["kind"].(json.Number); !ok {
				t.Errorf("kind %v (%T) is not an integer", s["kind"], s["kind"])
			}
			for _, f := range []string{"startTimeUnixNano", "endTimeUnixNano"} {
				if v, ok := s[f].(string); !ok || !digit.MatchString(v) {
					t.Errorf("%s %v (%T) is not a decimal string", f, s[f], s[f])
				}
			}
			if s["name"] == semconv.SpanPipelineProve {
				st := s["status"].(map[string]any)
				if st["code"] != json.Number("2") || st["message"] != "boom" {
					t.Errorf("status = %v, want code 2 (ERROR) and message boom", st)
				}
				links := s["links"].([]any)
				if l := links[0].(map[string]any); !hex16.MatchString(l["spanId"].(string)) || !hex32.MatchString(l["traceId"].(string)) {
					t.Errorf("link ids not hex: %v", l)
				}
			}
			if s["name"] == semconv.SpanEngineJob && s["kind"] != json.Number("2") {
				t.Errorf("server span kind = %v, want 2", s["kind"])
			}
		}
	}
}

func TestFileExporterRoundTripsThroughProtobufJSON(t *testing.T) {
	clearEnv(t)
	lines, want := writeSampleTrace(t)
	var got []*tracepb.Span
	var service string
	for _, line := range lines {
		td := &tracepb.TracesData{}
		if err := protojson.Unmarshal(hexToBase64IDs(t, line), td); err != nil {
			t.Fatalf("protojson cannot read the line back: %v", err)
		}
		for _, rs := range td.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				got = append(got, ss.Spans...)
			}
		}
	}
	if service != "filetest" {
		t.Errorf("service.name = %q", service)
	}
	// The SDK's spans plus the `untraced` one the processor may add; match
	// by span id.
	byID := map[string]*tracepb.Span{}
	for _, s := range got {
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	if len(want) < 2 {
		t.Fatalf("in-memory exporter saw %d spans", len(want))
	}
	for _, w := range want {
		g := byID[w.SpanContext.SpanID().String()]
		if g == nil {
			t.Fatalf("span %s missing from the file", w.Name)
		}
		if g.Name != w.Name || hex.EncodeToString(g.TraceId) != w.SpanContext.TraceID().String() {
			t.Errorf("span %s: name/trace id %q %x differ", w.Name, g.Name, g.TraceId)
		}
		if w.Parent.IsValid() && hex.EncodeToString(g.ParentSpanId) != w.Parent.SpanID().String() {
			t.Errorf("span %s: parent %x, want %s", w.Name, g.ParentSpanId, w.Parent.SpanID())
		}
		if g.StartTimeUnixNano != uint64(w.StartTime.UnixNano()) || g.EndTimeUnixNano != uint64(w.EndTime.UnixNano()) {
			t.Errorf("span %s: times differ", w.Name)
		}
		if len(g.Attributes) != len(w.Attributes) {
			t.Errorf("span %s: %d attributes, want %d", w.Name, len(g.Attributes), len(w.Attributes))
		}
		for i, kv := range w.Attributes {
			if i < len(g.Attributes) && g.Attributes[i].Key != string(kv.Key) {
				t.Errorf("attribute %d = %s, want %s", i, g.Attributes[i].Key, kv.Key)
			}
		}
		if w.Name == semconv.SpanEngineJob {
			for _, kv := range g.Attributes {
				switch kv.Key {
				case string(semconv.KeyCircuitConstraints):
					if kv.Value.GetIntValue() != 1<<20 {
						t.Errorf("constraints = %v", kv.Value)
					}
				case "cuzk.sizes":
					if v := kv.Value.GetArrayValue().GetValues(); len(v) != 2 || v[1].GetIntValue() != 1<<40 {
						t.Errorf("int slice = %v", kv.Value)
					}
				case string(semconv.KeyUntracedMS):
					if kv.Value.GetDoubleValue() != 1.5 {
						t.Errorf("double = %v", kv.Value)
					}
				}
			}
		}
		if w.Name == semconv.SpanPipelineProve && (len(g.Events) != 1 || g.Events[0].Name != "step" || g.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR) {
			t.Errorf("child events %v status %v", g.Events, g.Status)
		}
	}
}

func TestFileExporterOneLinePerBatch(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
	lines, want := writeSampleTrace(t)
	if len(lines) != len(want) {
		t.Fatalf("%d lines for %d spans in batches of 1", len(lines), len(want))
	}
}

func TestUnwritableTraceFileIsASetupError(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "no", "such", "dir", "t.jsonl"), dir} {
		_, err := Setup(context.Background(), WithoutGlobal(), WithTraceFile(path))
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Setup(WithTraceFile(%q)) err = %v, want one naming the path", path, err)
		}
	}
}

func TestFileExporterAfterShutdownFails(t *testing.T) {
	e, err := NewFileExporter(filepath.Join(t.TempDir(), "x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	stub := tracetest.SpanStub{Name: "x"}
	if err := e.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{stub.Snapshot()}); err == nil {
		t.Fatal("export after shutdown succeeded")
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// walk calls f on every object field of v, depth first.
func walk(v any, f func(k string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			f(k, val)
			walk(val, f)
		}
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	}
}

// hexToBase64IDs turns OTLP/JSON's hex ids into protobuf JSON's base64, so
// protojson can read the line.
func hexToBase64IDs(t *testing.T, line string) []byte {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatal(err)
	}
	var fix func(v any)
	fix = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if s, ok := val.(string); ok && idFields[k] {
					b, err := hex.DecodeString(s)
					if err != nil {
						t.Fatalf("%s %q: %v", k, s, err)
					}
					x[k] = base64.StdEncoding.EncodeToString(b)
					continue
				}
				fix(val)
			}
		case []any:
			for _, e := range x {
				fix(e)
			}
		}
	}
	fix(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMarshalOTLPJSONAgreesWithProtojson(t *testing.T) {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	td := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{
			Attributes:             []*commonpb.KeyValue{{Key: "service.name", Value: str("cuzk")}},
			DroppedAttributesCount: 2,
		},
		SchemaUrl: "https://opentelemetry.io/schemas/1.37.0",
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope:     &commonpb.InstrumentationScope{Name: semconv.ScopeName, Version: "0.1.0", Attributes: []*commonpb.KeyValue{{Key: "k", Value: str("v")}}},
			SchemaUrl: "s",
			Spans: []*tracepb.Span{{
				TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0x01}, 8), ParentSpanId: bytes.Repeat([]byte{0xfe}, 8),
				TraceState: "congo=t61rcWkgMzE", Flags: 0x301, Name: "quote\" back\\ nl\n tab\t ctl\x01 é 証明",
				Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: 1 << 62, EndTimeUnixNano: 1<<62 + 5,
				Attributes: []*commonpb.KeyValue{
					{Key: "s", Value: str("x")},
					{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
					{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: math.MinInt64}}},
					{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1e-300}}},
					{Key: "nan", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Inf(-1)}}},
					{Key: "bytes", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 255}}}},
					{Key: "arr", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
						Values: []*commonpb.AnyValue{str("a"), {Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{}}}}}}}},
					{Key: "kv", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
						Values: []*commonpb.KeyValue{{Key: "inner", Value: str("y")}}}}}},
					{Key: "empty", Value: &commonpb.AnyValue{}},
				},
				DroppedAttributesCount: 1,
				Events:                 []*tracepb.Span_Event{{TimeUnixNano: 7, Name: "e", Attributes: []*commonpb.KeyValue{{Key: "a", Value: str("b")}}, DroppedAttributesCount: 3}},
				DroppedEventsCount:     4,
				Links: []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{0x02}, 16), SpanId: bytes.Repeat([]byte{0x03}, 8), TraceState: "a=b",
					Attributes: []*commonpb.KeyValue{{Key: "l", Value: str("m")}}, DroppedAttributesCount: 5, Flags: 0x101}},
				DroppedLinksCount: 6,
				Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
			}, {
				TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0x04}, 8), Name: "minimal",
			}},
		}},
	}}}
	out, err := MarshalOTLPJSON(td)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsRune(out, '\n') || !json.Valid(out) {
		t.Fatalf("not one line of valid JSON: %s", out)
	}
	got := &tracepb.TracesData{}
	if err := protojson.Unmarshal(hexToBase64IDs(t, string(out)), got); err != nil {
		t.Fatalf("protojson rejects the output: %v\n%s", err, out)
	}
	if !proto.Equal(got, td) {
		t.Fatalf("round trip differs:\n got %v\nwant %v", got, td)
	}
	// Invalid UTF-8 (which protojson refuses) still gives valid JSON.
	td.ResourceSpans[0].ScopeSpans[0].Spans[1].Name = "bad \xff utf8"
	out, _ = MarshalOTLPJSON(td)
	if !json.Valid(out) || !bytes.Contains(out, []byte(`bad \ufffd utf8`)) {
		t.Fatalf("invalid UTF-8 not replaced: %s", out)
	}
}

func TestFileExporterAppendsSoEarlierTracesAndOtherWritersSurvive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	write := func(name string) {
		t.Helper()
		tel, err := New(context.Background(), WithTraceFile(path), WithoutGlobal(), WithSyncExport())
		if err != nil {
			t.Fatal(err)
		}
		_, s := tel.TracerProvider.Tracer("t").Start(context.Background(), name)
		s.End()
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	// A second writer opened while the first is still open (a daemon and a
	// local prove in one directory), then a run that fails after Setup.
	long, err := NewFileExporter(path)
	if err != nil {
		t.Fatal(err)
	}
	write("second")
	if err := long.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"first"`) || !strings.Contains(lines[1], `"second"`) {
		t.Fatalf("want the first run's line kept and the second appended, got %d lines:\n%s", len(lines), data)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		t.Error("the file holds NUL bytes (a writer wrote at a stale offset)")
	}
}

// A run that fails before any span ends (cuzk prove --backend nosuch)
// leaves no empty trace file; the first export creates it.
func TestMissingTraceFileIsCreatedByTheFirstExportOnly(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tel, err := New(context.Background(), WithoutGlobal(), WithTraceFile(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("trace file exists after a run with no spans (stat: %v)", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Fatalf("files left in the directory: %v", entries)
	}
	tel = newTel(t, WithTraceFile(path))
	emit(tel, 1)
	shutdown(t, tel)
	if b, err := os.ReadFile(path); err != nil || !json.Valid(bytes.TrimSpace(b)) {
		t.Fatalf("after one span: %q, %v", b, err)
	}
}
