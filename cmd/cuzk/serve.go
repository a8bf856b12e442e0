package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/internal/interrupt"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/journal"
	"github.com/otelcuzk/otelcuzk/prover/server"
	"github.com/otelcuzk/otelcuzk/prover/upstream"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "serve",
		Usage: "run the gRPC proving daemon (cuzk.v1.ProvingEngine)",
		Description: "Serves cuzk.v1.ProvingEngine on --listen and Prometheus metrics on\n" +
			"--metrics-listen (/metrics). One worker per GPU plus --cpu-workers on the CPU;\n" +
			"--synthesis-workers proofs are synthesized on the CPU while the GPUs (or the CPU\n" +
			"workers) prove, within --memory-budget. grpc.health.v1 answers NOT_SERVING until the\n" +
			"GPUs' kernels are compiled or loaded.\n" +
			"Spans go to the OTLP endpoint of OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT when set,\n" +
			"else to --trace-file.\n" + shutdownHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: daemon.DefaultListen, Usage: "gRPC address: host:port, or a unix socket unix:///path as cuzk's daemon takes"},
			&cli.StringFlag{Name: "metrics-listen", Value: daemon.DefaultMetricsListen, Usage: "Prometheus /metrics address; empty: none"},
			&cli.StringFlag{Name: "backend", Value: "auto", Usage: "cpu|cuda|auto (auto: cuda when a GPU is usable, else cpu)"},
			&cli.StringFlag{Name: "release", Value: daemon.DefaultConfig().Release, Usage: "how a proof's large host buffers are freed: sync|async|pool (pool: kept for the next proofs, which reuse them with no allocation and, on a GPU, no new registration with the driver; outside the memory budget, all pools together at most physical memory less the budget and at most 64 GiB; a quarter of memory with --memory-budget 0)"},
			&cli.IntFlag{Name: "cpu-workers", Value: -1, DefaultText: "1 without a GPU, 0 beside GPUs", Usage: "CPU workers"},
			&cli.IntFlag{Name: "queue-size", Value: engine.DefaultQueueSize, Usage: "proofs that may wait (queued, for the memory budget, or synthesized for a device) before a submit is refused RESOURCE_EXHAUSTED; those being synthesized or proved do not count"},
			&cli.IntFlag{Name: "synthesis-workers", Value: -1, DefaultText: "tuned per circuit and size from the measured synthesis and device times, up to half the cores, within the memory budget; without a GPU the CPU workers' proves are the devices", Usage: "proofs synthesized at once on the CPU while the devices prove; 0: the serial engine, each worker proves its jobs whole"},
			&cli.StringFlag{Name: "memory-budget", Usage: "host memory the proofs in flight may hold: bytes, with KiB/MiB/GiB/TiB (powers of 1024) or kB/MB/GB/TB (powers of 1000), or a share of physical memory (70%); 0: none (default: 70% of physical memory)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "TLS certificate (PEM); with --tls-key"},
			&cli.StringFlag{Name: "tls-key", Usage: "TLS private key (PEM)"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"CUZK_TOKEN"}, Usage: "bearer token callers must send"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "how long running proofs may finish after SIGTERM"},
			&cli.StringFlag{Name: "max-message-bytes", Value: fmt.Sprintf("%dMiB", server.DefaultMaxMessageBytes>>20), Usage: "largest request (witness, vanilla proof) or reply accepted: bytes, in digits or with KiB/MiB/GiB (powers of 1024) or kB/MB/GB (powers of 1000), at least 64KiB (the status and metrics replies, a witness of 2048 wires); with --upstream and without this flag 128MiB, cuzk's own bound"},
			&cli.StringFlag{Name: "trace-file", Value: "./" + otelcuzk.DefaultTraceFile, Usage: "OTLP JSON lines trace file (used when no OTLP endpoint is set)"},
			&cli.StringFlag{Name: "cache-dir", Usage: "proving key cache (default $CUZK_CACHE_DIR or <user cache>/otelcuzk/keys)"},
			&cli.StringFlag{Name: "state-dir", EnvVars: []string{"CUZK_STATE_DIR"}, Value: daemon.DefaultStateDir(), Usage: "the job journal (" + journal.FileName + ", bbolt): finished jobs and request ids outlive a restart, jobs that were running answer FAILED 'interrupted by a restart' and are proved again when resubmitted; one daemon per directory; 'none': jobs in memory only", DefaultText: "$XDG_STATE_HOME/otelcuzk, else ~/.local/state/otelcuzk"},
			&cli.DurationFlag{Name: "result-ttl", Value: engine.DefaultResultTTL, Usage: "how long a finished job (its proof, its request id) is kept, in memory and in the journal; 0: the default"},
			&cli.IntFlag{Name: "max-results", Value: engine.DefaultMaxResults, Usage: "finished jobs kept at most, the oldest dropped first (the journal also holds at most 64 MiB of them); 0: the default"},
			&cli.StringFlag{Name: "upstream", Usage: "`ADDR` (host:port or unix:///path) of a cuzk daemon (Curio's) to forward the Filecoin proofs to (PoRep C2, SnapDeals, WindowPoSt, WinningPoSt), each a traced job with the upstream's reported times as spans; its metrics and status beside ours (default: those kinds are refused UNIMPLEMENTED)"},
			&cli.StringSliceFlag{Name: "circuit-file", Usage: "register a circuit from files, NAME:R1CS:PK[:VK] (gnark WriteTo of the BLS12-381 constraint system and keys); repeatable"},
		},
		Action: func(c *cli.Context) error {
			// The first SIGTERM or SIGINT shuts down; a second one quits at
			// once (interrupt.Context).
			ctx, stop := interrupt.Context(c.Context)
			defer stop()
			errOut := c.App.ErrWriter
			if errOut == nil {
				errOut = os.Stderr
			}
			maxMessage, err := messageBytes(c.String("max-message-bytes"), c.IsSet("max-message-bytes"), c.String("upstream"))
			if err != nil {
				return err
			}
			cfg := daemon.Config{
				Listen: c.String("listen"), MetricsListen: c.String("metrics-listen"),
				Backend: c.String("backend"), Release: c.String("release"),
				CPUWorkers: c.Int("cpu-workers"), QueueSize: c.Int("queue-size"),
				SynthesisWorkers: c.Int("synthesis-workers"), MemoryBudget: c.String("memory-budget"),
				TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"), Token: c.String("token"),
				ShutdownTimeout: c.Duration("shutdown-timeout"), MaxMessageBytes: maxMessage,
				TraceFile: c.String("trace-file"), CacheDir: c.String("cache-dir"),
				Log: errOut, GPUFactory: "cuda", CircuitFiles: c.StringSlice("circuit-file"),
				Telemetry: versionOption(), // service.version of this build
				Upstream:  c.String("upstream"),
				StateDir:  c.String("state-dir"), ResultTTL: c.Duration("result-ttl"), MaxResults: c.Int("max-results"),
			}
			if cfg.StateDir == "none" {
				cfg.StateDir = ""
			}
			return oneLine(serve(ctx, cfg))
		},
	})
}

