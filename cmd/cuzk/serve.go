package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/consensys/gnark/logger"
	"github.com/urfave/cli/v2"
	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/journal"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// Default addresses of the daemon: loopback, so that a daemon started
// without TLS or a token is not reachable from other hosts.
const (
	defaultListen        = "127.0.0.1:9820"
	defaultMetricsListen = "127.0.0.1:9464" // the OTel Prometheus exporter's customary port (deploy/prometheus.yml)
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "serve",
		Usage: "run the gRPC proving daemon (cuzk.v1.ProvingEngine)",
		Description: "Serves cuzk.v1.ProvingEngine on --listen and Prometheus metrics on\n" +
			"--metrics-listen (/metrics). One worker per GPU plus --cpu-workers on the CPU;\n" +
			"beside GPUs --synthesis-workers proofs are synthesized on the CPU while the GPUs\n" +
			"prove, within --memory-budget. grpc.health.v1 answers NOT_SERVING until the\n" +
			"GPUs' kernels are compiled or loaded.\n" +
			"Spans go to the OTLP endpoint of OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT when set,\n" +
			"else to --trace-file.\n" + shutdownHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: defaultListen, Usage: "gRPC address (host:port)"},
			&cli.StringFlag{Name: "metrics-listen", Value: defaultMetricsListen, Usage: "Prometheus /metrics address; empty: none"},
			&cli.StringFlag{Name: "backend", Value: "auto", Usage: "cpu|cuda|auto (auto: cuda when a GPU is usable, else cpu)"},
			&cli.StringFlag{Name: "release", Value: string(buffer.ReleaseAsync), Usage: "how large buffers are freed: sync|async|pool"},
			&cli.IntFlag{Name: "cpu-workers", Value: -1, Usage: "CPU workers (default: 1 without a GPU, 0 beside GPUs)"},
			&cli.IntFlag{Name: "queue-size", Value: engine.DefaultQueueSize, Usage: "queued jobs before RESOURCE_EXHAUSTED"},
			&cli.IntFlag{Name: "synthesis-workers", Value: -1, Usage: "proofs synthesized at once on the CPU while the devices prove (default beside GPUs: tuned per circuit and size from the measured synthesis and device times, up to one per core, within the memory budget; 0 without a GPU); 0: the serial engine, each worker proves its jobs whole"},
			&cli.StringFlag{Name: "memory-budget", Usage: "host memory the proofs in flight may hold: bytes, with KiB/MiB/GiB/TiB, or a share of physical memory (70%); 0: none (default: 70% of physical memory)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "TLS certificate (PEM); with --tls-key"},
			&cli.StringFlag{Name: "tls-key", Usage: "TLS private key (PEM)"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"CUZK_TOKEN"}, Usage: "bearer token callers must send"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "how long running proofs may finish after SIGTERM"},
			&cli.IntFlag{Name: "max-message-bytes", Value: server.DefaultMaxMessageBytes, Usage: "largest request (witness) accepted"},
			&cli.StringFlag{Name: "trace-file", Value: "./" + otelcuzk.DefaultTraceFile, Usage: "OTLP JSON lines trace file (used when no OTLP endpoint is set)"},
			&cli.StringFlag{Name: "cache-dir", Usage: "proving key cache (default $CUZK_CACHE_DIR or <user cache>/otelcuzk/keys)"},
			&cli.StringFlag{Name: "state-dir", EnvVars: []string{"CUZK_STATE_DIR"}, Value: defaultStateDir(), Usage: "the job journal (" + journal.FileName + ", bbolt): finished jobs and request ids outlive a restart, jobs that were running answer FAILED 'interrupted by a restart' and are proved again when resubmitted; one daemon per directory; 'none': jobs in memory only (default $XDG_STATE_HOME/otelcuzk, else ~/.local/state/otelcuzk)"},
			&cli.DurationFlag{Name: "result-ttl", Value: engine.DefaultResultTTL, Usage: "how long a finished job (its proof, its request id) is kept, in memory and in the journal"},
			&cli.IntFlag{Name: "max-results", Value: engine.DefaultMaxResults, Usage: "finished jobs kept at most, the oldest dropped first (the journal also holds at most 64 MiB of them)"},
			&cli.StringSliceFlag{Name: "circuit-file", Usage: "register a circuit from files, NAME:R1CS:PK[:VK] (gnark WriteTo of the BLS12-381 constraint system and keys); repeatable"},
		},
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			errOut := c.App.ErrWriter
			if errOut == nil {
				errOut = os.Stderr
			}
			cfg := serveConfig{
				listen: c.String("listen"), metricsListen: c.String("metrics-listen"),
				backend: c.String("backend"), release: c.String("release"),
				cpuWorkers: c.Int("cpu-workers"), queueSize: c.Int("queue-size"),
				synthesisWorkers: c.Int("synthesis-workers"), memoryBudget: c.String("memory-budget"),
				tlsCert: c.String("tls-cert"), tlsKey: c.String("tls-key"), token: c.String("token"),
				shutdownTimeout: c.Duration("shutdown-timeout"), maxMessage: c.Int("max-message-bytes"),
				traceFile: c.String("trace-file"), cacheDir: c.String("cache-dir"),
				log: errOut, gpuFactory: "cuda", circuitFiles: c.StringSlice("circuit-file"),
				stateDir: c.String("state-dir"), resultTTL: c.Duration("result-ttl"), maxResults: c.Int("max-results"),
			}
			if cfg.stateDir == "none" {
				cfg.stateDir = ""
			}
			// After the first signal, a second one kills the process the
			// default way instead of waiting for the shutdown.
			go func() { <-ctx.Done(); stop() }()
			return oneLine(serve(ctx, cfg))
		},
	})
}

