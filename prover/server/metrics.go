package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// Metric names (OTel form; the Prometheus exporter writes them with _ and
// unit and _total suffixes, e.g. cuzk_proofs_completed_total,
// cuzk_proof_duration_seconds).
const (
	MetricProofsCompleted  = "cuzk.proofs.completed"       // counter {proof}, by cuzk.circuit.id, cuzk.backend
	MetricProofsFailed     = "cuzk.proofs.failed"          // counter {proof}, by cuzk.circuit.id, outcome (failed|cancelled)
	MetricProofDuration    = "cuzk.proof.duration"         // histogram s, by cuzk.circuit.id and stage
	MetricQueueDepth       = "cuzk.queue.depth"            // gauge {job}, by cuzk.priority
	MetricJobsRunning      = "cuzk.jobs.running"           // gauge {job}
	MetricDeviceMemoryUsed = "cuzk.device.memory.used"     // gauge By, by cuda.device.ordinal
	MetricDeviceMemory     = "cuzk.device.memory.total"    // gauge By, by cuda.device.ordinal
	MetricStageDepth       = "cuzk.stage.depth"            // gauge {job}, by cuzk.stage (queue, memory, synthesis, device_queue, proving)
	MetricDeviceBusy       = "cuzk.device.busy"            // counter s, by cuzk.worker: time each device worker spent proving
	MetricMemoryBudget     = "cuzk.memory.budget"          // gauge By: the engine's memory budget (0: none)
	MetricDeviceHealthy    = "cuzk.device.healthy"         // gauge 1 or 0, by cuzk.worker: 0 once its device faulted
	MetricMemoryInFlight   = "cuzk.memory.in_flight"       // gauge By: reserved estimates plus keys held
	MetricMemoryPoolLimit  = "cuzk.memory.pool.limit"      // gauge By, by cuzk.release.mode: what the buffer pools may keep in all (0 outside pool mode)
	MetricMemoryPoolHeld   = "cuzk.memory.pool.held"       // gauge By, by cuzk.release.mode: idle buffers the pools keep now for reuse
	MetricSynthesisWorkers = "cuzk.synthesis.workers"      // gauge {job}, by cuzk.circuit.id and cuzk.circuit.constraints: syntheses at once the tuner allows
	MetricSolverTasks      = "cuzk.solver.tasks"           // gauge {goroutine}, by cuzk.circuit.id and cuzk.circuit.constraints: the solver tasks of the last synthesis
	MetricTunerSynthesis   = "cuzk.tuner.synthesis.time"   // gauge s, by cuzk.circuit.id and cuzk.circuit.constraints: the measured synthesis time the tuner chose from (moving average; 0 until measured)
	MetricTunerDevice      = "cuzk.tuner.device.time"      // gauge s, by the same: the measured device (prove) time it chose from
	attrStage              = attribute.Key("cuzk.stage")   // queue_wait, key_load, synthesis, prove, serialize, verify, total; for cuzk.stage.depth the stages
	attrWorker             = attribute.Key("cuzk.worker")  // a device worker's name (cuda:0, cpu:1)
	attrOutcome            = attribute.Key("cuzk.outcome") // failed, cancelled
)

// durationBuckets are in seconds: small proofs take milliseconds, PoRep
// partitions minutes.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics records the daemon's metrics on an OTel meter. Its JobFinished
// is the engine's finish hook (engine.WithFinishHook); the gauges read the
// engine's Status and the devices at each collection.
type Metrics struct {
	completed metric.Int64Counter
	failed    metric.Int64Counter
	duration  metric.Float64Histogram
}

