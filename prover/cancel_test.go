package prover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/frontend"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// heldCPU is the CPU backend whose ComputeH, once held, says so on
// started and waits for release whatever its context says (a device step
// that cannot stop).
type heldCPU struct {
	*cpu.Backend
	hold     bool
	started  chan struct{}
	release  chan struct{}
	once     sync.Once
	released sync.Once
}

func (c *heldCPU) ComputeH(ctx context.Context, keyID string, domain *fft.Domain, a, b, cc []fr.Element) error {
	if c.hold {
		c.once.Do(func() { close(c.started) })
		<-c.release
	}
	return c.Backend.ComputeH(ctx, keyID, domain, a, b, cc)
}

func (c *heldCPU) letGo() { c.released.Do(func() { close(c.release) }) }

// newHeldPipeline is a pipeline over a heldCPU backend of its own name.
func newHeldPipeline(t *testing.T, opts ...ProverOption) (*Prover, *heldCPU) {
	t.Helper()
	name := fmt.Sprintf("test-held-%d", time.Now().UnixNano())
	be := &heldCPU{hold: true, started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(be.letGo)
	backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
		be.Backend = cpu.New(o.TracerProvider)
		return be, nil
	})
	return newTestPipeline(t, name, buffer.ReleaseAsync, opts...), be
}

// A job cancelled while its device prove runs (a step that cannot stop)
// ends when the prove returns: no pipeline.serialize, no proof.verify,
// its buffers released as usual (buffer.release spans, Freed closed); the
// pipeline's next proof is made and verified as ever.
func TestACancelDuringTheProveSkipsSerializeAndVerify(t *testing.T) {
	tp, exp := spantest.NewMemory()
	p, be := newHeldPipeline(t, WithTracerProvider(tp))
	req := &Request{Circuit: "mulchain", Constraints: 256, Verify: true}
	jobCtx, job := tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
	ctx, cancel := context.WithCancel(jobCtx)
	defer cancel()
	syn, err := p.Synthesize(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	proved := make(chan error, 1)
	go func() {
		_, err := syn.Prove(ctx, p)
		proved <- err
	}()
	<-be.started
	cancel()
	be.letGo()
	if err := <-proved; !errors.Is(err, context.Canceled) {
		t.Fatalf("prove cancelled while the device proved: %v, want context.Canceled", err)
	}
	select {
	case <-syn.Freed():
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled proof's buffers were never freed")
	}
	job.End()
	names := map[string]int{}
	for _, s := range exp.GetSpans() {
		names[s.Name]++
	}
	for _, n := range []string{semconv.SpanPipelineSerialize, semconv.SpanProofVerify} {
		if names[n] != 0 {
			t.Errorf("%d %s spans after the cancel, want none", names[n], n)
		}
	}
	for _, n := range []string{semconv.SpanPipelineProve, semconv.SpanBufferRelease} {
		if names[n] == 0 {
			t.Errorf("no %s span", n)
		}
	}

	exp.Reset()
	res, err := p.Run(context.Background(), req)
	if err != nil || !res.Verified || len(res.Proof) == 0 {
		t.Fatalf("the next proof: %v (verified %v)", err, res != nil && res.Verified)
	}
	if len(spantest.NamedStubs(exp.GetSpans(), semconv.SpanProofVerify)) != 1 {
		t.Error("the next proof was not verified under a proof.verify span")
	}
}

// slowPreparer is the CPU backend as a KeyPreparer whose preparation of a
// key (a keys.preload span, as the CUDA backend's) takes until release is
// closed: a key load that ends after the synthesis beside it.
type slowPreparer struct {
	*cpu.Backend
	tp       trace.TracerProvider
	started  chan struct{}
	release  chan struct{}
	once     sync.Once
	released sync.Once
}

func (c *slowPreparer) PrepareKey(ctx context.Context, _ string, _ gnarkgroth16.ProvingKey) error {
	_, span := c.tp.Tracer("test").Start(ctx, semconv.SpanKeysPreload)
	defer span.End()
	c.once.Do(func() { close(c.started) })
	<-c.release
	return nil
}

func (c *slowPreparer) letGo() { c.released.Do(func() { close(c.release) }) }

// newSlowKeysPipeline is a pipeline over a slowPreparer whose key cache
// dir already holds the keys of req (set up by another pipeline), so its
// first synthesis of req runs beside the keys' load.
func newSlowKeysPipeline(t *testing.T, req *Request, opts ...ProverOption) (*Prover, *slowPreparer) {
	t.Helper()
	dir := t.TempDir()
	maker := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithKeyCacheDir(dir))
	if err := maker.LoadCircuit(context.Background(), req.Circuit, req.Constraints); err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(opts)
	name := fmt.Sprintf("test-slowkeys-%d", time.Now().UnixNano())
	be := &slowPreparer{tp: cfg.tp, started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(be.letGo)
	backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
		be.Backend = cpu.New(o.TracerProvider)
		return be, nil
	})
	return newTestPipeline(t, name, buffer.ReleaseSync, append(opts, WithKeyCacheDir(dir))...), be
}