// parseMessageBytes reads --max-message-bytes: bytes in digits
// (67108864) or with a unit as --memory-budget takes them
// (engine.ParseMemoryBudget: 64MiB, 1GB), not a share; 0 passes, for the
// daemon to refuse.
func parseMessageBytes(s string) (int, error) {
	b, err := engine.ParseMemoryBudget(s)
	if strings.TrimSpace(s) == "" || err != nil || b.Share > 0 || b.Bytes > math.MaxInt32 {
		return 0, fmt.Errorf("serve: --max-message-bytes %s: want bytes, in digits or with a unit, up to 2 GiB (64MiB, 1GB, 67108864)", s)
	}
	return int(b.Bytes), nil
}

// messageBytes is serve's bound on a message: --max-message-bytes when
// given (set), else with an upstream cuzk upstream.DefaultMaxMessageBytes
// (128 MiB, the bound cuzk's own server has), so that this daemon in front
// of cuzk accepts from Curio what cuzk would; else the flag's default.
func messageBytes(flag string, set bool, upstreamAddr string) (int, error) {
	if !set && upstreamAddr != "" {
		return upstream.DefaultMaxMessageBytes, nil
	}
	return parseMessageBytes(flag)
}

// serve runs the daemon of cfg (daemon.New, then Run) until ctx is done.
// Beside GPUs, missing keys are made on device 0 (prover/setup), unless
// cfg says who makes them.
func serve(ctx context.Context, cfg daemon.Config) error {
	if cfg.KeySetup == nil && cfg.Backend != "cpu" {
		notice := cfg.Log
		if notice == nil {
			notice = io.Discard
		}
		ks, err := newSetupBackend("auto", notice)
		if err != nil {
			return err
		}
		defer ks.Close()
		cfg.KeySetup = ks.Setup
	}
	d, err := daemon.New(ctx, cfg)
	if err != nil {
		return backendHint(err)
	}
	return d.Run(ctx)
}
