package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// e2eConstraints keeps every proof of the suite small (2^10 mulchain
// constraints prove in well under a second on two cores).
const e2eConstraints = 1024

// cpuLayerParents is DESIGN.md's span tree as the CPU prover makes it
// with --release sync: each layer and the name of its parent ("" for the
// root of a local `cuzk prove`; under the daemon engine.job's parent is
// the gRPC server span).
var cpuLayerParents = map[string]string{
	semconv.SpanEngineJob:          "",
	semconv.SpanEngineQueue:        semconv.SpanEngineJob,
	semconv.SpanPipelineSynthesize: semconv.SpanEngineJob,
	semconv.SpanPipelineProve:      semconv.SpanEngineJob,
	semconv.SpanGroth16Prove:       semconv.SpanPipelineProve,
	semconv.SpanComputeH:           semconv.SpanGroth16Prove,
	semconv.SpanMSMG1A:             semconv.SpanGroth16Prove,
	semconv.SpanMSMG1B:             semconv.SpanGroth16Prove,
	semconv.SpanMSMG1K:             semconv.SpanGroth16Prove,
	semconv.SpanMSMG1H:             semconv.SpanGroth16Prove,
	semconv.SpanMSMG2B:             semconv.SpanGroth16Prove,
	semconv.SpanBufferRelease:      semconv.SpanGroth16Prove,
	semconv.SpanPipelineSerialize:  semconv.SpanEngineJob,
	semconv.SpanProofVerify:        semconv.SpanEngineJob,
}

func layerNames() []string {
	var names []string
	for n := range cpuLayerParents {
		names = append(names, n)
	}
	return names
}

// jaegerTimeSlack absorbs Jaeger's microsecond truncation of start and
// duration when checking that a child lies inside its parent.
const jaegerTimeSlack = 2 * time.Microsecond

// assertLayers checks that every CPU layer is present with its parent
// (rootParent stands for engine.job's), and that each lies inside its
// parent's time.
func assertLayers(t *testing.T, spans []tracefile.Span, rootParent string) spanTree {
	t.Helper()
	for _, e := range layerErrors(spans, rootParent) {
		t.Error(e)
	}
	return newSpanTree(spans)
}

// layerErrors lists what is wrong with the CPU layers of spans; nil when
// the tree is whole.
func layerErrors(spans []tracefile.Span, rootParent string) []string {
	var errs []string
	st := newSpanTree(spans)
	for name, parent := range cpuLayerParents {
		got := st.byName[name]
		if len(got) == 0 {
			errs = append(errs, fmt.Sprintf("no %s span", name))
			continue
		}
		if parent == "" {
			parent = rootParent
		}
		for _, s := range got {
			if p := st.parentName(s); p != parent {
				errs = append(errs, fmt.Sprintf("%s (%s): parent %q, want %q", name, s.SpanID, p, parent))
				continue
			}
			if parent == "" {
				continue
			}
			ps := st.byID[s.ParentID]
			if s.Start.Before(ps.Start.Add(-jaegerTimeSlack)) || s.End.After(ps.End.Add(jaegerTimeSlack)) {
				errs = append(errs, fmt.Sprintf("%s [%v, %v] not inside its parent %s [%v, %v]", name, s.Start, s.End, ps.Name, ps.Start, ps.End))
			}
		}
	}
	if n := len(st.byName[semconv.SpanBufferRelease]); n < 2 {
		errs = append(errs, fmt.Sprintf("%d buffer.release spans, want one per large buffer", n))
	}
	return errs
}

var traceIDLine = regexp.MustCompile(`trace id ([0-9a-f]{32})`)

