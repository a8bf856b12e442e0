package daemon

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/api/endpoint"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// Default addresses of the daemon: loopback, so that a daemon started
// without TLS or a token is not reachable from other hosts.
const (
	DefaultListen        = "127.0.0.1:9820"
	DefaultMetricsListen = "127.0.0.1:9464" // the OTel Prometheus exporter's customary port (deploy/prometheus.yml)
)

// MinMaxMessageBytes is the smallest --max-message-bytes New accepts
// (64 KiB): the bound limits the replies too (GetStatus, GetMetrics), and
// a request with a witness (32 bytes a wire) of a 2,048-wire circuit fits;
// below it every call would be refused RESOURCE_EXHAUSTED.
const MinMaxMessageBytes = 64 << 10

// Config is what New assembles a daemon from: one field per option of
// `cuzk serve` (the flag named beside each). Start from DefaultConfig; a
// new option is one field here, read where it is used. Errors of New name
// the flag of a field that is out of range.
type Config struct {
	Listen        string // --listen: gRPC host:port
	MetricsListen string // --metrics-listen: Prometheus /metrics host:port; "": none
	Backend       string // --backend: cpu, cuda or auto ("": auto)
	Release       string // --release: sync, async or pool (buffer.ParseReleaseMode)
	// CPUWorkers is --cpu-workers: CPU workers; -1: 1 without a GPU, 0
	// beside GPUs.
	CPUWorkers int
	// QueueSize is --queue-size: proofs (partitions) that may wait,
	// queued, for the memory budget or synthesized for a device, before
	// a submit is refused RESOURCE_EXHAUSTED (engine.WithQueueSize); at
	// least 1.
	QueueSize int
	// SynthesisWorkers is --synthesis-workers: proofs synthesized at once
	// on the CPU while the devices prove (the CPU workers' proves without a
	// GPU); -1: tuned by engine.Tuner; 0: the serial engine.
	SynthesisWorkers int
	// MemoryBudget is --memory-budget, as engine.ParseMemoryBudget reads
	// it ("": engine.DefaultBudgetShare of physical memory).
	MemoryBudget    string
	TLSCert, TLSKey string        // --tls-cert, --tls-key: PEM files, both or neither
	Token           string        // --token: the bearer token callers must send; "": none
	ShutdownTimeout time.Duration // --shutdown-timeout: how long running proofs may finish
	MaxMessageBytes int           // --max-message-bytes: the largest request accepted, at least MinMaxMessageBytes
	TraceFile       string        // --trace-file: OTLP JSON lines, used without an OTLP endpoint
	CacheDir        string        // --cache-dir: the proving key cache ("": the default)
	// CircuitFiles are NAME:R1CS:PK[:VK] registrations (--circuit-file).
	CircuitFiles []string
	// StateDir holds the job journal (--state-dir; "": none, jobs in
	// memory only); ResultTTL (--result-ttl) and MaxResults
	// (--max-results) bound the finished jobs kept (0: the engine's
	// defaults).
	StateDir   string
	ResultTTL  time.Duration
	MaxResults int
	// Upstream is --upstream: the host:port of a cuzk daemon (Curio's)
	// the Filecoin proof kinds are forwarded to, each a traced job
	// (prover/upstream); "": they are refused UNIMPLEMENTED. Its jobs'
	// windows go to $CUZK_GPUTRACE_JOBS when set (cupti/jobs).
	Upstream string
	// Log receives the daemon's lines (start, warnings, shutdown summary);
	// nil: io.Discard.
	Log io.Writer
	// Ready, when set, is called with the bound addresses once serving
	// (metricsAddr "" without metrics).
	Ready func(grpcAddr, metricsAddr string)
	// GPUFactory is the backend registered by prover/gpu ("": "cuda");
	// GPUs lists the devices (nil: cudaspans.Devices). Tests replace both.
	GPUFactory string
	GPUs       func() ([]cudaspans.DeviceInfo, error)
	// Telemetry are extra otelcuzk options (tests: a span processor that
	// counts what ended).
	Telemetry []otelcuzk.Option
	// KeySetup, when set, makes the keys the GPU workers' key cache lacks
	// (cuzk serve: prover/setup on the GPU) and their memory check counts
	// its figure (prover.WithKeySetup); nil: gnark's groth16.Setup. The
	// CPU workers keep gnark's.
	KeySetup keycache.SetupFunc
}

