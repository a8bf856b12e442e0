package prover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/backend/groth16"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// preparingCPU is the CPU backend as a KeyPreparer: it records the key
// IDs it was asked to prepare and the key IDs its proofs carried, and
// fails its preparation when fail is set.
type preparingCPU struct {
	*cpu.Backend
	fail     error
	mu       sync.Mutex
	prepared []string
	proved   []string
}

func (c *preparingCPU) PrepareKey(_ context.Context, keyID string, pk groth16.ProvingKey) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pk == nil {
		return errors.New("nil key")
	}
	c.prepared = append(c.prepared, keyID)
	return c.fail
}

func (c *preparingCPU) ComputeH(ctx context.Context, keyID string, domain *fft.Domain, a, b, cc []fr.Element) error {
	c.mu.Lock()
	c.proved = append(c.proved, keyID)
	c.mu.Unlock()
	return c.Backend.ComputeH(ctx, keyID, domain, a, b, cc)
}

// issue 25 item 4: a Prover prepares a KeyPreparer backend's state for a
// circuit's keys when it loads them, once, under the key ID its proofs
// then carry; a failed preparation loses nothing: the circuit loads and
// proves all the same.
func TestPipelinePreparesTheKeysItLoadsOnce(t *testing.T) {
	for _, fail := range []error{nil, errors.New("no room on the device")} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			name := fmt.Sprintf("test-preparing-%d", time.Now().UnixNano())
			be := &preparingCPU{fail: fail}
			backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
				be.Backend = cpu.New(o.TracerProvider)
				return be, nil
			})
			p := newTestPipeline(t, name, buffer.ReleaseSync)
			if err := p.LoadCircuit(context.Background(), "mulchain", 512); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				res, err := p.Run(context.Background(), &Request{Circuit: "mulchain", Constraints: 512, Verify: true})
				if err != nil || !res.Verified {
					t.Fatalf("run %d: %v", i, err)
				}
			}
			be.mu.Lock()
			defer be.mu.Unlock()
			if len(be.prepared) != 1 || be.prepared[0] == "" {
				t.Fatalf("PrepareKey calls %q, want one with the key's ID", be.prepared)
			}
			for _, id := range be.proved {
				if id != be.prepared[0] {
					t.Errorf("a proof carried key ID %q, PrepareKey was given %q", id, be.prepared[0])
				}
			}
			if len(be.proved) != 2 {
				t.Errorf("%d proofs reached the backend, want 2", len(be.proved))
			}
		})
	}
}

// blockingPreparer is the CPU backend as a KeyPreparer whose PrepareKey
// waits until release is closed, saying on started that it began.
type blockingPreparer struct {
	*cpu.Backend
	started, release chan struct{}
}

func (c *blockingPreparer) PrepareKey(ctx context.Context, _ string, _ groth16.ProvingKey) error {
	close(c.started)
	<-c.release
	return nil
}

// issue 26 item 1: with the keys in the key cache, a circuit's first
// synthesis starts as soon as its constraint system is there: the keys'
// read and the backend's preparation (keys.preload on a GPU) run beside
// it, and the prove waits for them. Here the preparation is held until the
// synthesis has returned; the prove then waits for it and the proof
// verifies.
func TestFirstSynthesisRunsBesideTheKeysLoad(t *testing.T) {
	dir := t.TempDir()
	req := &Request{Circuit: "mulchain", Constraints: 512, Verify: true}
	// The keys into the cache first (a setup), by another pipeline.
	maker := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithKeyCacheDir(dir))
	if err := maker.LoadCircuit(context.Background(), req.Circuit, req.Constraints); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("test-blocking-%d", time.Now().UnixNano())
	be := &blockingPreparer{started: make(chan struct{}), release: make(chan struct{})}
	backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
		be.Backend = cpu.New(o.TracerProvider)
		return be, nil
	})
	p := newTestPipeline(t, name, buffer.ReleaseSync, WithKeyCacheDir(dir))
	type synthesized struct {
		s   Synthesized
		err error
	}
	done := make(chan synthesized, 1)
	go func() {
		s, err := p.Synthesize(context.Background(), req)
		done <- synthesized{s, err}
	}()
	var syn Synthesized
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		syn = r.s
	case <-time.After(time.Minute):
		close(be.release)
		t.Fatal("the synthesis waited for the keys' preparation")
	}
	select {
	case <-be.started:
	case <-time.After(time.Minute):
		t.Fatal("the keys were never handed to the backend")
	}
	proved := make(chan error, 1)
	go func() {
		res, err := syn.Prove(context.Background(), p)
		if err == nil && !res.Verified {
			err = errors.New("proof not verified")
		}
		proved <- err
	}()
	select {
	case err := <-proved:
		t.Fatalf("the prove did not wait for the keys' preparation (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(be.release)
	if err := <-proved; err != nil {
		t.Fatal(err)
	}
	if got := p.LoadedCircuits(); len(got) != 1 {
		t.Errorf("loaded circuits %q, want the one proved", got)
	}
}

// issue 26 item 1: a fresh process whose circuit and keys are both cached
// reads the keys while the circuit decodes: one keys.load (the read
// started from the cached circuit's stored hash), and a proof that
// verifies. A circuit whose keys are
// not cached yet reads nothing early and sets up as before.
func TestCachedKeysAreReadWhileTheCircuitDecodes(t *testing.T) {
	dir := t.TempDir()
	req := &Request{Circuit: "mulchain", Constraints: 600, Verify: true}
	tp, exp := spantest.NewMemory()
	first := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithKeyCacheDir(dir), WithTracerProvider(tp))
	if err := first.LoadCircuit(context.Background(), req.Circuit, req.Constraints); err != nil {
		t.Fatal(err)
	}
	setups := 0
	for _, s := range exp.GetSpans() {
		if s.Name == semconv.SpanKeysSetup {
			setups++
		}
	}
	if setups != 1 {
		t.Fatalf("first load: %d keys.setup spans, want 1 (nothing cached)", setups)
	}
	exp.Reset()
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithKeyCacheDir(dir), WithTracerProvider(tp))
	res, err := p.Run(context.Background(), req)
	if err != nil || !res.Verified {
		t.Fatalf("run: %v", err)
	}
	var loads, decodes []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case semconv.SpanKeyLoad:
			loads = append(loads, s)
		case semconv.SpanCircuitCacheDecode:
			decodes = append(decodes, s)
		case semconv.SpanKeysSetup:
			t.Errorf("a setup with the keys cached")
		}
	}
	if len(loads) != 1 || len(decodes) != 1 {
		t.Fatalf("%d keys.load and %d circuit.cache.decode spans, want one each", len(loads), len(decodes))
	}
	// One keys.load: the early read's, used (LoadHashed after it would
	// make a second). keycache's tests hold that its hash is known before
	// the decode begins.
	if v, _ := spantest.StubValue(loads[0], string(semconv.KeyKeyCacheHit)); v != "true" {
		t.Errorf("keys.load cache hit %q, want true", v)
	}
}
