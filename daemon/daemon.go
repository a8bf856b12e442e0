package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/consensys/gnark/logger"

	"github.com/otelcuzk/otelcuzk/cupti/jobs"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/api/endpoint"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/server"
	"github.com/otelcuzk/otelcuzk/prover/upstream"
)

// Daemon is one assembled proving daemon: its pipelines, engine, gRPC
// server and listeners. Made by New; Run serves it; Shutdown ends it.
type Daemon struct {
	cfg         Config
	eng         *engine.Engine
	srv         *server.Server
	lis         net.Listener
	httpSrv     *http.Server // nil without metrics
	metricsAddr string
	stages      *engineStages
	steps       *otelcuzk.StepTracker // the step each running job is in
	// undo releases what New acquired, last first (the metrics provider,
	// the pipelines and their releasers, the telemetry).
	undo     []func()
	shutOnce sync.Once
	shutErr  error
}

// New checks cfg (errors name the flag of `cuzk serve`), registers its
// circuit files, sets up telemetry (spans to the OTLP endpoint of the
// OTEL_* variables, else cfg.TraceFile), opens the workers' pipelines,
// builds the engine and the gRPC server and binds cfg.Listen and
// cfg.MetricsListen. Nothing is served until Run. On error everything
// acquired is released.
func New(ctx context.Context, cfg Config) (_ *Daemon, err error) {
	logger.Disable()
	mode, budget, err := cfg.check()
	if err != nil {
		return nil, err
	}
	dev, err := DeviceSettingsFromEnv()
	if err != nil {
		return nil, err
	}
	if err := registerCircuitFiles(cfg.CircuitFiles); err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, steps: otelcuzk.NewStepTracker()}
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	keep, closeJournal, err := openJournal(cfg)
	if err != nil {
		return nil, err
	}
	d.onRelease(closeJournal) // last: after the span flush
	// Which step each running job is in, for GetStatus (cuzk status).
	topts := append(TraceDevices(cfg.Backend),
		otelcuzk.WithTraceFile(cfg.TraceFile), otelcuzk.WithLogWriter(cfg.Log), otelcuzk.WithSpanProcessor(d.steps),
		// A caller that does not sample still gets its proof recorded, as
		// a new trace linked to the caller's span (unless a sampler is set).
		otelcuzk.WithUnsampledCallerAsLink())
	tel, err := otelcuzk.New(ctx, append(topts, cfg.Telemetry...)...)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	// An OTLP endpoint where nothing listens, or that is no OTLP receiver
	// of the protocol set (a UI's port, the other transport's), loses
	// every span: said once, in the background, without delaying the
	// start or refusing it (under systemd the trace backend may come up
	// after the daemon; spans dropped meanwhile are counted).
	go func() {
		if perr := tel.ProbeEndpoint(ctx, 2*time.Second); perr != nil {
			if ctx.Err() == nil {
				_, endpoint := tel.Destination()
				counted := "" // the metric only where --metrics-listen serves it
				if cfg.MetricsListen != "" {
					counted = ", the spans lost counted in cuzk_spans_dropped_total"
				}
				fmt.Fprintf(cfg.Log, "cuzk serve: warning: nothing answers at the OTLP endpoint %s (%s): traces will not arrive until a receiver listens there (start Jaeger or an OpenTelemetry Collector; docker compose -f deploy/compose.dev.yaml up -d runs Jaeger on 4317 and 4318); serving anyway%s\n",
					endpoint, dialReason(perr), counted)
			}
			return
		}
		if perr := tel.ProbeProtocol(ctx, 2*time.Second); perr != nil {
			fmt.Fprintf(cfg.Log, "cuzk serve: warning: %v; spans sent there are lost\n", perr)
		}
	}()
	d.onRelease(func() {
		if terr := tel.Shutdown(context.Background()); terr != nil {
			fmt.Fprintf(cfg.Log, "cuzk serve: flushing spans: %v\n", human.OneLine(terr))
		}
	})

	// The budget, and the pools of --release pool beside it, are shares of
	// the host's memory, read once for both.
	mem := engine.PhysicalMemory()
	budgetBytes := budget.Resolve(mem)
	if mem > 0 && budgetBytes > mem {
		fmt.Fprintf(cfg.Log, "cuzk serve: warning: --memory-budget %s is above the host's physical memory (%s): it bounds nothing\n",
			human.Bytes(budgetBytes), human.Bytes(mem))
	}
	workers, pipes, devices, err := newWorkers(ctx, cfg, mode, dev, mem, budgetBytes)
	d.onRelease(func() {
		for _, p := range pipes {
			// The pipeline's Releaser is this daemon's (newWorkers): closed after it.
			if cerr := errors.Join(p.Close(context.Background()), p.Releaser().Close(context.Background())); cerr != nil {
				fmt.Fprintf(cfg.Log, "cuzk serve: closing pipeline: %v\n", cerr)
			}
		}
	})
	if err != nil {
		return nil, err
	}

	mp, metricsHandler, err := server.NewPrometheus()
	if err != nil {
		return nil, err
	}
	d.onRelease(func() { mp.Shutdown(context.Background()) })
	devs := func() []server.Device { return deviceMemory(devices, pipes) }
	metrics, err := server.NewMetrics(mp, func() engine.Status { return d.eng.Status() }, devs)
	if err != nil {
		return nil, err
	}
	// Refuse what no worker could prove (unknown circuit, a size beyond
	// memory, a malformed witness) at submit, not after it held a queue slot.
	validate := func(req *prover.Request) error {
		for _, p := range pipes {
			if err := p.Validate(req); err != nil {
				return err
			}
		}
		return nil
	}
	d.stages = newEngineStages(cfg, pipes, devices, budgetBytes)
	// After --shutdown-timeout the running jobs are cancelled; a step that
	// cannot stop (a key setup) gets one more second, not the engine's
	// default grace, so SIGTERM ends the daemon near its deadline.
	eopts := append(append([]engine.Option(nil), d.stages.opts...), keep...)
	d.eng, err = engine.New(workers, append(eopts, engine.WithQueueSize(cfg.QueueSize), engine.WithFinishHook(metrics.JobFinished),
		engine.WithValidator(validate), engine.WithCancelGrace(CancelGrace))...)
	if err != nil {
		return nil, err
	}
	stopEngine := true // until the server owns it
	defer func() {
		if err != nil && stopEngine {
			d.eng.Shutdown(context.Background())
		}
	}()
	var loaded server.CircuitManagers
	for _, p := range pipes {
		loaded = append(loaded, p)
	}
	opts := []server.Option{
		server.WithCircuitManager(loaded), server.WithDevices(devs), server.WithVersion(otelcuzk.Version()),
		server.WithBearerToken(cfg.Token), server.WithMaxMessageBytes(cfg.MaxMessageBytes), server.WithMetricsHandler(metricsHandler),
		server.WithJobSteps(d.steps.Step),
	}
	if cfg.TLSCert != "" {
		opts = append(opts, server.WithTLS(cfg.TLSCert, cfg.TLSKey))
	}
	if cfg.Upstream != "" {
		up, err := dialUpstream(cfg)
		if err != nil {
			return nil, err
		}
		d.onRelease(func() { up.Close() })
		opts = append(opts, server.WithUpstream(up))
	}
	if d.srv, err = server.New(d.eng, opts...); err != nil {
		return nil, err
	}

	if d.lis, err = endpoint.Listen(cfg.Listen); err != nil {
		return nil, fmt.Errorf("serve: --listen %s: %w", cfg.Listen, err)
	}
	if cfg.TLSCert == "" && cfg.Token == "" && !isLoopback(d.lis.Addr()) {
		fmt.Fprintf(cfg.Log, "cuzk serve: warning: %s is reachable from other hosts without TLS or a token\n", d.lis.Addr())
	}
	if cfg.MetricsListen != "" {
		mlis, err := endpoint.Listen(cfg.MetricsListen) // TCP: checkListen refused a unix socket
		if err != nil {
			d.lis.Close()
			return nil, fmt.Errorf("serve: --metrics-listen %s: %w", cfg.MetricsListen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler)
		d.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go d.httpSrv.Serve(mlis)
		d.metricsAddr = mlis.Addr().String()
	}
	stopEngine = false
	return d, nil
}