// DefaultConfig returns the defaults of `cuzk serve`'s flags. The release
// mode is pool: a daemon proves one circuit size after another, and a
// pooled buffer is reused with no allocation, no page faults and, with the
// registered host copy, no registration on the device's path (merkle
// 2^22 on the H200, 16 jobs: 2.233 proofs/s with registered copies and
// pool against 2.058 with async and staged copies; per proof in gpuprove,
// registered: 338.3 ms pool, 348.4 ms async of which 24.5 ms
// cuda.host_register; bench/daemon.md, bench/gpuprove.md). The pools are
// bounded (poolLimit). `cuzk prove`, one proof a process, keeps async.
func DefaultConfig() Config {
	return Config{
		Listen: DefaultListen, MetricsListen: DefaultMetricsListen, Backend: "auto",
		Release: string(buffer.ReleasePool), CPUWorkers: -1, QueueSize: engine.DefaultQueueSize,
		SynthesisWorkers: -1, ShutdownTimeout: 30 * time.Second,
		MaxMessageBytes: server.DefaultMaxMessageBytes, TraceFile: "./" + otelcuzk.DefaultTraceFile,
		GPUFactory: "cuda",
	}
}

// check refuses a Config New cannot run, naming the flag; it returns the
// parsed release mode and memory budget.
func (cfg *Config) check() (buffer.ReleaseMode, engine.MemoryBudget, error) {
	if cfg.GPUFactory == "" {
		cfg.GPUFactory = "cuda"
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return "", engine.MemoryBudget{}, errors.New("serve: --tls-cert and --tls-key go together")
	}
	mode, err := buffer.ParseReleaseMode(cfg.Release)
	if err != nil {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --release %q: %w", cfg.Release, buffer.ErrUnknownReleaseMode)
	}
	if strings.TrimSpace(cfg.Listen) == "" {
		// net.Listen would take "" as every interface on a random port.
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --listen is empty: want host:port or unix:///path (default %s)", DefaultListen)
	}
	if err := endpoint.Check("--listen", cfg.Listen); err != nil {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: %w", err)
	}
	// Before any slow work (the GPU probe, a kernel compile, the key
	// loads): a port out of range failed only at the listen, after them.
	if _, unix := endpoint.SocketPath(cfg.Listen); !unix {
		if err := checkListen("--listen", cfg.Listen); err != nil {
			return "", engine.MemoryBudget{}, err
		}
	}
	if cfg.MetricsListen != "" {
		if err := checkListen("--metrics-listen", cfg.MetricsListen); err != nil {
			return "", engine.MemoryBudget{}, err
		}
	}
	if cfg.QueueSize < 1 {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --queue-size %d: want at least 1", cfg.QueueSize)
	}
	if cfg.CPUWorkers < -1 {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --cpu-workers %d: want 0 or more (-1: the default)", cfg.CPUWorkers)
	}
	if cfg.SynthesisWorkers < -1 {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --synthesis-workers %d: want 0 or more (-1: the default)", cfg.SynthesisWorkers)
	}
	budget, err := engine.ParseMemoryBudget(cfg.MemoryBudget)
	if err != nil {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --memory-budget: %w", err)
	}
	if cfg.Upstream != "" {
		if err := endpoint.Check("--upstream", cfg.Upstream); err != nil {
			return "", engine.MemoryBudget{}, fmt.Errorf("serve: %w (the cuzk daemon's address)", err)
		}
	}
	if cfg.ShutdownTimeout < 0 {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --shutdown-timeout %v: want 0 or more", cfg.ShutdownTimeout)
	}
	if cfg.MaxMessageBytes < MinMaxMessageBytes {
		return "", engine.MemoryBudget{}, fmt.Errorf("serve: --max-message-bytes %d: want at least %d (64KiB): every request and reply must fit", cfg.MaxMessageBytes, MinMaxMessageBytes)
	}
	return mode, budget, nil
}

// checkListen refuses a listen address net.Listen("tcp") would refuse for
// its form: not host:port, or a port that is neither a number from 0 to
// 65535 nor a service name of this host. Whether the host resolves and
// the port is free is for the listen itself.
func checkListen(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("serve: %s %q: want host:port (e.g. %s): %v", flag, addr, DefaultListen, addrError(err))
	}
	if n, err := strconv.ParseUint(port, 10, 64); err == nil {
		if n > 65535 {
			return fmt.Errorf("serve: %s %q: port %d out of range (want 0 to 65535)", flag, addr, n)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("serve: %s %q: port %q is neither a number from 0 to 65535 nor a service name", flag, addr, port)
	}
	return nil
}

// addrError is the reason of a net.AddrError without the address, which
// the message names already.
func addrError(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}
