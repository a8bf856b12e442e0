package prover

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/frontend"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// newTestPipeline opens a Prover on a Releaser of mode (on the
// WithTracerProvider of opts, when given), closed after the Prover.
func newTestPipeline(t *testing.T, backend string, mode buffer.ReleaseMode, opts ...ProverOption) *Prover {
	t.Helper()
	rel, err := buffer.NewReleaser(mode, buffer.WithTracerProvider(newConfig(opts).tp))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]ProverOption{WithKeyCacheDir(t.TempDir()), WithReleaser(rel)}, opts...)
	p, err := New(context.Background(), backend, opts...)
	if err != nil {
		rel.Close(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close(context.Background())
		rel.Close(context.Background())
	})
	return p
}

func TestPipelineRunProvesVerifiesAndTracesEveryStep(t *testing.T) {
	tp, exp := spantest.NewMemory()
	p := newTestPipeline(t, "cpu", buffer.ReleaseAsync, WithTracerProvider(tp))
	req := &Request{Circuit: "mulchain", Constraints: 1 << 10, Verify: true}
	for i := 0; i < 2; i++ {
		ctx, job := tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
		res, err := p.Run(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Releaser().Close(context.Background()); err != nil && i == 1 {
			t.Fatal(err)
		}
		job.End()
		if !res.Verified || res.Backend != "cpu" || len(res.Proof) == 0 || res.TraceID != job.SpanContext().TraceID().String() {
			t.Fatalf("result %+v", res)
		}
		if res.Timings.Prove <= 0 || res.Timings.Synthesis <= 0 || res.Timings.Total < res.Timings.Prove {
			t.Errorf("timings %+v", res.Timings)
		}
		// The proof bytes verify on their own.
		proof := gnarkgroth16.NewProof(ecc.BLS12_381)
		if _, err := proof.ReadFrom(bytes.NewReader(res.Proof)); err != nil {
			t.Fatal(err)
		}
		pub, _ := witness.New(ecc.BLS12_381.ScalarField())
		if err := pub.UnmarshalBinary(res.PublicWitness); err != nil {
			t.Fatal(err)
		}
		vk, err := p.VerifyingKey(context.Background(), "mulchain", 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		if err := gnarkgroth16.Verify(proof, vk, pub); err != nil {
			t.Fatalf("serialized proof: %v", err)
		}
		if i == 0 {
			// The async releaser is closed now; a fresh one for run 2.
			rel, _ := buffer.NewReleaser(buffer.ReleaseAsync, buffer.WithTracerProvider(tp))
			p.rel = rel
		}
	}
	tree := spantest.NewTree(exp.GetSpans())
	for name, parent := range map[string]string{
		semconv.SpanKeyLoad:            semconv.SpanEngineJob,
		semconv.SpanCircuitCompile:     semconv.SpanEngineJob,
		semconv.SpanPipelineSynthesize: semconv.SpanEngineJob,
		semconv.SpanPipelineProve:      semconv.SpanEngineJob,
		semconv.SpanGroth16Prove:       semconv.SpanPipelineProve,
		semconv.SpanMSMG2B:             semconv.SpanGroth16Prove,
		semconv.SpanPipelineSerialize:  semconv.SpanEngineJob,
		semconv.SpanProofVerify:        semconv.SpanEngineJob,
		semconv.SpanBufferRelease:      semconv.SpanEngineJob, // async: off pipeline.prove
	} {
		spans := tree.Named(name)
		if len(spans) == 0 {
			t.Errorf("no %s span", name)
		}
		for _, s := range spans {
			if !s.Parent.IsValid() && name == semconv.SpanKeyLoad {
				continue // the test's own VerifyingKey calls
			}
			if p, ok := tree.Parent(s); !ok || p.Name != parent {
				t.Errorf("%s: parent %q, want %q", name, p.Name, parent)
			} else if name != semconv.SpanBufferRelease && (s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime)) {
				t.Errorf("%s not inside %s", name, p.Name)
			}
		}
	}
	var hits []string
	for _, s := range tree.Named(semconv.SpanKeyLoad) {
		if !s.Parent.IsValid() {
			continue
		}
		v, _ := spantest.StubValue(s, string(semconv.KeyKeyCacheHit))
		hits = append(hits, v)
	}
	if strings.Join(hits, ",") != "false,true" {
		t.Errorf("keys.load cache hits %v, want first false then true", hits)
	}
	if n := len(tree.Named(semconv.SpanCircuitCompile)); n != 1 {
		t.Errorf("%d compiles for two runs of one circuit, want 1", n)
	}
	// Steps in order within a job.
	order := []string{semconv.SpanPipelineSynthesize, semconv.SpanPipelineProve, semconv.SpanPipelineSerialize, semconv.SpanProofVerify}
	for i := 1; i < len(order); i++ {
		a, b := tree.Named(order[i-1])[0], tree.Named(order[i])[0]
		if a.EndTime.After(b.StartTime) {
			t.Errorf("%s ends after %s starts", order[i-1], order[i])
		}
	}
}

func TestPipelineRejectsBadRequestsWithSentinels(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	ctx := context.Background()
	cases := []struct {
		req  Request
		want error
	}{
		{Request{Circuit: "nosuch", Constraints: 100}, ErrUnknownCircuit},
		{Request{Circuit: "mulchain", Constraints: 0}, circuits.ErrBadConstraints},
		{Request{Circuit: "mulchain", Constraints: -3}, circuits.ErrBadConstraints},
		{Request{Circuit: "mulchain", Constraints: circuits.MaxConstraints}, circuits.ErrTooLargeForHost},
		{Request{Circuit: "mulchain", Constraints: 1 << 40}, circuits.ErrBadConstraints}, // no Groth16 domain of it
		{Request{Circuit: "mulchain", Constraints: 64, Witness: []byte{1, 2, 3}}, groth16.ErrBadWitness},
	}
	for _, c := range cases {
		if _, err := p.Run(ctx, &c.req); !errors.Is(err, c.want) {
			t.Errorf("%+v: err = %v, want %v", c.req, err, c.want)
		}
	}
	// A well-formed witness of another circuit: wrong size.
	in, _ := circuits.Build("merkle", 2000)
	w, _ := in.Witness(1)
	b, _ := w.MarshalBinary()
	if _, err := p.Run(ctx, &Request{Circuit: "mulchain", Constraints: 64, Witness: b}); !errors.Is(err, groth16.ErrWitnessSize) {
		t.Errorf("foreign witness: %v, want ErrWitnessSize", err)
	}
	// A witness that does not satisfy the circuit.
	bad, _ := frontend.NewWitness(&circuits.MulChain{X: 2, Out: 2}, ecc.BLS12_381.ScalarField())
	b, _ = bad.MarshalBinary()
	if _, err := p.Run(ctx, &Request{Circuit: "mulchain", Constraints: 64, Witness: b}); !errors.Is(err, groth16.ErrUnsatisfied) {
		t.Errorf("unsatisfying witness: %v, want ErrUnsatisfied", err)
	}
	// A value ≥ r (all bits set) in an otherwise good witness.
	good, _ := frontend.NewWitness(&circuits.MulChain{X: 2, Out: 2}, ecc.BLS12_381.ScalarField())
	b, _ = good.MarshalBinary()
	for i := len(b) - 32; i < len(b); i++ {
		b[i] = 0xff
	}
	if _, err := p.Run(ctx, &Request{Circuit: "mulchain", Constraints: 64, Witness: b}); !errors.Is(err, groth16.ErrBadWitness) {
		t.Errorf("value outside the field: %v, want ErrBadWitness", err)
	}
}

func TestPipelineBackendChoice(t *testing.T) {
	var notice bytes.Buffer
	p := newTestPipeline(t, "auto", buffer.ReleaseSync, WithNotice(&notice))
	if _, registered := backend.Lookup("cuda"); !registered {
		if p.Backend() != "cpu" {
			t.Errorf("auto without cuda: backend %s", p.Backend())
		}
		if lines := strings.Count(notice.String(), "\n"); lines != 1 || !strings.Contains(notice.String(), "using cpu") {
			t.Errorf("auto fallback notice %q, want one line", notice.String())
		}
		_, err := New(context.Background(), "cuda", WithKeyCacheDir(t.TempDir()))
		if !errors.Is(err, backend.ErrUnavailable) {
			t.Errorf("cuda without the backend: %v, want ErrBackendUnavailable", err)
		}
	}
	if _, err := New(context.Background(), "tpu", WithKeyCacheDir(t.TempDir())); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("tpu: %v", err)
	}
}