// NewMetrics registers the instruments on mp's meter. status is called at
// each collection for queue depth and running jobs (nil: not reported);
// devices for device memory (nil, or devices with a negative ordinal such
// as the host of the CPU backend: not reported).
// The spans dropped by the exporter are reported through
// otelcuzk.RegisterMetrics. The meter is the project's instrumentation
// scope, semconv.ScopeName at semconv.ScopeVersion (the scope of its spans,
// semconv.Tracer), so each series carries otel_scope_version on the
// Prometheus page. Errors are the meter's.
func NewMetrics(mp metric.MeterProvider, status func() engine.Status, devices func() []Device) (*Metrics, error) {
	meter := mp.Meter(semconv.ScopeName, metric.WithInstrumentationVersion(semconv.ScopeVersion()))
	m := &Metrics{}
	var err error
	if m.completed, err = meter.Int64Counter(MetricProofsCompleted, metric.WithUnit("{proof}"),
		metric.WithDescription("Proofs that succeeded.")); err != nil {
		return nil, err
	}
	if m.failed, err = meter.Int64Counter(MetricProofsFailed, metric.WithUnit("{proof}"),
		metric.WithDescription("Proofs that failed or were cancelled.")); err != nil {
		return nil, err
	}
	if m.duration, err = meter.Float64Histogram(MetricProofDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of each stage of a succeeded proof."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if status != nil {
		if _, err = meter.Int64ObservableGauge(MetricQueueDepth, metric.WithUnit("{job}"),
			metric.WithDescription("Jobs waiting for a worker."),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				st := status()
				for p, n := range st.Queued {
					o.Observe(int64(n), metric.WithAttributes(semconv.KeyPriority.String(p.String())))
				}
				return nil
			})); err != nil {
			return nil, err
		}
		if err := stageMetrics(meter, status); err != nil {
			return nil, err
		}
		if _, err = meter.Int64ObservableGauge(MetricJobsRunning, metric.WithUnit("{job}"),
			metric.WithDescription("Jobs being proved."),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(int64(len(status().Running)))
				return nil
			})); err != nil {
			return nil, err
		}
	}
	if devices != nil {
		used := int64Gauge(meter, &err, MetricDeviceMemoryUsed, "By", "Device memory in use.")
		total := int64Gauge(meter, &err, MetricDeviceMemory, "By", "Device memory in all.")
		if err != nil {
			return nil, err
		}
		if _, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			for _, d := range devices() {
				if d.Ordinal < 0 {
					continue // the host: no device memory to report
				}
				a := metric.WithAttributes(semconv.KeyCUDADeviceOrdinal.Int(d.Ordinal))
				o.ObserveInt64(used, int64(d.MemoryUsed), a)
				o.ObserveInt64(total, int64(d.MemoryTotal), a)
			}
			return nil
		}, used, total); err != nil {
			return nil, err
		}
	}
	if err := otelcuzk.RegisterMetrics(meter); err != nil {
		return nil, err
	}
	return m, nil
}

// int64Gauge makes an observable gauge for a callback registered later,
// joining the meter's error into *err: the caller registers the callback
// only when every instrument it reads was made.
func int64Gauge(meter metric.Meter, err *error, name, unit, description string) metric.Int64ObservableGauge {
	g, gerr := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(description))
	*err = errors.Join(*err, gerr)
	return g
}

// stageMetrics registers the depth of each stage, the device workers'
// busy time, the memory budget and the buffer pools, all read from one
// Status per collection.
func stageMetrics(meter metric.Meter, status func() engine.Status) error {
	var err error
	depth := int64Gauge(meter, &err, MetricStageDepth, "{job}",
		"Partitions in each stage: queue (waiting for a synthesis slot), memory (waiting for the budget), synthesis, device_queue (synthesized, waiting for a device), proving.")
	busy, cerr := meter.Float64ObservableCounter(MetricDeviceBusy, metric.WithUnit("s"),
		metric.WithDescription("Time each device worker spent proving."))
	err = errors.Join(err, cerr)
	budget := int64Gauge(meter, &err, MetricMemoryBudget, "By", "Host memory budget of the proofs in flight (0: none).")
	healthy := int64Gauge(meter, &err, MetricDeviceHealthy, "", "1 while a device worker is healthy, 0 once its device faulted.")
	inFlight := int64Gauge(meter, &err, MetricMemoryInFlight, "By", "Host memory reserved by the proofs in flight plus the proving keys held.")
	poolLimit := int64Gauge(meter, &err, MetricMemoryPoolLimit, "By",
		"Host memory the buffer pools of --release pool may keep for reuse in all, outside the memory budget (0 in the other release modes).")
	poolHeld := int64Gauge(meter, &err, MetricMemoryPoolHeld, "By",
		"Host memory the buffer pools of --release pool keep now: idle buffers kept for the next proofs (0 in the other release modes).")
	workers := int64Gauge(meter, &err, MetricSynthesisWorkers, "{job}",
		"Syntheses of a circuit and size the tuner lets run at once (from the measured synthesis and device times, the cores and the memory budget).")
	tasks := int64Gauge(meter, &err, MetricSolverTasks, "{goroutine}", "Solver tasks (gnark's solver.WithNbTasks) of the last synthesis of a circuit and size.")
	synthTime, serr := meter.Float64ObservableGauge(MetricTunerSynthesis, metric.WithUnit("s"),
		metric.WithDescription("Measured synthesis time of a circuit and size (moving average) from which the tuner chose its synthesis workers; 0 until measured."))
	deviceTime, derr := meter.Float64ObservableGauge(MetricTunerDevice, metric.WithUnit("s"),
		metric.WithDescription("Measured device (prove) time of a circuit and size (moving average) from which the tuner chose its synthesis workers; 0 until measured."))
	if err = errors.Join(err, serr, derr); err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := status()
		for _, d := range []struct {
			stage string
			n     int
		}{{"queue", st.QueueDepth()}, {"memory", st.WaitingMemory}, {"synthesis", st.Synthesizing},
			{"device_queue", st.DeviceQueueDepth()}, {"proving", st.Proving}} {
			o.ObserveInt64(depth, int64(d.n), metric.WithAttributes(attrStage.String(d.stage)))
		}
		for _, w := range st.Workers {
			o.ObserveFloat64(busy, w.Busy.Seconds(), metric.WithAttributes(attrWorker.String(w.Name)))
			ok := int64(0)
			if w.Healthy {
				ok = 1
			}
			o.ObserveInt64(healthy, ok, metric.WithAttributes(attrWorker.String(w.Name)))
		}
		o.ObserveInt64(budget, int64(st.MemoryBudget))
		o.ObserveInt64(inFlight, int64(st.MemoryReserved+st.MemoryHeld))
		if st.ReleaseMode != "" { // the engine was told its Releasers (engine.WithReleasers)
			mode := metric.WithAttributes(semconv.KeyReleaseMode.String(string(st.ReleaseMode)))
			o.ObserveInt64(poolLimit, int64(st.PoolLimit), mode)
			o.ObserveInt64(poolHeld, int64(st.PoolHeld), mode)
		}
		for _, tu := range st.Tuning {
			attrs := metric.WithAttributes(semconv.KeyCircuitID.String(tu.Circuit), semconv.KeyCircuitConstraints.Int(tu.Constraints))
			o.ObserveInt64(workers, int64(tu.Workers), attrs)
			o.ObserveInt64(tasks, int64(tu.SolverTasks), attrs)
			o.ObserveFloat64(synthTime, tu.SynthesisMs/1e3, attrs)
			o.ObserveFloat64(deviceTime, tu.DeviceMs/1e3, attrs)
		}
		return nil
	}, depth, busy, budget, inFlight, poolLimit, poolHeld, healthy, workers, tasks, synthTime, deviceTime)
	return err
}