// dialReason is why a dial failed, without the addresses the error
// repeats: "connection refused", "i/o timeout", "lookup HOST: no such host".
func dialReason(err error) string {
	var op *net.OpError
	if !errors.As(err, &op) {
		return human.OneLine(err).Error()
	}
	var sys *os.SyscallError
	if errors.As(op.Err, &sys) {
		return sys.Err.Error()
	}
	return op.Err.Error()
}

// onRelease adds f to what release undoes, run before what was added earlier.
func (d *Daemon) onRelease(f func()) { d.undo = append(d.undo, f) }

// release runs the undo list, last first.
func (d *Daemon) release() {
	for i := len(d.undo) - 1; i >= 0; i-- {
		d.undo[i]()
	}
	d.undo = nil
}

// Addr is the bound gRPC address (host:port).
func (d *Daemon) Addr() string { return endpoint.String(d.lis) }

// MetricsAddr is the bound /metrics address, "" without metrics.
func (d *Daemon) MetricsAddr() string { return d.metricsAddr }

// Engine is the daemon's engine (its Status, Workers).
func (d *Daemon) Engine() *engine.Engine { return d.eng }

// Run serves until ctx is done, then shuts down as Shutdown does with
// cfg.ShutdownTimeout for the running proofs: backends with a warm-up
// are warmed in the background (NOT_SERVING until they are), then the
// start line is logged and cfg.Ready called. A shutdown that had to
// cancel proofs is logged, not an error: the daemon did what SIGTERM
// asks. An error is the gRPC server's own (the daemon is then shut down
// at once).
func (d *Daemon) Run(ctx context.Context) error {
	d.stages.warmup(ctx, d.srv, d.cfg.Log) // NOT_SERVING before the first health check can come
	serveErr := make(chan error, 1)
	go func() { serveErr <- d.srv.Serve(d.lis) }()
	fmt.Fprintf(d.cfg.Log, "cuzk serve: listening on %s (metrics %s), workers %s, queue %d, %s\n",
		d.Addr(), orNone(d.metricsAddr), strings.Join(d.eng.Workers(), ","), d.cfg.QueueSize, d.stages.describe())
	if d.cfg.Ready != nil {
		d.cfg.Ready(d.Addr(), d.metricsAddr)
	}
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no time for running proofs
		d.Shutdown(ctx)
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(d.cfg.Log, d.shutdownLine())
	sctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownTimeout)
	defer cancel()
	d.Shutdown(sctx)
	return nil
}

