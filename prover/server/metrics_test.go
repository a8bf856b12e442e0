package server

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// prometheusScrape returns a NewPrometheus provider, shut down when the
// test ends, and a scrape that reads its handler's /metrics page.
func prometheusScrape(t *testing.T) (*sdkmetric.MeterProvider, func() string) {
	t.Helper()
	mp, handler, err := NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp, func() string {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		return string(body)
	}
}

func TestMetricsOnPrometheusEndpoint(t *testing.T) {
	mp, scrape := prometheusScrape(t)
	var eng *engine.Engine
	devs := func() []Device {
		return []Device{{Ordinal: 0, MemoryTotal: 1000, MemoryUsed: 250}, {Ordinal: -1, Name: "host", MemoryTotal: 7777}}
	}
	m, err := NewMetrics(mp, func() engine.Status { return eng.Status() }, devs)
	if err != nil {
		t.Fatal(err)
	}
	eng, err = engine.New([]engine.Worker{{Name: "w", Runner: &fakeRunner{tp: noop.NewTracerProvider()}}}, engine.WithFinishHook(m.JobFinished))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	for _, r := range []*prover.Request{
		{RequestID: "a", Circuit: "mulchain", Verify: true}, {RequestID: "b", Circuit: "mulchain"},
		{RequestID: "c", Circuit: "fail-internal"},
	} {
		_, _ = eng.Prove(context.Background(), r)
	}
	body := scrape()
	for _, re := range []string{
		`cuzk_proofs_completed_total\{[^}]*cuzk_circuit_id="mulchain"[^}]*\} 2`,
		`cuzk_proofs_failed_total\{[^}]*cuzk_circuit_id="fail-internal"[^}]*cuzk_outcome="failed"[^}]*\} 1`,
		`cuzk_proof_duration_seconds_count\{[^}]*cuzk_stage="prove"[^}]*\} 2`,
		// Only the verified proof has a verify stage.
		`cuzk_proof_duration_seconds_count\{[^}]*cuzk_stage="verify"[^}]*\} 1`,
		`cuzk_proof_duration_seconds_bucket\{[^}]*cuzk_stage="total"`,
		`cuzk_queue_depth\{[^}]*cuzk_priority="CRITICAL"[^}]*\} 0`,
		`cuzk_jobs_running\{[^}]*\} 0`,
		`cuzk_device_memory_used_bytes\{[^}]*cuda_device_ordinal="0"[^}]*\} 250`,
		`cuzk_device_memory_total_bytes\{[^}]*\} 1000`,
		`cuzk_spans_dropped`,
		`cuzk_stage_depth\{[^}]*cuzk_stage="device_queue"[^}]*\} 0`,
		`cuzk_stage_depth\{[^}]*cuzk_stage="queue"[^}]*\} 0`,
		`cuzk_device_busy_seconds_total\{[^}]*cuzk_worker="w"[^}]*\} [0-9.e-]+`,
		`cuzk_memory_budget_bytes\{[^}]*\} 0`,
		`cuzk_device_healthy\{[^}]*cuzk_worker="w"[^}]*\} 1`,
	} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("metrics lack %s", re)
		}
	}
	if regexp.MustCompile(`cuzk_device_memory_total_bytes\{[^}]*\} 7777`).MatchString(body) {
		t.Error("the host (CPU backend) is reported as a device")
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// cuzk_device_healthy of a worker falls to 0 once its device faulted.
func TestDeviceHealthyMetricFallsToZeroOnAFault(t *testing.T) {
	mp, scrape := prometheusScrape(t)
	var eng *engine.Engine
	if _, err := NewMetrics(mp, func() engine.Status { return eng.Status() }, func() []Device { return nil }); err != nil {
		t.Fatal(err)
	}
	var err error
	eng, err = engine.New([]engine.Worker{{Name: "cuda:0", Runner: &faultingRunner{}}}, engine.WithTracerProvider(noop.NewTracerProvider()), engine.WithSynthesisWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	healthy := func(v string) *regexp.Regexp {
		return regexp.MustCompile(`cuzk_device_healthy\{[^}]*cuzk_worker="cuda:0"[^}]*\} ` + v + `\n`)
	}
	if body := scrape(); !healthy("1").MatchString(body) {
		t.Fatalf("before the fault, metrics lack cuda:0 healthy 1:\n%s", body)
	}
	if _, err := eng.Prove(context.Background(), &prover.Request{RequestID: "x", Circuit: "mulchain", Constraints: 16}); err == nil {
		t.Fatal("a proof on a device that faults succeeded")
	}
	if body := scrape(); !healthy("0").MatchString(body) {
		t.Errorf("after the fault, metrics lack cuda:0 healthy 0:\n%s", body)
	}
}

// The tuner's choice per circuit and size is on the metrics: the
// syntheses at once and the solver tasks, and the measured synthesis and
// device times it chose them from.
func TestTunerChoiceOnTheMetrics(t *testing.T) {
	mp, scrape := prometheusScrape(t)
	var eng *engine.Engine
	if _, err := NewMetrics(mp, func() engine.Status { return eng.Status() }, func() []Device { return nil }); err != nil {
		t.Fatal(err)
	}
	tuner := engine.NewTuner(16, 1, 0)
	r := &prover.Request{Circuit: "merkle", Constraints: 1 << 20}
	tuner.ObserveSynthesis(r, 800*time.Millisecond)
	tuner.ObserveDevice(r, 100*time.Millisecond)
	tuner.SolverTasks(r, 1, 0)
	var err error
	eng, err = engine.New([]engine.Worker{{Name: "w", Runner: &fakeRunner{tp: noop.NewTracerProvider()}}}, engine.WithTuner(tuner))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	// The values are the tuner's (engine's tests check its choice); the
	// metrics must show them as they are.
	snap := tuner.Snapshot()
	if len(snap) != 1 || snap[0].Workers < 2 || snap[0].SolverTasks < 1 {
		t.Fatalf("tuner snapshot %+v, want one measured shape needing several workers", snap)
	}
	body := scrape()
	for _, re := range []string{
		fmt.Sprintf(`cuzk_synthesis_workers\{[^}]*cuzk_circuit_constraints="1048576"[^}]*cuzk_circuit_id="merkle"[^}]*\} %d\n`, snap[0].Workers),
		fmt.Sprintf(`cuzk_solver_tasks\{[^}]*cuzk_circuit_id="merkle"[^}]*\} %d\n`, snap[0].SolverTasks),
		// Why: the measured times the choice came from.
		`cuzk_tuner_synthesis_time_seconds\{[^}]*cuzk_circuit_id="merkle"[^}]*\} 0\.8\n`,
		`cuzk_tuner_device_time_seconds\{[^}]*cuzk_circuit_id="merkle"[^}]*\} 0\.1\n`,
	} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("metrics lack %s\n%s", re, body)
		}
	}
}

