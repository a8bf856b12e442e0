package tracefile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

// proofTrace writes, through otelcuzk.New's default file exporter, the span
// tree of one proof with fixed timestamps (ms from t0):
//
//	engine.job                0..1000   request id, constraints
//	  engine.queue            0..10
//	  pipeline.synthesize     10..200
//	  pipeline.prove          200..900   (100 ms after groth16.prove uncovered)
//	    groth16.prove         200..800   (compute_h, gap 500..530, MSMs, release)
//	      groth16.compute_h   200..400
//	        ntt.inverse       200..300
//	        ntt.coset         300..400
//	      msm.g1.a            400..500
//	      msm.g1.b            530..650
//	      msm.g2.b            400..700   concurrent, on the CPU
//	      buffer.release      700..800   failed
//	  pipeline.serialize      900..950
//	  proof.verify            950..990
//
// It returns the file's path.
func proofTrace(t *testing.T) string {
	t.Helper()
	tr, flush := newTraceFile(t)
	type sp struct {
		name       string
		parent     int // index, -1 for root
		start, end float64
	}
	tree := []sp{
		{semconv.SpanEngineJob, -1, 0, 1000},
		{semconv.SpanEngineQueue, 0, 0, 10},
		{semconv.SpanPipelineSynthesize, 0, 10, 200},
		{semconv.SpanPipelineProve, 0, 200, 900},
		{semconv.SpanGroth16Prove, 3, 200, 800},
		{semconv.SpanComputeH, 4, 200, 400},
		{semconv.SpanNTTInverse, 5, 200, 300},
		{semconv.SpanNTTCoset, 5, 300, 400},
		{semconv.SpanMSMG1A, 4, 400, 500},
		{semconv.SpanMSMG1B, 4, 530, 650},
		{semconv.SpanMSMG2B, 4, 400, 700},
		{semconv.SpanBufferRelease, 4, 700, 800},
		{semconv.SpanPipelineSerialize, 0, 900, 950},
		{semconv.SpanProofVerify, 0, 950, 990},
	}
	ctxs := make([]context.Context, len(tree))
	spans := make([]trace.Span, len(tree))
	for i, s := range tree {
		parent := context.Background()
		if s.parent >= 0 {
			parent = ctxs[s.parent]
		}
		ctxs[i], spans[i] = tr.Start(parent, s.name, trace.WithTimestamp(at(s.start)))
	}
	spans[0].SetAttributes(semconv.KeyRequestID.String("req-9"), semconv.KeyCircuitConstraints.Int(1<<16))
	spans[11].SetStatus(codes.Error, "munmap: EINVAL")
	for i := len(tree) - 1; i >= 0; i-- { // children end before parents
		spans[i].End(trace.WithTimestamp(at(tree[i].end)))
	}
	return flush()
}

