package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// newWorkers opens the pipelines and makes the engine's workers: one per
// GPU, each with its own Prover bound to its device, and cfg.CPUWorkers
// on the CPU sharing one Prover (it is safe for concurrent Runs, so each
// circuit's keys are held once). Each pipeline has a Releaser of its own
// in mode; in pool mode each keeps at most its even share of what mem
// (physical memory, bytes) leaves beside budget (the resolved memory
// budget, bytes): poolLimit.
func newWorkers(ctx context.Context, cfg Config, mode buffer.ReleaseMode, dev backend.DeviceSettings, mem, budget uint64) ([]engine.Worker, []*prover.Prover, []server.Device, error) {
	var (
		workers []engine.Worker
		pipes   []*prover.Prover
		devices []server.Device
		gpus    []cudaspans.DeviceInfo
	)
	switch cfg.Backend {
	case "cpu":
	case "cuda", "auto", "":
		var err error
		if gpus, err = gpuDevices(cfg); err != nil {
			if cfg.Backend == "cuda" {
				return nil, pipes, nil, err
			}
			fmt.Fprintln(cfg.Log, backend.FallbackNotice(err))
		}
	default:
		return nil, nil, nil, fmt.Errorf("%w: %q", prover.ErrUnknownBackend, cfg.Backend)
	}
	cpuWorkers := cfg.CPUWorkers
	if cpuWorkers < 0 {
		cpuWorkers = 0
		if len(gpus) == 0 {
			cpuWorkers = 1
		}
	}
	nPipes := len(gpus)
	if cpuWorkers > 0 {
		nPipes++
	}
	relOpts := []buffer.Option{buffer.WithPoolLimit(poolLimit(mem, budget, nPipes))}
	cacheOpts := checkCacheDir(cfg)
	open := func(name string) (*prover.Prover, error) {
		rel, err := buffer.NewReleaser(mode, relOpts...)
		if err != nil {
			return nil, err
		}
		opts := append([]prover.ProverOption{prover.WithReleaser(rel), prover.WithDeviceSettings(dev), prover.WithKeyCacheDir(cfg.CacheDir), prover.WithNotice(cfg.Log)}, cacheOpts...)
		if name != "cpu" && cfg.KeySetup != nil {
			opts = append(opts, prover.WithKeySetup(cfg.KeySetup, true))
		}
		p, err := prover.New(ctx, name, opts...)
		if err != nil {
			rel.Close(context.Background())
			return nil, err
		}
		pipes = append(pipes, p)
		return p, nil
	}
	for _, d := range gpus {
		name, err := deviceBackend(cfg.GPUFactory, d.Ordinal)
		if err != nil {
			return nil, pipes, nil, err
		}
		p, err := open(name)
		if err != nil {
			return nil, pipes, nil, fmt.Errorf("GPU %d (%s): %w", d.Ordinal, d.Name, err)
		}
		workers = append(workers, engine.Worker{Name: fmt.Sprintf("cuda:%d", d.Ordinal), Runner: p,
			Attributes: []attribute.KeyValue{semconv.KeyCUDADeviceOrdinal.Int(d.Ordinal)}})
		devices = append(devices, server.Device{Ordinal: d.Ordinal, Name: d.Name, Backend: p.Backend(), MemoryTotal: d.TotalMemory})
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

// checkCacheDir says on cfg.Log, in one line at start, that the key cache
// directory (--cache-dir, else keycache.DefaultDir) cannot store files,
// and returns the options that keep each pipeline's cache from saying it
// again at its first job. Proving goes on without storing (what the
// directory lacks is made in memory), as it did when only the first job
// said so. A cache directory that cannot be named (no home) is left to
// the pipelines' own error.
func checkCacheDir(cfg Config) []prover.ProverOption {
	dir := cfg.CacheDir
	if dir == "" {
		var err error
		if dir, err = keycache.DefaultDir(); err != nil {
			return nil
		}
	}
	err := keycache.CheckDir(dir)
	if err == nil {
		return nil
	}
	fmt.Fprintf(cfg.Log, "cuzk serve: warning: %v: keys and compiled circuits not already in it are made in memory, for this daemon only and again after each restart (set --cache-dir or %s to a writable directory)\n",
		err, keycache.EnvCacheDir)
	return []prover.ProverOption{prover.WithKeyCacheOptions(keycache.WithoutUnwritableNotice())}
}

// registerCircuitFiles registers each NAME:R1CS:PK[:VK] in the circuit
// registry (prover.CircuitFile.Register), where the server and every
// Prover find it. A name registered before in this process with the
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
// registered under cfg.GPUFactory, by importing prover/gpu) and the driver
// finds devices; else an error wrapping backend.ErrUnavailable.
func gpuDevices(cfg Config) ([]cudaspans.DeviceInfo, error) {
	if _, ok := backend.Lookup(cfg.GPUFactory); !ok {
		return nil, backend.NotBuiltIn(cfg.GPUFactory)
	}
	list := cfg.GPUs
	if list == nil {
		list = func() ([]cudaspans.DeviceInfo, error) { return cudaspans.Devices() }
	}
	d, err := list()
	if err != nil {
		return nil, backend.Unavailable(cfg.GPUFactory, err)
	}
	return d, nil
}

var deviceBackendsMu sync.Mutex

// deviceBackend registers (once) and returns the name of a backend that
// opens the factory registered as factory on GPU ordinal: the Prover
// opens its backend by name without a device, so each GPU gets a name of
// its own ("cuda:1") whose factory sets BackendOptions.DeviceOrdinal.
func deviceBackend(factory string, ordinal int) (string, error) {
	deviceBackendsMu.Lock()
	defer deviceBackendsMu.Unlock()
	name := fmt.Sprintf("%s:%d", factory, ordinal)
	if _, ok := backend.Lookup(name); ok {
		return name, nil
	}
	f, ok := backend.Lookup(factory)
	if !ok {
		return "", backend.NotBuiltIn(factory)
	}
	backend.Register(name, func(ctx context.Context, o backend.Options) (backend.Backend, error) {
		o.DeviceOrdinal = ordinal
		return f(ctx, o)
	})
	return name, nil
}

// deviceMemory fills MemoryUsed and MemoryTotal of the GPUs from their
// pipelines (cuMemGetInfo); GPU i is served by pipes[i] (GPU
// pipelines are opened first, in device order).
func deviceMemory(devices []server.Device, pipes []*prover.Prover) []server.Device {
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