type serveConfig struct {
	listen, metricsListen string
	backend, release      string
	cpuWorkers, queueSize int
	// synthesisWorkers is --synthesis-workers (-1: the default);
	// memoryBudget is --memory-budget ("": the default).
	synthesisWorkers    int
	memoryBudget        string
	tlsCert, tlsKey     string
	token               string
	shutdownTimeout     time.Duration
	maxMessage          int
	traceFile, cacheDir string
	log                 io.Writer
	// ready, when set, is called with the bound addresses once serving.
	ready func(grpcAddr, metricsAddr string)
	// gpuFactory is the backend registered by prover/gpu ("cuda"); gpus
	// lists the devices (default cudaspans.Devices). Tests replace both.
	gpuFactory string
	gpus       func() ([]cudaspans.DeviceInfo, error)
	// circuitFiles are NAME:R1CS:PK[:VK] registrations (--circuit-file).
	circuitFiles []string
	// stateDir holds the job journal ("": none); resultTTL and maxResults
	// bound the finished jobs kept (0: the engine's defaults).
	stateDir   string
	resultTTL  time.Duration
	maxResults int
	// telemetry are extra otelcuzk options (tests: a span processor that
	// counts what ended).
	telemetry []otelcuzk.Option
}

// serve runs the daemon until ctx is done, then shuts it down: the gRPC
// server and the engine stop accepting, running proofs get
// shutdownTimeout to finish and are then cancelled, async buffer releases
// end, spans are flushed. A shutdown that had to cancel proofs is logged,
// not an error: the daemon did what SIGTERM asks.
func serve(ctx context.Context, cfg serveConfig) (err error) {
	logger.Disable()
	if cfg.gpuFactory == "" {
		cfg.gpuFactory = "cuda"
	}
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		return errors.New("serve: --tls-cert and --tls-key go together")
	}
	mode, err := buffer.ParseReleaseMode(cfg.release)
	if err != nil {
		return err
	}
	if strings.TrimSpace(cfg.listen) == "" {
		// net.Listen would take "" as every interface on a random port.
		return fmt.Errorf("serve: --listen is empty: want host:port (default %s)", defaultListen)
	}
	if cfg.queueSize < 1 {
		return fmt.Errorf("serve: --queue-size %d: want at least 1", cfg.queueSize)
	}
	if cfg.cpuWorkers < -1 {
		return fmt.Errorf("serve: --cpu-workers %d: want 0 or more (-1: the default)", cfg.cpuWorkers)
	}
	if cfg.synthesisWorkers < -1 {
		return fmt.Errorf("serve: --synthesis-workers %d: want 0 or more (-1: the default)", cfg.synthesisWorkers)
	}
	budget, err := parseMemoryBudget(cfg.memoryBudget)
	if err != nil {
		return fmt.Errorf("serve: --memory-budget: %w", err)
	}
	if cfg.shutdownTimeout < 0 {
		return fmt.Errorf("serve: --shutdown-timeout %v: want 0 or more", cfg.shutdownTimeout)
	}
	if cfg.maxMessage < 1 {
		return fmt.Errorf("serve: --max-message-bytes %d: want at least 1", cfg.maxMessage)
	}
	dev, err := deviceSettings()
	if err != nil {
		return err
	}
	if err := registerCircuitFiles(cfg.circuitFiles); err != nil {
		return err
	}
	keep, closeJournal, err := openJournal(cfg)
	if err != nil {
		return err
	}
	defer closeJournal()
	// No reachability probe: under systemd the trace backend may come up
	// after the daemon; spans dropped meanwhile are counted and warned of.
	var summary string // printed last, after the span flush
	defer func() {
		if summary != "" {
			fmt.Fprintln(cfg.log, summary)
		}
	}()
	topts := append(deviceOptions(cfg.backend),
		otelcuzk.WithTraceFile(cfg.traceFile), otelcuzk.WithLogWriter(cfg.log),
		// A caller that does not sample still gets its proof recorded, as
		// a new trace linked to the caller's span (unless a sampler is set).
		otelcuzk.WithUnsampledCallerAsLink())
	shutdownTel, err := otelcuzk.Setup(ctx, append(topts, cfg.telemetry...)...)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	defer func() {
		if terr := shutdownTel(context.Background()); terr != nil {
			fmt.Fprintf(cfg.log, "cuzk serve: flushing spans: %v\n", oneLine(terr))
		}
	}()

	workers, pipes, devices, err := newWorkers(ctx, cfg, mode, dev)
	defer func() {
		for _, p := range pipes {
			// The pipeline's Releaser is this daemon's (newWorkers): closed after it.
			if cerr := errors.Join(p.Close(context.Background()), p.Releaser().Close(context.Background())); cerr != nil {
				fmt.Fprintf(cfg.log, "cuzk serve: closing pipeline: %v\n", cerr)
			}
		}
	}()
	if err != nil {
		return err
	}

	mp, metricsHandler, err := server.NewPrometheus()
	if err != nil {
		return err
	}
	defer mp.Shutdown(context.Background())
	var eng *engine.Engine
	devs := func() []server.Device { return deviceMemory(devices, pipes) }
	metrics, err := server.NewMetrics(mp, func() engine.Status { return eng.Status() }, devs)
	if err != nil {
		return err
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
	stages := stageOptions(cfg, pipes, devices, budget)
	// After --shutdown-timeout the running jobs are cancelled; a step that
	// cannot stop (a key setup) gets one more second, not the engine's
	// default grace, so SIGTERM ends the daemon near its deadline.
	eopts := append(append([]engine.Option(nil), stages.opts...), keep...)
	eng, err = engine.New(workers, append(eopts, engine.WithQueueSize(cfg.queueSize), engine.WithFinishHook(metrics.JobFinished),
		engine.WithValidator(validate), engine.WithCancelGrace(cancelGrace))...)
	if err != nil {
		return err
	}
	var loaded server.CircuitManagers
	for _, p := range pipes {
		loaded = append(loaded, p)
	}
	opts := []server.Option{
		server.WithCircuitManager(loaded), server.WithDevices(devs), server.WithVersion(version()),
		server.WithBearerToken(cfg.token), server.WithMaxMessageBytes(cfg.maxMessage), server.WithMetricsHandler(metricsHandler),
	}
	if cfg.tlsCert != "" {
		opts = append(opts, server.WithTLS(cfg.tlsCert, cfg.tlsKey))
	}
	srv, err := server.New(eng, opts...)
	if err != nil {
		eng.Shutdown(context.Background())
		return err
	}

	lis, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		eng.Shutdown(context.Background())
		return fmt.Errorf("serve: listen %s: %w", cfg.listen, err)
	}
	if cfg.tlsCert == "" && cfg.token == "" && !isLoopback(lis.Addr()) {
		fmt.Fprintf(cfg.log, "cuzk serve: warning: %s is reachable from other hosts without TLS or a token\n", lis.Addr())
	}
	var metricsAddr string
	var httpSrv *http.Server
	if cfg.metricsListen != "" {
		mlis, err := net.Listen("tcp", cfg.metricsListen)
		if err != nil {
			lis.Close()
			eng.Shutdown(context.Background())
			return fmt.Errorf("serve: metrics listen %s: %w", cfg.metricsListen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler)
		httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go httpSrv.Serve(mlis)
		metricsAddr = mlis.Addr().String()
	}
	stages.warmup(ctx, srv, cfg.log) // NOT_SERVING before the first health check can come
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	names := eng.Workers()
	fmt.Fprintf(cfg.log, "cuzk serve: listening on %s (metrics %s), workers %s, queue %d, %s\n",
		lis.Addr(), orNone(metricsAddr), strings.Join(names, ","), cfg.queueSize, stages.describe())
	if cfg.ready != nil {
		cfg.ready(lis.Addr().String(), metricsAddr)
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		eng.Shutdown(context.Background())
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(cfg.log, "cuzk serve: shutting down (running proofs may finish for %v)\n", cfg.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(cfg.log, "cuzk serve: %v\n", err)
	}
	if httpSrv != nil {
		hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
		httpSrv.Shutdown(hctx)
		hcancel()
	}
	summary = shutdownSummary(eng.Status())
	return nil
}

// newWorkers opens the pipelines and makes the engine's workers: one per
// GPU, each with its own Pipeline bound to its device, and cfg.cpuWorkers
// on the CPU sharing one Pipeline (it is safe for concurrent Runs, so each
// circuit's keys are held once).
func newWorkers(ctx context.Context, cfg serveConfig, mode buffer.ReleaseMode, dev prover.DeviceSettings) ([]engine.Worker, []*prover.Pipeline, []server.Device, error) {
	var (
		workers []engine.Worker
		pipes   []*prover.Pipeline
		devices []server.Device
	)
	open := func(backend string) (*prover.Pipeline, error) {
		rel, err := buffer.NewReleaser(mode)
		if err != nil {
			return nil, err
		}
		p, err := prover.NewPipeline(ctx, backend, prover.WithReleaser(rel), prover.WithDeviceSettings(dev), prover.WithKeyCacheDir(cfg.cacheDir), prover.WithNotice(cfg.log))
		if err != nil {
			rel.Close(context.Background())
			return nil, err
		}
		pipes = append(pipes, p)
		return p, nil
	}
	switch cfg.backend {
	case "cpu":
	case "cuda", "auto", "":
		gpus, err := gpuDevices(cfg)
		if err != nil {
			if cfg.backend == "cuda" {
				return nil, pipes, nil, err
			}
			fmt.Fprintf(cfg.log, "backend auto: %v; using cpu\n", err)
		}
		for _, d := range gpus {
			name, err := deviceBackend(cfg.gpuFactory, d.Ordinal)
			if err != nil {
				return nil, pipes, nil, err
			}
			p, err := open(name)
			if err != nil {
				return nil, pipes, nil, fmt.Errorf("GPU %d (%s): %w", d.Ordinal, d.Name, err)
			}
			workers = append(workers, engine.Worker{Name: fmt.Sprintf("cuda:%d", d.Ordinal), Runner: p,
				Attributes: []attribute.KeyValue{otelcuzk.KeyCUDADeviceOrdinal.Int(d.Ordinal)}})
			devices = append(devices, server.Device{Ordinal: d.Ordinal, Name: d.Name, Backend: p.Backend(), MemoryTotal: d.TotalMemory})
		}
	default:
		return nil, nil, nil, fmt.Errorf("%w: %q", prover.ErrUnknownBackend, cfg.backend)
	}
	cpuWorkers := cfg.cpuWorkers
	if cpuWorkers < 0 {
		cpuWorkers = 0
		if len(workers) == 0 {
			cpuWorkers = 1
		}
	}
	if cpuWorkers > 0 {
		p, err := open("cpu")
		if err != nil {
			return nil, pipes, nil, err
		}
		for i := range cpuWorkers {
			workers = append(workers, engine.Worker{Name: fmt.Sprintf("cpu:%d", i), Runner: p})
		}
		devices = append(devices, server.Device{Ordinal: -1, Name: "host", Backend: "cpu"})
	}
	if len(workers) == 0 {
		return nil, pipes, nil, errors.New("serve: no workers (no GPU and --cpu-workers 0)")
	}
	return workers, pipes, devices, nil
}

// registerCircuitFiles registers each NAME:R1CS:PK[:VK] in the circuit
// registry (prover.CircuitFile.Register), where the server and every
// Pipeline find it. A name registered before in this process with the
// same files (a second serve in one test binary) is accepted again.
func registerCircuitFiles(specs []string) error {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	for _, spec := range specs {
		f, err := prover.ParseCircuitFile(spec)
		if err != nil {
			return fmt.Errorf("--circuit-file %w", err)
		}
		if err := f.Register(); err != nil {
			if !strings.Contains(err.Error(), "already registered") || registeredSpecs[f.Name] != spec {
				return fmt.Errorf("--circuit-file: %w", err)
			}
		}
		registeredSpecs[f.Name] = spec
	}
	return nil
}

var (
	registeredMu    sync.Mutex
	registeredSpecs = map[string]string{}
)

// gpuDevices lists the GPUs when the GPU backend is built in (its factory
// registered under cfg.gpuFactory, by importing prover/gpu) and the driver
// finds devices; else an error wrapping prover.ErrBackendUnavailable.
func gpuDevices(cfg serveConfig) ([]cudaspans.DeviceInfo, error) {
	if _, ok := prover.LookupBackend(cfg.gpuFactory); !ok {
		return nil, fmt.Errorf("%w: %s backend not built into this binary (it registers from prover/gpu)", prover.ErrBackendUnavailable, cfg.gpuFactory)
	}
	list := cfg.gpus
	if list == nil {
		list = func() ([]cudaspans.DeviceInfo, error) { return cudaspans.Devices() }
	}
	d, err := list()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", prover.ErrBackendUnavailable, err)
	}
	return d, nil
}