// TestProveExportsEveryLayerToJaeger: `cuzk prove` with OTLP over gRPC and
// over HTTP puts DESIGN.md's whole CPU span tree into Jaeger, and the trace
// is found again by its request id through Jaeger's tag search.
func TestProveExportsEveryLayerToJaeger(t *testing.T) {
	j := startJaeger(t)
	cuzk := cuzkBin(t)
	cacheDir := filepath.Join(binDir, "keys")
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			dir := t.TempDir()
			service := fmt.Sprintf("e2e-prove-%d", time.Now().UnixNano())
			out, _ := runProgram(t, 3*time.Minute, j.otlpEnv(protocol, service), cuzk, "prove",
				"--circuit", "mulchain", "--constraints", fmt.Sprint(e2eConstraints), "--backend", "cpu",
				"--release", "sync", "--cache-dir", cacheDir,
				"--trace-file", filepath.Join(dir, "unused.jsonl"), "--proof", filepath.Join(dir, "proof.bin"))
			if !regexp.MustCompile(`verifier\s+ACCEPTED`).MatchString(out) {
				t.Errorf("proof not accepted:\n%s", out)
			}
			m := traceIDLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no trace id in the output:\n%s", out)
			}
			id := m[1]
			spans := traceOf(t, j, id, layerNames()...)
			st := assertLayers(t, spans, "")
			for _, s := range spans {
				if s.Service != service {
					t.Errorf("%s: service %q, want %q", s.Name, s.Service, service)
				}
			}

			// Correlation: the request id of engine.job finds the trace.
			job := st.one(t, semconv.SpanEngineJob)
			reqID, _ := job.Attrs[string(semconv.KeyRequestID)].(string)
			if reqID == "" {
				t.Fatalf("engine.job has no %s: %v", semconv.KeyRequestID, job.Attrs)
			}
			if job.Attrs[string(semconv.KeyCircuitID)] != "mulchain" {
				t.Errorf("engine.job %s = %v", semconv.KeyCircuitID, job.Attrs[string(semconv.KeyCircuitID)])
			}
			assertFoundByTag(t, j, service, string(semconv.KeyRequestID), reqID, id)
		})
	}
}

// assertFoundByTag checks that Jaeger's tag search for key=value in
// service returns exactly the trace id.
func assertFoundByTag(t *testing.T, j *jaegerInstance, service, key, value, id string) {
	t.Helper()
	traces, err := tracefile.SearchJaeger(context.Background(), nil, j.QueryURL(), tracefile.JaegerQuery{
		Service: service, Tags: map[string]string{key: value},
	})
	if err != nil {
		t.Fatalf("search %s=%s: %v", key, value, err)
	}
	if len(traces) != 1 || len(traces[0]) == 0 || traces[0][0].TraceID != id {
		var got []string
		for _, tr := range traces {
			if len(tr) > 0 {
				got = append(got, tr[0].TraceID)
			}
		}
		t.Errorf("search %s=%s found traces %v, want exactly %s", key, value, got, id)
	}
	// A value nobody used finds nothing: the search does filter.
	none, err := tracefile.SearchJaeger(context.Background(), nil, j.QueryURL(), tracefile.JaegerQuery{
		Service: service, Tags: map[string]string{key: value + "-absent"},
	})
	if err != nil || len(none) != 0 {
		t.Errorf("search for an absent %s: %d traces, %v", key, len(none), err)
	}
}

// TestTraceCommandReadsProveTraceFile: with no OTLP endpoint `cuzk prove`
// writes its trace to the local OTLP JSON lines file, and `cuzk trace FILE`
// explains it: every layer in the waterfall, untraced time, the layer
// summary.
func TestTraceCommandReadsProveTraceFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cuzk-trace.jsonl")
	// Unset any OTLP endpoint the environment may carry.
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="}
	out, _ := runProgram(t, 3*time.Minute, env, cuzkBin(t), "prove",
		"--circuit", "mulchain", "--constraints", fmt.Sprint(e2eConstraints), "--backend", "cpu",
		"--release", "sync", "--cache-dir", filepath.Join(binDir, "keys"),
		"--trace-file", file, "--proof", filepath.Join(dir, "proof.bin"))
	m := traceIDLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no trace id in the output:\n%s", out)
	}
	got, _ := runProgram(t, time.Minute, nil, cuzkBin(t), "trace", file, "--ascii")
	if !strings.Contains(got, m[1]) {
		t.Errorf("waterfall lacks trace id %s:\n%s", m[1], got)
	}
	for name := range cpuLayerParents {
		if !regexp.MustCompile(`(?m)^.*\s` + regexp.QuoteMeta(name) + `\b`).MatchString(got) {
			t.Errorf("waterfall lacks %s:\n%s", name, got)
		}
	}
	if !strings.Contains(got, "where the time went") {
		t.Errorf("no layer summary:\n%s", got)
	}
}