// newTraceFile starts otelcuzk.New with its default file exporter on a
// new file, the environment's OTel settings cleared; it returns a tracer
// and flush, which shuts the exporter down and returns the file's path.
func newTraceFile(t *testing.T) (tr trace.Tracer, flush func() string) {
	t.Helper()
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		t.Setenv(v, "")
	}
	path := filepath.Join(t.TempDir(), "cuzk-trace.jsonl")
	tel, err := otelcuzk.New(context.Background(), otelcuzk.WithoutGlobal(), otelcuzk.WithTraceFile(path),
		otelcuzk.WithServiceName("cuzk-test"))
	if err != nil {
		t.Fatal(err)
	}
	return tel.TracerProvider.Tracer(semconv.ScopeName), func() string {
		t.Helper()
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

func readFile(t *testing.T, path string) []tracefile.Span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spans, err := tracefile.ReadOTLPJSONLines(f)
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

func find(tr tracefile.Trace, name string) *tracefile.Node {
	var out *tracefile.Node
	tr.Walk(func(n *tracefile.Node) bool {
		if out == nil && n.Name == name {
			out = n
		}
		return true
	})
	return out
}

func names(ns []*tracefile.Node) []string {
	return each(ns, func(n *tracefile.Node) string { return n.Name })
}

// each returns f of every element of xs, in order (nil for none).
func each[T any](xs []T, f func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

func TestReadBackSetupFileGivesTreeAndUntraced(t *testing.T) {
	spans := readFile(t, proofTrace(t))
	traces := tracefile.BuildTraces(spans)
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	tr := traces[0]
	if len(tr.Roots) != 1 || tr.Roots[0].Name != semconv.SpanEngineJob {
		t.Fatalf("roots = %v, want engine.job", names(tr.Roots))
	}
	if !tr.Start.Equal(at(0)) || tr.Duration() != time.Second {
		t.Errorf("trace spans %v from %v, want 1 s from t0", tr.Duration(), tr.Start)
	}
	job := tr.Roots[0]
	if got, want := names(job.Children), []string{semconv.SpanEngineQueue, semconv.SpanPipelineSynthesize, semconv.SpanPipelineProve,
		semconv.SpanPipelineSerialize, semconv.SpanProofVerify}; !reflect.DeepEqual(got, want) {
		t.Errorf("engine.job children = %v, want %v", got, want)
	}
	if job.Attrs[string(semconv.KeyRequestID)] != "req-9" || job.Attrs[string(semconv.KeyCircuitConstraints)] != int64(1<<16) {
		t.Errorf("engine.job attrs = %v", job.Attrs)
	}
	if job.Service != "cuzk-test" {
		t.Errorf("service = %q", job.Service)
	}
	// Uncovered time per span, from the children.
	for name, want := range map[string]time.Duration{
		semconv.SpanEngineJob:     10 * time.Millisecond,  // 990..1000
		semconv.SpanPipelineProve: 100 * time.Millisecond, // 800..900
		semconv.SpanGroth16Prove:  0,                      // msm.g2.b covers the 500..530 gap
		semconv.SpanComputeH:      0,
		semconv.SpanMSMG1A:        0, // leaf
	} {
		if n := find(tr, name); n == nil || n.Untraced != want {
			t.Errorf("%s untraced = %v, want %v", name, n.Untraced, want)
		}
	}
	// The processor saw the same gaps: its `untraced` spans sit under the
	// same parents with the same totals.
	prove := find(tr, semconv.SpanPipelineProve)
	var u *tracefile.Node
	for _, c := range prove.Children {
		if c.Name == semconv.SpanUntraced {
			u = c
		}
	}
	if u == nil {
		t.Fatalf("no untraced span under pipeline.prove; children %v", names(prove.Children))
	}
	if got := u.Attrs[string(semconv.KeyUntracedMS)]; got != 100.0 {
		t.Errorf("processor cuzk.untraced.ms = %v, want 100", got)
	}
	if !u.Start.Equal(at(800)) || !u.End.Equal(at(900)) {
		t.Errorf("untraced span [%v, %v], want [800, 900] ms", u.Start.Sub(t0), u.End.Sub(t0))
	}
	if find(tr, semconv.SpanBufferRelease).Status != (tracefile.Status{Code: tracefile.StatusError, Message: "munmap: EINVAL"}) {
		t.Errorf("buffer.release status = %+v", find(tr, semconv.SpanBufferRelease).Status)
	}
	if d := find(tr, semconv.SpanNTTCoset).Depth; d != 4 {
		t.Errorf("ntt.coset depth = %d, want 4", d)
	}
}

func TestLayersSayWhereTheTimeWent(t *testing.T) {
	tr := tracefile.BuildTraces(readFile(t, proofTrace(t)))[0]
	got := map[string]tracefile.Layer{}
	for _, l := range tracefile.Layers(tr) {
		got[l.Parent+"/"+l.Name] = l
	}
	for key, want := range map[string]time.Duration{
		"engine.job/engine.job":           time.Second,
		"engine.job/engine.queue":         10 * time.Millisecond,
		"engine.job/pipeline.synthesize":  190 * time.Millisecond,
		"engine.job/pipeline.prove":       700 * time.Millisecond,
		"engine.job/pipeline.serialize":   50 * time.Millisecond,
		"engine.job/proof.verify":         40 * time.Millisecond,
		"engine.job/untraced":             10 * time.Millisecond,
		"groth16.prove/groth16.prove":     600 * time.Millisecond,
		"groth16.prove/groth16.compute_h": 200 * time.Millisecond,
		"groth16.prove/msm.g1.a":          100 * time.Millisecond,
		"groth16.prove/msm.g1.b":          120 * time.Millisecond,
		"groth16.prove/msm.g2.b":          300 * time.Millisecond,
		"groth16.prove/buffer.release":    100 * time.Millisecond,
		"groth16.prove/untraced":          0,
	} {
		l, ok := got[key]
		if !ok {
			t.Errorf("no layer %s", key)
			continue
		}
		if l.Duration != want {
			t.Errorf("layer %s = %v, want %v", key, l.Duration, want)
		}
	}
	if s := got["engine.job/pipeline.prove"].Share; math.Abs(s-0.7) > 1e-9 {
		t.Errorf("pipeline.prove share = %v, want 0.7", s)
	}
	// The processor's own `untraced` span under pipeline.prove is not a
	// layer of its own.
	for k := range got {
		if strings.HasPrefix(k, "pipeline.prove/") {
			t.Errorf("unexpected layer %s", k)
		}
	}
}

func TestWaterfallPrintsTreeColumnsAndSummary(t *testing.T) {
	spans := readFile(t, proofTrace(t))
	var out bytes.Buffer
	if err := tracefile.Waterfall(&out, spans, tracefile.WaterfallOptions{Width: 20, ASCII: true}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if testing.Verbose() {
		t.Logf("\n%s", text)
	}
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "trace "+spans[0].TraceID) || !strings.Contains(lines[0], "1000.000 ms") {
		t.Errorf("header = %q", lines[0])
	}
	row := func(name string) []string {
		for _, l := range lines {
			f := strings.Fields(l)
			for i, x := range f {
				if x == name && i >= 3 {
					return f
				}
			}
		}
		t.Fatalf("no row for %s in\n%s", name, text)
		return nil
	}
	// start, duration, untraced (only for spans with children).
	if f := row(semconv.SpanPipelineProve); f[0] != "200.000" || f[1] != "700.000" || f[2] != "100.000" {
		t.Errorf("pipeline.prove row = %v", f)
	}
	if f := row(semconv.SpanMSMG1B); f[0] != "530.000" || f[1] != "120.000" || strings.Contains(f[2], ".") {
		t.Errorf("msm.g1.b row = %v (a leaf has no untraced column)", f)
	}
	// Tree order and indentation.
	last := -1
	for _, name := range []string{semconv.SpanEngineJob, semconv.SpanEngineQueue, semconv.SpanPipelineProve,
		semconv.SpanGroth16Prove, semconv.SpanComputeH, semconv.SpanNTTCoset, semconv.SpanMSMG2B, semconv.SpanPipelineSerialize} {
		i := strings.Index(text, "  "+name)
		if i <= last {
			t.Fatalf("%s out of tree order", name)
		}
		last = i
	}
	if !strings.Contains(text, "|  "+strings.Repeat("  ", 4)+semconv.SpanNTTCoset+"\n") {
		t.Errorf("ntt.coset not indented by its depth 4:\n%s", text)
	}
	// Bars: 20 cells between delimiters; engine.job spans all of them.
	if !strings.Contains(text, "|"+strings.Repeat("#", 20)+"|") {
		t.Errorf("no full-width bar for the root")
	}
	if !strings.Contains(text, "buffer.release  ERROR: munmap: EINVAL") {
		t.Errorf("failed span not marked")
	}
	// Summary.
	for _, want := range []string{"where the time went", "pipeline.prove", "70.0%", "msm.g2.b", "untraced, all spans", "110.000 ms"} {
		if !strings.Contains(text[strings.Index(text, "where the time went"):], want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}

func TestWaterfallOptions(t *testing.T) {
	spans := readFile(t, proofTrace(t))
	var out bytes.Buffer
	if err := tracefile.Waterfall(&out, spans, tracefile.WaterfallOptions{MaxDepth: 1}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), " "+semconv.SpanGroth16Prove+"\n") || !strings.Contains(out.String(), semconv.SpanPipelineProve) {
		t.Errorf("MaxDepth 1 printed depth 2 or lost depth 1:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "groth16.prove") { // still in the summary
		t.Errorf("summary lost groth16.prove with MaxDepth 1")
	}
	out.Reset()
	err := tracefile.Waterfall(&out, spans, tracefile.WaterfallOptions{TraceID: strings.ToUpper(spans[0].TraceID)})
	if err != nil || !strings.Contains(out.String(), spans[0].TraceID) {
		t.Errorf("TraceID filter: err %v", err)
	}
	err = tracefile.Waterfall(&out, spans, tracefile.WaterfallOptions{TraceID: "0123456789abcdef0123456789abcdef"})
	if !errors.Is(err, tracefile.ErrTraceNotFound) {
		t.Errorf("unknown trace id: err = %v, want ErrTraceNotFound", err)
	}
	if err := tracefile.Waterfall(failWriter{}, spans, tracefile.WaterfallOptions{}); err == nil {
		t.Error("write error not returned")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// deepTrace is one trace of n spans: a chain, each span the parent of the
// next, and with comb a leaf beside each link too (no chain of single
// children to collapse).
func deepTrace(n int, comb bool) []tracefile.Span {
	t0 := time.Unix(1700000000, 0)
	spans := make([]tracefile.Span, 0, n)
	parent := ""
	for i := 0; len(spans) < n; i++ {
		id := fmt.Sprintf("%016x", len(spans)+1)
		spans = append(spans, tracefile.Span{TraceID: strings.Repeat("ab", 16), SpanID: id, ParentID: parent, Name: "level",
			Start: t0.Add(time.Duration(i) * time.Microsecond), End: t0.Add(time.Hour - time.Duration(i)*time.Microsecond)})
		if comb && len(spans) < n {
			spans = append(spans, tracefile.Span{TraceID: strings.Repeat("ab", 16), SpanID: fmt.Sprintf("%016x", len(spans)+1), ParentID: id, Name: "leaf",
				Start: t0.Add(time.Duration(i) * time.Microsecond), End: t0.Add(time.Duration(i+1) * time.Microsecond)})
		}
		parent = id
	}
	return spans
}

// A parent chain of 100,000 spans printed 2 characters of indentation per
// level (9.8 GB for 99,001 spans): indentation stops at MaxIndentDepth and
// the chain below it is one line, and a deep tree that is no chain (a comb)
// stays linear in its spans.
func TestWaterfallOfADeepTraceIsLinearInItsSpans(t *testing.T) {
	const n = 100_000
	for _, c := range []struct {
		name    string
		comb    bool
		maxSize int
	}{
		{"chain", false, 200 * (tracefile.MaxIndentDepth + 10)},
		{"comb", true, 200 * n},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A bounded buffer: quadratic output fails the write at the
			// bound instead of filling the test machine's memory.
			out := &boundedBuffer{max: c.maxSize}
			if err := tracefile.Waterfall(out, deepTrace(n, c.comb), tracefile.WaterfallOptions{ASCII: true}); err != nil {
				t.Fatalf("%v: more than %d bytes for %d spans", err, c.maxSize, n)
			}
			for _, line := range strings.Split(out.String(), "\n") {
				if len(line) > 250 {
					t.Fatalf("a line of %d bytes: %.120q…", len(line), line)
				}
			}
			if !c.comb && !strings.Contains(out.String(), fmt.Sprintf("… %d spans of a chain of single children (depth %d to %d)", n-tracefile.MaxIndentDepth-2, tracefile.MaxIndentDepth+1, n-2)) {
				t.Errorf("no line counting the collapsed chain:\n%s", out.String())
			}
			if c.comb && !strings.Contains(out.String(), fmt.Sprintf("[depth %d] leaf", n/2)) {
				t.Errorf("the deepest leaf is not named with its depth")
			}
		})
	}
}

// boundedBuffer is a bytes.Buffer that refuses a write past max bytes.
type boundedBuffer struct {
	bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, fmt.Errorf("output past %d bytes", b.max)
	}
	return b.Buffer.Write(p)
}

// A cancelled span (error.type canceled) is marked CANCELLED, as the job's
// state is, not ERROR as a failure: "ERROR: job cancelled" spelled the
// cancel as a fault.
func TestWaterfallMarksACancelledSpanAsCancelled(t *testing.T) {
	id := "0af7651916cd43dd8448eb211c80319c"
	spans := []tracefile.Span{
		{TraceID: id, SpanID: "00000000000000a1", Name: semconv.SpanEngineJob, Start: at(0), End: at(10),
			Status: tracefile.Status{Code: tracefile.StatusError, Message: "job cancelled"},
			Attrs:  map[string]any{string(semconv.KeyErrorType): semconv.ErrorTypeCanceled}},
		{TraceID: id, SpanID: "00000000000000a2", ParentID: "00000000000000a1", Name: semconv.SpanBufferRelease, Start: at(1), End: at(2),
			Status: tracefile.Status{Code: tracefile.StatusError, Message: "munmap: EINVAL"},
			Attrs:  map[string]any{string(semconv.KeyErrorType): semconv.ErrorTypeIO}},
	}
	var b strings.Builder
	if err := tracefile.Waterfall(&b, spans, tracefile.WaterfallOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "engine.job  CANCELLED: job cancelled\n") || !strings.Contains(b.String(), "buffer.release  ERROR: munmap: EINVAL\n") {
		t.Errorf("waterfall:\n%s", b.String())
	}
}