var deviceBackendsMu sync.Mutex

// deviceBackend registers (once) and returns the name of a backend that
// opens the factory registered as factory on GPU ordinal: the Pipeline
// opens its backend by name without a device, so each GPU gets a name of
// its own ("cuda:1") whose factory sets BackendOptions.DeviceOrdinal.
func deviceBackend(factory string, ordinal int) (string, error) {
	deviceBackendsMu.Lock()
	defer deviceBackendsMu.Unlock()
	name := fmt.Sprintf("%s:%d", factory, ordinal)
	if _, ok := prover.LookupBackend(name); ok {
		return name, nil
	}
	f, ok := prover.LookupBackend(factory)
	if !ok {
		return "", fmt.Errorf("%w: %s backend not built into this binary", prover.ErrBackendUnavailable, factory)
	}
	prover.RegisterBackend(name, func(ctx context.Context, o prover.BackendOptions) (prover.Backend, error) {
		o.DeviceOrdinal = ordinal
		return f(ctx, o)
	})
	return name, nil
}

// deviceMemory fills MemoryUsed and MemoryTotal of the GPUs from their
// pipelines (cuMemGetInfo); GPU i is served by pipes[i] (GPU
// pipelines are opened first, in device order).
func deviceMemory(devices []server.Device, pipes []*prover.Pipeline) []server.Device {
	out := append([]server.Device(nil), devices...)
	for i := range out {
		if out[i].Ordinal < 0 || i >= len(pipes) || pipes[i].Backend() != "cuda" {
			continue
		}
		if free, total, err := pipes[i].MemInfo(); err == nil {
			out[i].MemoryTotal, out[i].MemoryUsed = total, total-free
		}
	}
	return out
}