// unsatisfiedWitness is a mulchain witness that satisfies no size.
func unsatisfiedWitness(t *testing.T) []byte {
	t.Helper()
	w, err := frontend.NewWitness(&circuits.MulChain{X: 2, Out: 2}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// issue: a circuit's first synthesis that fails while the keys' load it
// started runs beside it returns once that load ended (not cancelling
// it: the circuit's other proofs wait for it), so the caller's span
// (engine.job) ends after its keys.load and keys.preload children; the
// load's keys serve the next proof.
func TestAFailedFirstSynthesisReturnsAfterTheKeysLoadItStarted(t *testing.T) {
	tp, exp := spantest.NewMemory()
	req := &Request{Circuit: "mulchain", Constraints: 512, Verify: true}
	p, be := newSlowKeysPipeline(t, req, WithTracerProvider(tp))
	bad := *req
	bad.Witness = unsatisfiedWitness(t)
	jobCtx, job := tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
	failed := make(chan error, 1)
	go func() {
		_, err := p.Synthesize(jobCtx, &bad)
		failed <- err
	}()
	<-be.started
	select {
	case err := <-failed:
		t.Fatalf("the synthesis returned (%v) while the keys it started loading were still being prepared", err)
	case <-time.After(200 * time.Millisecond):
	}
	be.letGo()
	if err := <-failed; !errors.Is(err, groth16.ErrUnsatisfied) {
		t.Fatalf("unsatisfied witness: %v, want ErrUnsatisfied", err)
	}
	job.End()
	spans := exp.GetSpans()
	if len(spantest.NamedStubs(spans, semconv.SpanKeysPreload)) != 1 || len(spantest.NamedStubs(spans, semconv.SpanKeyLoad)) == 0 {
		t.Fatalf("want the keys' load recorded (keys.load, keys.preload) in %d spans", len(spans))
	}
	spantest.ChildrenEndInTheirParents(t, spans)
	if res, err := p.Run(context.Background(), req); err != nil || !res.Verified {
		t.Fatalf("the next proof, with the keys loaded: %v", err)
	}
}

// onStart is a span processor that calls f when a span named name starts.
type onStart struct {
	name string
	f    func()
}

func (o onStart) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if s.Name() == o.name {
		o.f()
	}
}
func (onStart) OnEnd(sdktrace.ReadOnlySpan)      {}
func (onStart) Shutdown(context.Context) error   { return nil }
func (onStart) ForceFlush(context.Context) error { return nil }

// The same for a first synthesis whose caller gives up (its ctx cancelled
// as pipeline.synthesize starts, the keys still loading), and for a
// synthesized proof released unproved before its keys were loaded.
func TestAGivenUpFirstSynthesisReturnsAfterTheKeysLoadItStarted(t *testing.T) {
	for _, when := range []string{"cancelled", "released"} {
		t.Run(when, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			exp := tracetest.NewInMemoryExporter()
			var opts []sdktrace.TracerProviderOption
			if when == "cancelled" {
				opts = append(opts, sdktrace.WithSpanProcessor(onStart{semconv.SpanPipelineSynthesize, cancel}))
			}
			tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSyncer(exp))...)
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			req := &Request{Circuit: "mulchain", Constraints: 512}
			p, be := newSlowKeysPipeline(t, req, WithTracerProvider(tp))
			jobCtx, job := tp.Tracer("test").Start(ctx, semconv.SpanEngineJob)
			ended := make(chan error, 1)
			go func() {
				syn, err := p.Synthesize(jobCtx, req)
				if err == nil {
					err = syn.Release(jobCtx)
				}
				ended <- err
			}()
			<-be.started
			select {
			case err := <-ended:
				t.Fatalf("returned (%v) while the keys it started loading were still being prepared", err)
			case <-time.After(200 * time.Millisecond):
			}
			be.letGo()
			err := <-ended
			if when == "cancelled" && !errors.Is(err, context.Canceled) || when == "released" && err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			job.End()
			spantest.ChildrenEndInTheirParents(t, exp.GetSpans())
		})
	}
}

