package prover

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

var optionsRuns atomic.Int64

// New hands its backend what it was given, through one channel
// each: the Releaser (and so the release mode) of WithReleaser, the
// settings of WithDeviceSettings; without WithReleaser, a sync Releaser.
func TestNewPipelineHandsItsBackendTheReleaserAndDeviceSettings(t *testing.T) {
	// A name of its own per run: a backend registers once (-count=N).
	name := fmt.Sprintf("test-options-%d", optionsRuns.Add(1))
	var got []backend.Options
	backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
		got = append(got, o)
		return cpu.New(nil), nil
	})
	rel, err := buffer.NewReleaser(buffer.ReleaseAsync)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close(context.Background())
	dev := backend.DeviceSettings{HostCopy: "pageable", MSMG2: "cpu"}
	p := newTestPipeline(t, name, buffer.ReleaseSync, WithReleaser(rel), WithDeviceSettings(dev))
	if p.Releaser() != rel {
		t.Error("the Prover does not release through the WithReleaser Releaser")
	}
	plain := newTestPipeline(t, name, buffer.ReleaseSync, WithReleaser(nil))
	if len(got) != 2 {
		t.Fatalf("factory called %d times, want 2", len(got))
	}
	if got[0].Releaser != rel || got[0].Releaser.Mode() != buffer.ReleaseAsync || got[0].Device != dev {
		t.Errorf("backend options %+v, want the async Releaser and %+v", got[0], dev)
	}
	if got[1].Releaser == nil || got[1].Releaser != plain.Releaser() || got[1].Releaser.Mode() != buffer.ReleaseSync || got[1].Device != (backend.DeviceSettings{}) {
		t.Errorf("without WithReleaser: backend options %+v, want the pipeline's own sync Releaser and no settings", got[1])
	}
}

// keyIDCPU records the key ID passed to every ComputeH and MSMG1 call.
type keyIDCPU struct {
	*cpu.Backend
	mu   sync.Mutex
	seen []string
}

func (c *keyIDCPU) note(keyID string) {
	c.mu.Lock()
	c.seen = append(c.seen, keyID)
	c.mu.Unlock()
}

func (c *keyIDCPU) ComputeH(ctx context.Context, keyID string, d *fft.Domain, a, b, cc []fr.Element) error {
	c.note(keyID)
	return c.Backend.ComputeH(ctx, keyID, d, a, b, cc)
}

func (c *keyIDCPU) MSMG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error) {
	c.note(call.KeyID)
	return c.Backend.MSMG1(ctx, call, bases, scalars)
}

// Every backend call of a proof carries its WithKeyID (what the CUDA
// backend keys its kept device buffers by); a proof without one, none.
func TestTheKeyIDIsPassedToEveryBackendCallOfTheProof(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<8, 42)
	for _, key := range []string{"cs-hash", ""} {
		b := &keyIDCPU{Backend: cpu.New(nil)}
		opts := []groth16.ProveOption{groth16.WithBackend(b)}
		if key != "" {
			opts = append(opts, groth16.WithKeyID(key))
		}
		if _, err := groth16.Prove(context.Background(), f.CCS, f.PK, f.Witness, opts...); err != nil {
			t.Fatal(err)
		}
		if len(b.seen) < 5 { // compute_h and the four G1 MSMs
			t.Fatalf("key %q: %d backend calls seen", key, len(b.seen))
		}
		for _, got := range b.seen {
			if got != key {
				t.Errorf("a backend call was passed key ID %q, want %q", got, key)
			}
		}
	}
}
