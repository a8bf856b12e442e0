// Command curio-task plays Curio calling the proving daemon, to show one
// trace across both services.
//
// It sets up tracing the way Lotus (and so Curio) does, lib/tracing/setup.go:
// an OTLP over HTTP exporter behind a batch processor, a resource naming
// the service, and no globals: the tracer provider is returned, not
// installed, and no global propagator is set. Then it runs a harmonytask
// style Do inside otelcuzk.RunTask (a curio.task span with the task id,
// name, miner and sector) on that provider, does a bit of its own traced
// work, and asks the daemon for a proof through prover/client, given the
// same provider (client.WithTracerProvider; its propagator defaults to W3C
// trace context when the global one is unset). The client's otelgrpc
// handler puts the task's trace context into the call's metadata, so the
// daemon's engine.job and every proving span below it land in the task's
// trace. docs/curio.md shows these lines, and the other way: Curio's own
// gRPC client with otelgrpc's handler (e2e/cmd/lotustask).
//
// Lotus also installs the OpenCensus bridge
// (go.opentelemetry.io/otel/bridge/opencensus) so that the spans of its
// older OpenCensus code join the same trace; this program does too, and its
// own work before the proof (wdpost.prepare) is such an OpenCensus span.
//
// Run a daemon and a trace backend, then this program:
//
//	go run ./cmd/cuzk serve --backend cpu &
//	docker compose -f deploy/compose.yaml up -d   # collector: OTLP HTTP on :4318, Jaeger UI :16686
//	go run ./examples/curio-task --addr 127.0.0.1:9820 --otlp-endpoint localhost:4318
//
// and open the printed trace id in Jaeger.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/interrupt"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/client"
	octrace "go.opencensus.io/trace"
	"go.opentelemetry.io/otel/bridge/opencensus"
)

type config struct {
	addr         string // daemon, host:port
	otlpEndpoint string // OTLP HTTP receiver, host:port
	service      string
	circuit      string
	constraints  uint64
	task         otelcuzk.Task
	priority     string
	timeout      time.Duration
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "curio-task:", err)
		os.Exit(2)
	}
	// Ctrl-C cancels the proof (the task's spans are still flushed, up
	// to 10 s); a second one quits at once, exit status 130.
	ctx, stop := interrupt.Context(context.Background())
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "curio-task:", err)
		os.Exit(1)
	}
}

// parseConfig reads the command line (without the program name); usage
// goes to usage. It refuses arguments that are not flags, which flag
// would leave unread, and --constraints 0.
func parseConfig(args []string, usage io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("curio-task", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:9820", "cuzk daemon address")
	fs.StringVar(&cfg.otlpEndpoint, "otlp-endpoint", envOr("CURIO_OTEL_EXPORTER_ENDPOINT", "localhost:4318"),
		"OTLP over HTTP endpoint, host:port (Lotus reads LOTUS_OTEL_EXPORTER_ENDPOINT)")
	fs.StringVar(&cfg.service, "service", "curio", "service.name of this program's spans")
	fs.StringVar(&cfg.circuit, "circuit", "mulchain", "circuit to prove")
	fs.Uint64Var(&cfg.constraints, "constraints", 1<<10, "constraints of the circuit")
	fs.Int64Var(&cfg.task.ID, "task-id", 4711, "harmonytask id")
	fs.StringVar(&cfg.task.Name, "task-name", "WdPost", "harmonytask name")
	fs.StringVar(&cfg.task.MinerID, "miner", "f01234", "miner id")
	fs.Int64Var(&cfg.task.SectorNumber, "sector", 17, "sector number")
	fs.StringVar(&cfg.priority, "priority", "HIGH", "LOW|NORMAL|HIGH|CRITICAL")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "longest wait for the proof")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("takes no arguments, got %q (flags go before any argument: -name value)", fs.Args())
	}
	if cfg.constraints == 0 {
		return config{}, errors.New("-constraints 0: want 1 or more")
	}
	return cfg, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// setupTracing is Lotus's tracing setup reduced to its parts: OTLP over
// HTTP, batch processor, service resource, the OpenCensus bridge; it
// returns the provider and sets no global.
func setupTracing(ctx context.Context, endpoint, service string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("otlp http exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	// OpenCensus spans (octrace.StartSpan) become spans of tp.
	opencensus.InstallTraceBridge(opencensus.WithTracerProvider(tp))
	return tp, nil
}

// run proves once as a Curio task would, printing the trace id both sides
// recorded; it returns an error when the proof fails or the two ids differ.
func run(ctx context.Context, cfg config, out io.Writer) (err error) {
	prio, err := client.ParsePriority(cfg.priority)
	if err != nil {
		return err
	}
	tp, err := setupTracing(ctx, cfg.otlpEndpoint, cfg.service)
	if err != nil {
		return err
	}
	shutdown := tp.Shutdown
	defer func() {
		// Flush before exit, or the task's spans are lost.
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = errors.Join(err, shutdown(sctx))
	}()
	c, err := client.Dial(cfg.addr, client.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	defer c.Close()

	var (
		res     *client.Result
		taskTID string
	)
	_, err = otelcuzk.RunTask(ctx, cfg.task, func(ctx context.Context) (bool, error) {
		taskTID = trace.SpanContextFromContext(ctx).TraceID().String()
		// The task's own work before it needs a proof (reading the
		// challenge, in WdPost), traced with OpenCensus as Lotus's older
		// code is; the bridge makes it a child of the task span.
		_, prep := octrace.StartSpan(ctx, "wdpost.prepare")
		time.Sleep(2 * time.Millisecond)
		prep.End()

		pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
		var perr error
		res, perr = c.Prove(pctx, client.Request{
			RequestID:    fmt.Sprintf("%s-%d-%s-%d", cfg.task.Name, cfg.task.ID, cfg.task.MinerID, cfg.task.SectorNumber),
			Circuit:      cfg.circuit,
			Constraints:  cfg.constraints,
			Priority:     prio,
			MinerID:      cfg.task.MinerID,
			SectorNumber: cfg.task.SectorNumber,
			TaskID:       cfg.task.ID,
			TaskName:     cfg.task.Name,
			Verify:       true,
		})
		return perr == nil, perr
	}, otelcuzk.WithTaskTracerProvider(tp))
	if err != nil {
		return fmt.Errorf("task %s %d: %w", cfg.task.Name, cfg.task.ID, err)
	}
	fmt.Fprintf(out, "task trace   %s\n", taskTID)
	// human.Duration, as cuzk prints every duration (a Duration's %v
	// printed "prove 57.010552ms").
	fmt.Fprintf(out, "daemon trace %s (job %s on %s, prove %s, verified %v)\n",
		res.TraceID, res.JobID, res.Worker, human.Duration(res.Timings.Prove), res.Verified)
	// The task's spans must have reached the backend for the one trace to
	// be there to open: a batch that failed would only be logged.
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer fcancel()
	if err := tp.ForceFlush(fctx); err != nil {
		return fmt.Errorf("the task's spans did not reach the OTLP endpoint %s (--otlp-endpoint; is a collector listening?): %w", cfg.otlpEndpoint, err)
	}
	if res.TraceID != taskTID {
		return fmt.Errorf("the daemon traced the proof in %s, not in the task's trace %s: either request id %s named a proof an earlier run made "+
			"(a request id proves once; pass another --task-id), or the daemon does not read W3C trace context", res.TraceID, taskTID, res.RequestID)
	}
	fmt.Fprintln(out, "one trace across curio and cuzk")
	return nil
}