func TestCircuitFromFilesProvesWithTheCallersWitness(t *testing.T) {
	dir := t.TempDir()
	ccs, pk, vk := circuitstest.SetupCircuit(t, &circuitstest.Square{})
	files := circuitstest.WriteFiles(t, dir, "square", ccs, pk, vk)
	csPath, pkPath := files.CS, files.PK

	// A fresh name per run: the registry is per process (go test -count).
	square := fmt.Sprintf("square-%d", time.Now().UnixNano())
	if err := circuits.RegisterFiles(square, files); err != nil {
		t.Fatal(err)
	}
	if err := circuits.RegisterFiles(square, circuits.Files{CS: csPath, PK: pkPath}); err == nil {
		t.Error("registered the same name twice")
	}
	if err := circuits.RegisterFiles("merkle", circuits.Files{CS: csPath, PK: pkPath}); err == nil {
		t.Error("registered over a built-in")
	}
	if err := circuits.RegisterFiles("ghost", circuits.Files{CS: filepath.Join(dir, "none"), PK: pkPath}); err == nil {
		t.Error("registered a missing file")
	}

	p := newTestPipeline(t, "cpu", buffer.ReleasePool)
	b, _ := circuitstest.NewWitness(t, &circuitstest.Square{X: 3, Y: 9}).MarshalBinary()
	res, err := p.Run(context.Background(), &Request{Circuit: square, Witness: b, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Error("not verified")
	}
	// The key ID hashed from the file's bytes is keycache.Hash of the R1CS.
	lc, err := p.load(context.Background(), square, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := keycache.Hash(ccs); lc.keys.Hash != want {
		t.Errorf("file circuit's key ID %s, keycache.Hash says %s", lc.keys.Hash, want)
	}
	if _, err := p.Run(context.Background(), &Request{Circuit: square, Verify: true}); !errors.Is(err, groth16.ErrBadWitness) {
		t.Errorf("file circuit without a witness: %v, want ErrBadWitness", err)
	}
}

func TestLoadCircuitAndEvictCircuit(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	if err := p.LoadCircuit(context.Background(), "mulchain", 128); err != nil {
		t.Fatal(err)
	}
	if got := p.LoadedCircuits(); len(got) != 1 || got[0] != "mulchain/128" {
		t.Errorf("Loaded = %v", got)
	}
	// LoadedKey: the key id is the constraint system's hash (the id its
	// bases have on a device), the bytes the proving key's estimate.
	keyID, bytes, ok := p.LoadedKey("mulchain/128")
	lc := p.loaded["mulchain/128"]
	if want, _ := keycache.Hash(lc.ccs); !ok || keyID != want || keyID == "mulchain/128" {
		t.Errorf("LoadedKey = %q, %v, want %q", keyID, ok, want)
	}
	if want := circuitKeyMemory(lc); bytes != want || bytes == 0 {
		t.Errorf("LoadedKey bytes %d, want KeyMemory %d", bytes, want)
	}
	if _, _, ok := p.LoadedKey("mulchain/64"); ok {
		t.Error("LoadedKey of a circuit not loaded: ok")
	}
	if !p.EvictCircuit("mulchain", 128) || p.EvictCircuit("mulchain", 128) {
		t.Error("Evict should report true once, then false")
	}
	if _, _, ok := p.LoadedKey("mulchain/128"); ok {
		t.Error("LoadedKey after EvictCircuit: ok")
	}
	if err := p.LoadCircuit(context.Background(), "nosuch", 1); !errors.Is(err, ErrUnknownCircuit) {
		t.Errorf("preload unknown: %v", err)
	}
	if len(p.LoadedCircuits()) != 0 {
		t.Errorf("failed load kept: %v", p.LoadedCircuits())
	}
}

func TestValidateRefusesBadRequestsBeforeProving(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	good, _ := frontend.NewWitness(&circuits.MulChain{X: 2, Out: 2}, ecc.BLS12_381.ScalarField())
	gb, _ := good.MarshalBinary()
	in, _ := circuits.Build("merkle", 2000)
	fw, _ := in.Witness(1)
	foreign, _ := fw.MarshalBinary()
	if err := p.Validate(&Request{Circuit: "mulchain", Constraints: 64}); err != nil {
		t.Errorf("good request: %v", err)
	}
	if err := p.Validate(&Request{Circuit: "mulchain", Constraints: 64, Witness: foreign}); err != nil {
		t.Errorf("size is unknown before the circuit is loaded: %v", err)
	}
	if err := p.LoadCircuit(context.Background(), "mulchain", 64); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		req  Request
		want error
	}{
		{Request{Circuit: "nosuch", Constraints: 64}, ErrUnknownCircuit},
		{Request{Circuit: "mulchain", Constraints: 0}, circuits.ErrBadConstraints},
		{Request{Circuit: "mulchain", Constraints: 64, Witness: []byte("junk")}, groth16.ErrBadWitness},
		{Request{Circuit: "mulchain", Constraints: 64, Witness: foreign}, groth16.ErrWitnessSize},
	}
	for _, c := range cases {
		if err := p.Validate(&c.req); !errors.Is(err, c.want) {
			t.Errorf("%s/%d: %v, want %v", c.req.Circuit, c.req.Constraints, err, c.want)
		}
	}
	if err := p.Validate(&Request{Circuit: "mulchain", Constraints: 64, Witness: gb}); err != nil {
		t.Errorf("good witness: %v", err)
	}
}

// evictingCPU records the key IDs whose bases the pipeline evicts.
type evictingCPU struct {
	*cpu.Backend
	evicted []string
}

func (e *evictingCPU) EvictBases(_ context.Context, id string) error {
	e.evicted = append(e.evicted, id)
	return nil
}

func TestEvictCircuitTellsABaseEvicterBackend(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	b := &evictingCPU{Backend: cpu.New(nil)}
	p.backend = b
	if err := p.LoadCircuit(context.Background(), "mulchain", 100); err != nil {
		t.Fatal(err)
	}
	lc, _ := p.load(context.Background(), "mulchain", 100)
	if !p.EvictCircuit("mulchain", 100) {
		t.Fatal("not held")
	}
	if len(b.evicted) != 1 || b.evicted[0] != lc.keys.Hash {
		t.Errorf("backend evicted %v, want [%s]", b.evicted, lc.keys.Hash)
	}
}

func TestConcurrentRunsShareOneLoadAndAllVerify(t *testing.T) {
	tp, exp := spantest.NewMemory()
	p := newTestPipeline(t, "cpu", buffer.ReleasePool, WithTracerProvider(tp))
	const n = 4
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			res, err := p.Run(context.Background(), &Request{Circuit: "mulchain", Constraints: 512, Verify: true})
			if err == nil && !res.Verified {
				err = errors.New("not verified")
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if c := len(spantest.NewTree(exp.GetSpans()).Named(semconv.SpanCircuitCompile)); c != 1 {
		t.Errorf("%d compiles for %d concurrent runs of one circuit, want 1", c, n)
	}
}

// deviceCPU is the CPU backend with a device's memory report, standing in
// for the CUDA backend's MemInfo.
type deviceCPU struct{ *cpu.Backend }

func (deviceCPU) MemInfo() (free, total uint64, err error) { return 3 << 30, 8 << 30, nil }

func TestPipelineMemInfoComesFromTheBackendsDevice(t *testing.T) {
	// A fresh name per run: the backend registry is per process (go test -count).
	name := fmt.Sprintf("test-device-%d", time.Now().UnixNano())
	backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
		return deviceCPU{cpu.New(o.TracerProvider)}, nil
	})
	dev := newTestPipeline(t, name, buffer.ReleaseSync)
	if free, total, err := dev.MemInfo(); err != nil || free != 3<<30 || total != 8<<30 {
		t.Errorf("device pipeline: free %d total %d err %v, want 3 GiB of 8 GiB", free, total, err)
	}
	cpu := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	if _, _, err := cpu.MemInfo(); !errors.Is(err, backend.ErrNoDeviceMemory) {
		t.Errorf("cpu pipeline: %v, want ErrNoDeviceMemory", err)
	}
}