// A Prover's synthesis reports its own time (pipeline.synthesize, without
// the compile and the keys' load of a circuit's first use) and whether
// its solve was the circuit's first (the one that makes its plan).
func TestSynthesisTimingIsTheSynthesisOwnAndFlagsTheFirstSolve(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	req := &Request{Circuit: "mulchain", Constraints: 1 << 10}
	for i, first := range []bool{true, false} {
		t0 := time.Now()
		s, err := p.Synthesize(context.Background(), req)
		wall := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		tm := s.(SynthesisTimer).SynthesisTiming()
		own := s.(*synthesis).res.Timings
		if tm.FirstSolve != first || tm.Synthesis != own.Synthesis || tm.Synthesis <= 0 || tm.Synthesis+own.KeyLoad > wall {
			t.Errorf("synthesis %d: %+v (key load %v, wall %v), want first solve %v and pipeline.synthesize's own time",
				i, tm, own.KeyLoad, wall, first)
		}
		s.Release(context.Background())
	}
}

// blockOn is a span processor that, when a span named name starts, calls
// f and then holds the starting goroutine for d: a step made slow.
type blockOn struct {
	onStart
	d time.Duration
}

func (b blockOn) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	if s.Name() == b.name {
		b.f()
		time.Sleep(b.d)
	}
}

// A load whose caller gives up while the cached keys are read beside the
// circuit's decode (keys.load started from the stored hash) returns only
// once that read ended: its keys.load under the caller's span does not
// outlive it.
func TestALoadGivenUpWhileItsKeysAreReadReturnsAfterTheRead(t *testing.T) {
	dir := t.TempDir()
	req := &Request{Circuit: "mulchain", Constraints: 600}
	maker := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithKeyCacheDir(dir), WithBuildRevision("test-rev"))
	if err := maker.LoadCircuit(context.Background(), req.Circuit, req.Constraints); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(blockOn{onStart{semconv.SpanKeysRead, cancel}, 300 * time.Millisecond}),
		sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithKeyCacheDir(dir), WithBuildRevision("test-rev"), WithTracerProvider(tp))
	jobCtx, job := tp.Tracer("test").Start(ctx, semconv.SpanEngineJob)
	err := p.LoadCircuit(jobCtx, req.Circuit, req.Constraints)
	job.End()
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("load given up: %v, want context.Canceled (or the keys, read whole)", err)
	}
	spans := exp.GetSpans()
	if len(spantest.NamedStubs(spans, semconv.SpanKeysRead)) == 0 || len(spantest.NamedStubs(spans, semconv.SpanKeyLoad)) == 0 {
		t.Fatal("keys.read and keys.load had not ended when the load returned: the read outlived its caller")
	}
	spantest.ChildrenEndInTheirParents(t, spans)
}
