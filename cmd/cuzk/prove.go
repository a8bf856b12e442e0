package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/consensys/gnark/logger"
	"github.com/urfave/cli/v2"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/internal/interrupt"
	"github.com/otelcuzk/otelcuzk/internal/progress"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// defaultConstraints is the size `cuzk prove` uses without --constraints:
// the merkle circuit at 2^15 constraints (one inclusion proof of depth 30
// plus filler) proves in under 2 s on a shared 2-core machine; the first
// run adds a one-time Groth16 setup of about 25 s, cached (bench/README.md).
const defaultConstraints = 1 << 15

// defaultProofFile is where `cuzk prove` writes the proof (gnark's
// compressed Groth16 proof encoding) without --proof.
const defaultProofFile = "proof.bin"

func init() {
	commands = append(commands, &cli.Command{
		Name:  "prove",
		Usage: "prove a built-in circuit locally and print the trace waterfall",
		Description: "Proves one circuit as one engine job, with every layer traced: spans go to\n" +
			"the OTLP endpoint of OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT when set, else to\n" +
			"--trace-file as OTLP JSON lines. The proof is gnark's compressed Groth16\n" +
			"proof (BLS12-381), written atomically to --proof. Ctrl-C (SIGINT) or SIGTERM\n" +
			"stops the proof, flushes its trace, writes no proof file and exits 130.",
		Flags: append(builtinCircuitFlags(),
			&cli.StringFlag{Name: "backend", Value: "auto", Usage: "cpu|cuda|auto (auto: cuda when a GPU is usable, else cpu)"},
			&cli.StringFlag{Name: "release", Value: string(buffer.ReleaseAsync), Usage: "how large buffers are freed: sync|async|pool"},
			&cli.StringFlag{Name: "trace-file", Value: "./" + otelcuzk.DefaultTraceFile, Usage: "OTLP JSON lines trace file (used when no OTLP endpoint is set, or when the export to one failed)"},
			&cli.StringFlag{Name: "proof", Value: "./" + defaultProofFile, Usage: "where to write the proof"},
			&cli.BoolFlag{Name: "verify", Value: true, Usage: "verify the proof with gnark's verifier (proof.verify span); --verify=false skips it"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the circuit's sample witness"},
			&cli.StringFlag{Name: "cache-dir", Usage: "proving key cache (default $CUZK_CACHE_DIR or <user cache>/otelcuzk/keys)"},
			&cli.BoolFlag{Name: "progress", Usage: "show the setup spinner even when stderr is not a terminal"},
			&cli.BoolFlag{Name: "plan", Usage: "print the memory plan of the request (host, device, key disk, synthesis, witness) and of its circuit at 2^20 to 2^27, whether it fits this host, and exit"},
			&cli.BoolFlag{Name: "compressed-keys", Usage: "read (and store) the keys with compressed points, as cuzk setup --compressed-keys wrote them; not with --ephemeral-keys (no key file)"},
			&cli.BoolFlag{Name: "ephemeral-keys", Usage: "make the keys in memory for this proof (on the GPU with --backend cuda or auto), verify, and discard them: no key file is read or written, and the compiled circuit is not stored (one already in the circuit cache is read)"},
		),
		OnUsageError: usageError,
		Action:       func(c *cli.Context) error { return oneLine(proveAction(c)) },
	})
}

func proveAction(c *cli.Context) (err error) {
	// Ctrl-C or SIGTERM ends the run through the normal error path, so the
	// trace is flushed and no proof file is written; a second signal quits
	// at once (interrupt.Context).
	ctx, stop := interrupt.Context(c.Context)
	defer stop()
	out, errOut := c.App.Writer, c.App.ErrWriter
	if errOut == nil {
		errOut = os.Stderr
	}
	// Ephemeral keys have no key file for --compressed-keys to apply to
	// (it chooses the file's encoding): the pair was taken silently.
	if c.Bool("ephemeral-keys") && c.Bool("compressed-keys") {
		return errors.New("--compressed-keys with --ephemeral-keys: ephemeral keys are never written to or read from a key file, so nothing is compressed; drop one of the two")
	}
	finished := make(chan struct{})
	defer close(finished) // before stop (deferred first) cancels ctx
	go announceInterrupt(ctx, finished, errOut)
	logger.Disable() // gnark's own log lines would interleave with ours
	if c.Bool("plan") {
		return printPlan(out, c)
	}

	// Everything that can be wrong with the input, before any allocation.
	dev, err := daemon.DeviceSettingsFromEnv()
	if err != nil {
		return err
	}
	ui, err := jaegerUI()
	if err != nil {
		return err
	}
	name, n := c.String("circuit"), c.Int("constraints")
	inst, err := buildCircuit(c)
	if err != nil {
		return err
	}
	mode, err := buffer.ParseReleaseMode(c.String("release"))
	if err != nil {
		// The flag, not "release mode \"x\": unknown release mode".
		return fmt.Errorf("--release %q: %w", c.String("release"), buffer.ErrUnknownReleaseMode)
	}
	proofPath := c.String("proof")
	if tf := c.String("trace-file"); samePath(proofPath, tf) {
		// The proof's rename would replace every trace the file holds.
		return fmt.Errorf("--proof %s is also the --trace-file: the proof would replace the traces; name two files", proofPath)
	}
	proofOut, err := newAtomicFile(proofPath)
	if err != nil {
		return fmt.Errorf("proof file %s: %w", proofPath, err)
	}

	traceFrom := traceFileEnd(c.String("trace-file")) // read back only what this run appends
	recorder := otelcuzk.NewRecorder()
	tel, err := otelcuzk.New(ctx, append(append(versionOption(), daemon.TraceDevices(c.String("backend"))...),
		otelcuzk.WithTraceFile(c.String("trace-file")),
		otelcuzk.WithSpanProcessor(recorder),
		otelcuzk.WithLogWriter(errOut),
	)...)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	defer func() {
		if tel != nil {
			tel.Shutdown(context.Background())
		}
	}()
	// After New, which refuses a misconfiguration (protocol, timeout, a
	// URL without scheme) as itself, before this dial could mask it.
	if err := probeOTLPEndpoint(ctx, tel, "to write the trace to "+c.String("trace-file")+" (--trace-file) instead"); err != nil {
		return err
	}
	// The other transport's port (gRPC to 4318, OTLP/HTTP to 4317) would
	// fail every export, the gRPC one only at its timeout: say so now.
	if err := tel.ProbeProtocol(ctx, time.Second); err != nil {
		return err
	}
	tp := tel.TracerProvider

	rel, err := buffer.NewReleaser(mode, buffer.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	// A missing key is made where the proof runs: on the GPU beside the
	// cuda backend (auto: when one is usable), by gnark beside cpu.
	keySetup, err := newSetupBackend(c.String("backend"), errOut)
	if err != nil {
		rel.Close(context.Background())
		return err
	}
	defer keySetup.Close()
	ephemeral := c.Bool("ephemeral-keys")
	var keyOpts []keycache.Option
	if ephemeral {
		keyOpts = append(keyOpts, keycache.WithEphemeralKeys())
	}
	if c.Bool("compressed-keys") {
		keyOpts = append(keyOpts, keycache.WithCompressedKeys())
	}
	pipe, err := prover.New(ctx, c.String("backend"),
		prover.WithKeySetup(keySetup.Setup, c.String("backend") != "cpu"),
		prover.WithKeyCacheOptions(keyOpts...),
		prover.WithReleaser(rel),
		prover.WithDeviceSettings(dev),
		prover.WithTracerProvider(tp),
		prover.WithKeyCacheDir(c.String("cache-dir")),
		prover.WithNotice(errOut),
		prover.WithProgress(c.Bool("progress")),
		prover.WithSeed(c.Int64("seed")),
	)
	if err != nil {
		rel.Close(context.Background())
		return backendHint(err)
	}
	if pipe.Backend() == "cpu" {
		keySetup.name = "cpu" // auto fell back: the pipeline said why
	}
	warmed := warmupInBackground(ctx, pipe, errOut, time.Second,
		warmupProgress{RateFile: kernelRateFile(c.String("cache-dir")), Force: c.Bool("progress")})
	req := &prover.Request{
		RequestID:   fmt.Sprintf("cli-%d", time.Now().UnixNano()),
		Circuit:     name,
		Constraints: n,
		Verify:      c.Bool("verify") || ephemeral, // keys nobody else will check
	}
	res, runErr := runJob(ctx, tp, pipe, pipe.Backend()+":0", req)
	if runErr == nil {
		<-warmed // its progress line before the waterfall (the proof waited for it)
	}
	// Async releases finish (and end their spans) before the flush.
	cctx, ccancel := context.Background(), context.CancelFunc(func() {})
	if ctx.Err() != nil {
		// Interrupted: the releases of a step left behind would come only
		// once it ends; the process exits and the system frees them.
		cctx, ccancel = context.WithTimeout(cctx, time.Second)
	}
	closeErr := errors.Join(pipe.Close(cctx), rel.Close(cctx))
	ccancel()
	if runErr != nil {
		if ctx.Err() != nil {
			// A step that cannot stop (a compile, a key setup) still holds
			// its spans open: end them, so the trace flushed on the way out
			// is whole and says it was interrupted.
			tel.EndOpenSpans(fmt.Errorf("interrupted by a signal: %w", context.Canceled))
			return cli.Exit("interrupted by a signal; no proof written", exitInterrupted) // 128+SIGINT, as submit
		}
		return runErr
	}
	if closeErr != nil {
		return closeErr
	}
	if err := proofOut.commit(res.Proof); err != nil {
		return fmt.Errorf("proof file %s: %w", proofPath, err)
	}

	protocol, target := tel.Destination()
	shutErr := tel.Shutdown(context.Background())
	tel = nil
	kept, keepErr := "", error(nil) // where a trace the export lost was written instead
	if shutErr != nil && protocol != "file" && len(recorder.Ended()) > 0 {
		kept = c.String("trace-file")
		if keepErr = keepLocally(kept, recorder.Ended()); keepErr != nil {
			kept = ""
		}
	}
	// A sampler may drop the trace (OTEL_TRACES_SAMPLER=always_off, a
	// ratio): then there is nothing to show, and that is no error.
	sampled := len(recorder.Ended()) > 0
	switch {
	case !sampled:
	case protocol == "file":
		err = printFileTrace(out, errOut, target, res.TraceID, traceFrom)
	default:
		err = printRecorded(out, recorder.Ended(), res.TraceID)
	}
	if err != nil {
		// The proof and its trace are written; only the display failed.
		fmt.Fprintf(errOut, "cuzk: the waterfall could not be shown (read the trace back: %v)\n", err)
	}
	fmt.Fprintf(out, "\ncircuit   %s, %d constraints: %s\n", name, n, inst.Shape)
	fmt.Fprintf(out, "backend   %s, release %s\n", res.Backend, mode)
	if req.Verify {
		verdict := "ACCEPTED"
		if !res.Verified {
			verdict = "REJECTED"
		}
		fmt.Fprintf(out, "verifier  %s (gnark groth16.Verify)\n", verdict)
	}
	if ephemeral {
		fmt.Fprintf(out, "keys      made in memory by the %s setup for this proof and discarded (no key file)\n", keySetup.used)
	}
	abs, _ := filepath.Abs(proofPath)
	fmt.Fprintf(out, "proof     %s (%d bytes)\n", abs, len(res.Proof))
	switch {
	case !sampled:
		fmt.Fprintf(out, "trace     not sampled (OTEL_TRACES_SAMPLER), nothing recorded (trace id %s)\n", res.TraceID)
	case protocol == "file":
		abs, _ = filepath.Abs(target)
		fmt.Fprintf(out, "trace     %s (trace id %s)\n", abs, res.TraceID)
	case shutErr != nil && kept != "":
		abs, _ = filepath.Abs(kept)
		fmt.Fprintf(out, "trace     NOT delivered over OTLP %s to %s (trace id %s): the export failed; written to %s instead (cuzk trace %s)\n",
			protocol, orEnv(target), res.TraceID, abs, kept)
	case shutErr != nil:
		fmt.Fprintf(out, "trace     NOT delivered over OTLP %s to %s (trace id %s): the export failed, and so did writing it to %s (%v)\n",
			protocol, orEnv(target), res.TraceID, c.String("trace-file"), keepErr)
	default:
		fmt.Fprintf(out, "trace     sent over OTLP %s to %s (trace id %s)\n", protocol, orEnv(target), res.TraceID)
		if link := jaegerTraceURL(ui, res.TraceID); link != "" {
			fmt.Fprintf(out, "jaeger    %s\n", link)
		}
	}
	if shutErr != nil {
		return fmt.Errorf("trace export: %w", shutErr)
	}
	return nil
}

// interruptNotice is what cuzk prove prints on stderr the moment a signal
// arrives: a CPU MSM or a key setup does not stop mid-way, and a user at
// the terminal must not wonder whether Ctrl-C was seen.
const interruptNotice = "cuzk: interrupted: stopping (a CPU MSM or key setup, which cannot stop mid-way, is abandoned after 1 s) and flushing the trace; Ctrl-C again quits at once"

// announceInterrupt prints interruptNotice to w when ctx ends before
// finished is closed (a signal, or the caller's context); a second
// Ctrl-C then quits at once (interrupt.Context).
func announceInterrupt(ctx context.Context, finished <-chan struct{}, w io.Writer) {
	select {
	case <-finished:
		return
	case <-ctx.Done():
	}
	select {
	case <-finished: // ctx ended because the command returned
		return
	default:
	}
	progress.Println(w, interruptNotice)
}

// probeOTLPEndpoint refuses, before any work, an OTLP endpoint where nothing
// accepts a connection (tel.ProbeEndpoint within 2 s), in one line that
// says what to do: "OTLP endpoint URL unreachable: REASON: start a receiver
// there (Jaeger, an OpenTelemetry Collector) or unset VAR UNSET", VAR being
// the endpoint variables set and unset what the command does without them.
// nil when an endpoint answers or none is set.
func probeOTLPEndpoint(ctx context.Context, tel *otelcuzk.Telemetry, unset string) error {
	err := tel.ProbeEndpoint(ctx, 2*time.Second)
	if err == nil {
		return nil
	}
	var vars []string
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if os.Getenv(v) != "" {
			vars = append(vars, v)
		}
	}
	if len(vars) == 0 { // set by an option, not the environment
		return err
	}
	return fmt.Errorf("%w: start a receiver there (Jaeger, an OpenTelemetry Collector) or unset %s %s", err, strings.Join(vars, " and "), unset)
}

// keepLocally appends spans, a trace recorded in memory whose OTLP export
// failed, to the OTLP JSON lines trace file at path, so the trace is not
// lost: cuzk trace reads it as it reads a run without an endpoint.
func keepLocally(path string, spans []sdktrace.ReadOnlySpan) error {
	exp, err := otelcuzk.NewFileExporter(path)
	if err != nil {
		return err
	}
	err = exp.ExportSpans(context.Background(), spans)
	return errors.Join(err, exp.Shutdown(context.Background()))
}

// runJob runs one request through an engine with one worker, as the
// daemon does: engine.job (with engine.queue) is the root of the trace.
func runJob(ctx context.Context, tp trace.TracerProvider, r prover.Runner, worker string, req *prover.Request) (*prover.Result, error) {
	// One job and a user at the terminal: after an interrupt, wait for a
	// step that cannot stop (a key setup) no longer than a second.
	eng, err := engine.New([]engine.Worker{{Name: worker, Runner: r}}, engine.WithTracerProvider(tp),
		engine.WithCancelGrace(time.Second))
	if err != nil {
		return nil, err
	}
	info, err := eng.Prove(ctx, req)
	sctx := context.Background()
	if ctx.Err() != nil {
		// Interrupted: stop the job rather than wait for it; a runner that
		// cannot stop at once (a key setup, a CPU MSM) gets the engine's
		// cancel grace of a second, no more: the shutdown context is done
		// already, so Shutdown cancels at once and waits the grace only.
		if info.ID != "" {
			_ = eng.Cancel(info.ID)
		}
		var cancel context.CancelFunc
		sctx, cancel = context.WithCancel(sctx)
		cancel()
	}
	if serr := eng.Shutdown(sctx); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	return info.Result, nil
}

// printRecorded prints the waterfall of spans recorded in memory, for runs
// whose spans went to an OTLP endpoint.
func printRecorded(w io.Writer, recorded []sdktrace.ReadOnlySpan, traceID string) error {
	spans := make([]tracefile.Span, 0, len(recorded))
	for _, s := range recorded {
		ts := tracefile.Span{
			TraceID: s.SpanContext().TraceID().String(),
			SpanID:  s.SpanContext().SpanID().String(),
			Name:    s.Name(),
			Start:   s.StartTime(),
			End:     s.EndTime(),
			Attrs:   map[string]any{},
		}
		if s.Parent().IsValid() {
			ts.ParentID = s.Parent().SpanID().String()
		}
		for _, a := range s.Attributes() {
			ts.Attrs[string(a.Key)] = a.Value.AsInterface()
		}
		spans = append(spans, ts)
	}
	return tracefile.Waterfall(w, spans, tracefile.WaterfallOptions{TraceID: traceID})
}