func TestAKeyLoadGivenUpByItsCallerDoesNotFailTheOthersWaitingForIt(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	gaveUp, cancel := context.WithCancel(context.Background())
	cancel()
	const n = 1 << 12
	preloadErr := make(chan error, 1)
	go func() { preloadErr <- p.LoadCircuit(gaveUp, "mulchain", n) }()
	for deadline := time.Now().Add(10 * time.Second); ; { // the Preload is the loader
		p.mu.Lock()
		_, loading := p.loaded[circuitKey("mulchain", n)]
		p.mu.Unlock()
		if loading || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	res, err := p.Run(context.Background(), &Request{RequestID: "live", Circuit: "mulchain", Constraints: n, Verify: true})
	if err != nil || !res.Verified {
		t.Fatalf("a Run with a live context: %v (want its proof, whatever the other caller did)", err)
	}
	if err := <-preloadErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled Preload: %v, want context.Canceled", err)
	}
}

func TestAWitnessWithTheRightTotalButAnotherPublicSplitIsRefused(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	b := circuitstest.WitnessBytes(t, "mulchain", 512, 1)
	// gnark's binary witness: public count, secret count, total, values.
	pub, sec := binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8])
	binary.BigEndian.PutUint32(b[0:4], pub+1)
	binary.BigEndian.PutUint32(b[4:8], sec-1)
	if err := p.LoadCircuit(context.Background(), "mulchain", 512); err != nil {
		t.Fatal(err)
	}
	for _, verify := range []bool{true, false} {
		req := &Request{RequestID: fmt.Sprint("split-", verify), Circuit: "mulchain", Constraints: 512, Witness: b, Verify: verify}
		if err := p.Validate(req); !errors.Is(err, groth16.ErrWitnessSize) {
			t.Errorf("Validate: %v, want ErrWitnessSize", err)
		}
		if _, err := p.Run(context.Background(), req); !errors.Is(err, groth16.ErrWitnessSize) {
			t.Errorf("Run (verify %v): %v, want ErrWitnessSize, not a proof with the wrong public inputs", verify, err)
		}
	}
}

