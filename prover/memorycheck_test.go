package prover

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// renamedBackend is a Backend under another name, so that the memory
// check takes the figures of that backend.
type renamedBackend struct {
	backend.Backend
	name string
}

func (b renamedBackend) Name() string { return b.name }

// porep at 2^26 on a host with 100 GiB available: the CUDA prove (88.4
// GiB) and the GPU setup (72.4 GiB) fit, gnark's CPU setup (118.0 GiB)
// does not. The check before the build must count the setup that will
// run, not gnark's whatever the setup.
func TestMemoryCheckCountsTheSetupThatWillRun(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithBuildRevision("test"))
	p.backend = renamedBackend{p.backend, "cuda"}
	const avail = 100 << 30
	ctx := context.Background()
	err := p.memoryFits(ctx, "porep", 1<<26, avail)
	if !errors.Is(err, circuits.ErrTooLargeForHost) || !strings.Contains(err.Error(), "118.0 GiB needed") ||
		!strings.Contains(err.Error(), "CPU setup") {
		t.Fatalf("cuda backend, gnark's setup: %v; want ErrTooLargeForHost naming 118.0 GiB and the CPU setup", err)
	}
	p.cfg.setupOnDevice = true
	if err := p.memoryFits(ctx, "porep", 1<<26, avail); err != nil {
		t.Fatalf("cuda backend, GPU setup: %v; want it admitted (88.6 GiB)", err)
	}
	// Less than the CUDA prove needs is refused whatever the setup.
	if err := p.memoryFits(ctx, "porep", 1<<26, 80<<30); !errors.Is(err, circuits.ErrTooLargeForHost) ||
		!strings.Contains(err.Error(), "88.6 GiB needed") {
		t.Fatalf("cuda backend, GPU setup, 80 GiB: %v; want the prove's 88.6 GiB refused", err)
	}
	// The CPU backend with gnark's setup keeps the CPU figures.
	p.backend, p.cfg.setupOnDevice = p.backend.(renamedBackend).Backend, false
	if err := p.memoryFits(ctx, "porep", 1<<26, avail); !errors.Is(err, circuits.ErrTooLargeForHost) {
		t.Fatalf("cpu backend: %v; want ErrTooLargeForHost", err)
	}
}

// A key and a circuit already in the cache cost no setup and no compile:
// once a proof has made and stored them, a host with memory for the prove
// but not for gnark's setup admits the same circuit and size; before, it
// was refused.
func TestMemoryCheckAdmitsACachedKeyWithoutTheSetupsFigure(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithBuildRevision("test"))
	const name, n = "mulchain", 1 << 10
	plan, err := circuits.PlanFor(name, n)
	if err != nil {
		t.Fatal(err)
	}
	cached, setup := plan.HostFor(true, circuits.KeysCached, false), plan.HostFor(true, circuits.KeysCPUSetup, true)
	if cached >= setup {
		t.Fatalf("plan of %s at %d: prove %d bytes, setup %d: want the setup larger", name, n, cached, setup)
	}
	avail := (cached + setup) / 2
	ctx := context.Background()
	if err := p.memoryFits(ctx, name, n, avail); !errors.Is(err, circuits.ErrTooLargeForHost) {
		t.Fatalf("no key yet: %v; want ErrTooLargeForHost", err)
	}
	if _, err := p.Run(ctx, &Request{Circuit: name, Constraints: n}); err != nil {
		t.Fatal(err)
	}
	if err := p.memoryFits(ctx, name, n, avail); err != nil {
		t.Fatalf("key cached: %v; want it admitted", err)
	}
	if err := p.memoryFits(ctx, name, n, cached-1); !errors.Is(err, circuits.ErrTooLargeForHost) {
		t.Fatalf("key cached, a byte under the prove: %v; want ErrTooLargeForHost", err)
	}
}