// Every series of the daemon's meter names the project's instrumentation
// scope with its version, as its spans do (semconv.Tracer): the meter was
// made without a version, and cuzk_spans_dropped_total (like every other
// series) had otel_scope_version="".
func TestEveryMetricCarriesTheScopeVersion(t *testing.T) {
	mp, scrape := prometheusScrape(t)
	var eng *engine.Engine
	if _, err := NewMetrics(mp, func() engine.Status { return eng.Status() }, func() []Device { return nil }); err != nil {
		t.Fatal(err)
	}
	var err error
	eng, err = engine.New([]engine.Worker{{Name: "w", Runner: &fakeRunner{tp: noop.NewTracerProvider()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	want := []string{fmt.Sprintf(`otel_scope_name=%q`, semconv.ScopeName), fmt.Sprintf(`otel_scope_version=%q`, semconv.ScopeVersion())}
	if semconv.ScopeVersion() == "" {
		t.Fatal("semconv.ScopeVersion is empty: the test cannot tell")
	}
	series := 0
	for _, line := range strings.Split(scrape(), "\n") {
		if !strings.HasPrefix(line, "cuzk_") {
			continue
		}
		series++
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("series %q lacks %s", line, w)
			}
		}
	}
	if series == 0 {
		t.Fatal("no cuzk_ series on the page")
	}
}