func TestSecondPipelineReadsTheCompiledCircuitAndItsHashFromTheCache(t *testing.T) {
	dir := t.TempDir()
	outcome := func() (string, map[string]bool) {
		tp, exp := spantest.NewMemory()
		p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithKeyCacheDir(dir), WithTracerProvider(tp), WithBuildRevision("test-rev"))
		if _, err := p.Run(context.Background(), &Request{Circuit: "merkle", Constraints: 1 << 12, Verify: true}); err != nil {
			t.Fatal(err)
		}
		// The circuit's cache outcome and the key hash's source, by key:
		// the spans that carry them end in either order.
		var circuit, hash []string
		names := map[string]bool{}
		for _, s := range exp.GetSpans() {
			names[s.Name] = true
			for _, a := range s.Attributes {
				switch a.Key {
				case semconv.KeyCircuitCache:
					circuit = append(circuit, a.Value.AsString())
				case semconv.KeyKeyHashSource:
					hash = append(hash, a.Value.AsString())
				}
			}
		}
		return strings.Join(circuit, ",") + " " + strings.Join(hash, ","), names
	}
	if got, _ := outcome(); got != "miss circuit_cache" {
		t.Errorf("first pipeline: %q, want a miss whose hash is stored", got)
	}
	got, names := outcome()
	if got != "hit circuit_cache" {
		t.Errorf("second pipeline: %q, want a hit with the stored hash", got)
	}
	if names[semconv.SpanCircuitFrontend] || names[semconv.SpanKeysHash] {
		t.Errorf("second pipeline compiled or hashed again: %v", names)
	}
}