// Shutdown stops the daemon: NOT_SERVING, no new calls or jobs, running
// proofs finish until ctx is done and are then cancelled (CancelGrace to
// stop, else abandoned), the waiting calls are answered (RPCGrace), the
// metrics listener closes, the pipelines and their buffer releases close
// and the spans are flushed; the last line logged counts how the jobs
// ended. Safe to call more than once; it returns the first call's error
// (the engine's, when proofs had to be cancelled).
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.shutOnce.Do(func() {
		if err := d.srv.Shutdown(ctx); err != nil {
			fmt.Fprintf(d.cfg.Log, "cuzk serve: %v\n", err)
			d.shutErr = err
		}
		if d.httpSrv != nil {
			hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
			d.httpSrv.Shutdown(hctx)
			hcancel()
		}
		summary := shutdownSummary(d.eng.Status())
		d.release()
		fmt.Fprintln(d.cfg.Log, summary) // last, after the span flush
	})
	return d.shutErr
}

// shutdownLine says, as the daemon begins to stop, what it waits for: each
// running job by id, step and worker, for up to --shutdown-timeout (a
// running CPU MSM or key setup cannot stop mid-way: it is waited for, then
// cancelled and, CancelGrace later, abandoned), and the queued ones it
// cancels at once. "shutting down (running proofs may finish for 30s)"
// said nothing of what held a Ctrl-C'd daemon on.
func (d *Daemon) shutdownLine() string {
	st := d.eng.Status()
	var parts []string
	if n := len(st.Waiting); n > 0 {
		parts = append(parts, fmt.Sprintf("%d queued job%s cancelled", n, human.Plural(n)))
	}
	if n := len(st.Running); n > 0 {
		var jobs []string
		for _, j := range st.Running {
			what := j.ID
			if step := d.steps.Step(j.TraceID); step != "" {
				what += " in " + step
			}
			if j.Worker != "" {
				what += " on " + j.Worker
			}
			jobs = append(jobs, what)
		}
		sort.Strings(jobs)
		them := "them"
		if n == 1 {
			them = "it"
		}
		parts = append(parts, fmt.Sprintf("waiting up to %v for %d running job%s to finish (%s), then cancelling %s",
			d.cfg.ShutdownTimeout, n, human.Plural(n), strings.Join(jobs, "; "), them))
	}
	if len(parts) == 0 {
		return "cuzk serve: shutting down (no job running)"
	}
	return "cuzk serve: shutting down: " + strings.Join(parts, "; ") + "; a second signal quits at once"
}

// isLoopback: a loopback TCP address, or a unix socket (this host only).
func isLoopback(a net.Addr) bool {
	if a.Network() == "unix" {
		return true
	}
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// dialUpstream makes the client of cfg.Upstream, publishing its jobs'
// windows to $CUZK_GPUTRACE_JOBS when set (cupti/jobs), with a message
// bound of at least upstream.DefaultMaxMessageBytes (vanilla proofs).
func dialUpstream(cfg Config) (*upstream.Client, error) {
	pub, err := jobs.Open("")
	if err != nil {
		return nil, fmt.Errorf("serve: --upstream: %w", err)
	}
	up, err := upstream.New(cfg.Upstream, upstream.WithJobs(pub),
		upstream.WithMaxMessageBytes(max(cfg.MaxMessageBytes, upstream.DefaultMaxMessageBytes)))
	if err != nil {
		pub.Close()
		return nil, fmt.Errorf("serve: --upstream: %w", err)
	}
	fmt.Fprintf(cfg.Log, "cuzk serve: Filecoin proofs go to the cuzk at %s\n", cfg.Upstream)
	return up, nil
}