func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// version is the module version of the binary, or "dev".
func version() string { return otelcuzk.Version() }

// defaultStateDir is --state-dir's default: $XDG_STATE_HOME/otelcuzk, else
// ~/.local/state/otelcuzk; "none" without a home directory.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "otelcuzk")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "otelcuzk")
	}
	return "none"
}

// openJournal opens the job journal of cfg.stateDir (none when empty) and
// returns the engine options that keep finished jobs (--result-ttl,
// --max-results, the journal) and the function that closes it. A journal
// another daemon holds, or a corrupt one, is a one-line error naming the
// file.
func openJournal(cfg serveConfig) ([]engine.Option, func(), error) {
	if cfg.resultTTL < 0 {
		return nil, nil, fmt.Errorf("serve: --result-ttl %v: want 0 or more", cfg.resultTTL)
	}
	if cfg.maxResults < 0 {
		return nil, nil, fmt.Errorf("serve: --max-results %d: want at least 1", cfg.maxResults)
	}
	ttl, n := cfg.resultTTL, cfg.maxResults
	if ttl == 0 {
		ttl = engine.DefaultResultTTL
	}
	if n == 0 {
		n = engine.DefaultMaxResults
	}
	opts := []engine.Option{engine.WithResultTTL(ttl), engine.WithMaxResults(n)}
	if cfg.stateDir == "" {
		return opts, func() {}, nil
	}
	j, interrupted, err := journal.Open(cfg.stateDir, journal.WithTTL(ttl), journal.WithMaxEntries(n))
	if err != nil {
		return nil, nil, fmt.Errorf("serve: --state-dir: %w", err)
	}
	if len(interrupted) > 0 {
		fmt.Fprintf(cfg.log, "cuzk serve: %d jobs were interrupted by the last stop (%s): they answer FAILED until resubmitted\n", len(interrupted), j.Path())
	}
	return append(opts, engine.WithJournal(j)), func() {
		if err := j.Close(); err != nil {
			fmt.Fprintf(cfg.log, "cuzk serve: closing the journal: %v\n", err)
		}
	}, nil
}