// warmCPU is the CPU backend with a warm-up that counts its calls and
// fails while fail is set, standing in for the CUDA backend's Warmup.
type warmCPU struct {
	*cpu.Backend
	calls *int
	fail  *string // the error's text; "" succeeds
}

func (w warmCPU) Warmup(context.Context) error {
	*w.calls++
	if *w.fail != "" {
		return errors.New(*w.fail)
	}
	return nil
}

func TestPipelineWarmupCallsTheBackendsWarmupAndIsANoOpWithoutOne(t *testing.T) {
	var calls int
	fail := "kernels: compile failed"
	// A fresh name per run: the backend registry is per process and the
	// factory holds this run's counters (go test -count).
	name := fmt.Sprintf("test-warm-%d", time.Now().UnixNano())
	backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
		return warmCPU{cpu.New(o.TracerProvider), &calls, &fail}, nil
	})
	p := newTestPipeline(t, name, buffer.ReleaseSync)
	// The error names the backend once: added to one that does not,
	// passed on as it is by one that does (the CUDA backend's).
	if err := p.Warmup(context.Background()); err == nil || err.Error() != "cpu backend: warm-up: kernels: compile failed" || calls != 1 {
		t.Errorf("Warmup = %v after %d calls, want the backend's error, named, after 1", err, calls)
	}
	fail = "cpu backend: warm-up: kernels: compile failed"
	if err := p.Warmup(context.Background()); err == nil || err.Error() != fail || calls != 2 {
		t.Errorf("Warmup = %v after %d calls, want %q after 2", err, calls, fail)
	}
	fail = ""
	if err := p.Warmup(context.Background()); err != nil || calls != 3 {
		t.Errorf("Warmup = %v after %d calls, want nil after 3", err, calls)
	}
	if err := newTestPipeline(t, "cpu", buffer.ReleaseSync).Warmup(context.Background()); err != nil {
		t.Errorf("CPU pipeline Warmup = %v, want nil", err)
	}
}