// JobFinished records one ended job; pass it to engine.WithFinishHook.
// Safe for concurrent use.
func (m *Metrics) JobFinished(info engine.JobInfo) {
	ctx := context.Background()
	circuit := semconv.KeyCircuitID.String(info.Circuit)
	switch info.State {
	case engine.StateSucceeded:
		backend := ""
		if info.Result != nil {
			backend = info.Result.Backend
		}
		m.completed.Add(ctx, 1, metric.WithAttributes(circuit, semconv.KeyBackend.String(backend)))
		if info.Result == nil {
			return
		}
		t := info.Result.Timings
		for _, s := range []struct {
			stage string
			secs  float64
			ran   bool
		}{
			{"queue_wait", t.QueueWait.Seconds(), true}, {"key_load", t.KeyLoad.Seconds(), true},
			{"synthesis", t.Synthesis.Seconds(), true}, {"prove", t.Prove.Seconds(), true},
			{"serialize", t.Serialize.Seconds(), true},
			// A succeeded proof was verified iff Verified; an unverified
			// one has no verify stage, and recording 0 for it would drag
			// the verify quantiles to nothing.
			{"verify", t.Verify.Seconds(), info.Result.Verified}, {"total", t.Total.Seconds(), true},
		} {
			if s.ran {
				m.duration.Record(ctx, s.secs, metric.WithAttributes(circuit, attrStage.String(s.stage)))
			}
		}
	case engine.StateFailed:
		m.failed.Add(ctx, 1, metric.WithAttributes(circuit, attrOutcome.String("failed")))
	case engine.StateCancelled:
		m.failed.Add(ctx, 1, metric.WithAttributes(circuit, attrOutcome.String("cancelled")))
	}
}

// NewPrometheus returns a MeterProvider whose metrics are served, in the
// Prometheus text format, by the returned handler (mount it on /metrics).
// It uses its own registry, so nothing else of the process leaks in.
func NewPrometheus() (*sdkmetric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// textWriter is the http.ResponseWriter metricsText hands a handler.
type textWriter struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (w *textWriter) Header() http.Header         { return w.header }
func (w *textWriter) WriteHeader(code int)        { w.code = code }
func (w *textWriter) Write(b []byte) (int, error) { return w.body.Write(b) }

// metricsText is the Prometheus text format h serves to a GET of /metrics.
// Errors: a status other than 200, with the body's first line.
func metricsText(ctx context.Context, h http.Handler) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return "", err
	}
	// Plain text, not protobuf or OpenMetrics, as cuzk's GetMetrics.
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	w := &textWriter{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.code != http.StatusOK {
		line, _, _ := strings.Cut(w.body.String(), "\n")
		return "", fmt.Errorf("status %d: %s", w.code, line)
	}
	return w.body.String(), nil
}
