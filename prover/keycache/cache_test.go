package keycache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// loadTwice loads ccs's keys from c twice and fails t unless the first
// load missed the cache and the second hit it.
func loadTwice(t *testing.T, c *Cache, ccs constraint.ConstraintSystem) (first, second *Keys) {
	t.Helper()
	first, err := c.Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	second, err = c.Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	if first.CacheHit || !second.CacheHit {
		t.Fatalf("cache hits %v, %v; want false, true", first.CacheHit, second.CacheHit)
	}
	return first, second
}

func compile(t *testing.T, n int) constraint.ConstraintSystem {
	t.Helper()
	in, err := circuits.Build("mulchain", n)
	if err != nil {
		t.Fatal(err)
	}
	ccs, err := in.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return ccs
}

// requireProveAndVerify proves ccs, mulchain at n constraints (compile's),
// with k's proving key and the sample witness of seed 1, and fails t
// unless gnark's verifier accepts the proof with k's verifying key.
func requireProveAndVerify(t *testing.T, ccs constraint.ConstraintSystem, k *Keys, n int) {
	t.Helper()
	w := circuitstest.SampleWitness(t, "mulchain", n, 1)
	proof, err := groth16.Prove(ccs, k.PK, w)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := w.Public()
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proof, k.VK, pub); err != nil {
		t.Fatalf("the keys' proof does not verify: %v", err)
	}
}

func TestSecondLoadReusesTheCachedKeys(t *testing.T) {
	dir := t.TempDir()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c, err := New(dir, WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	ccs := compile(t, 1<<10)
	k1, k2 := loadTwice(t, c, ccs)
	if k1.Hash != k2.Hash || !bytes.Equal(circuitstest.Bytes(t, k1.VK), circuitstest.Bytes(t, k2.VK)) {
		t.Fatal("second load returned other keys")
	}
	if k1.PK.(interface{ IsDifferent(any) bool }).IsDifferent(k2.PK) {
		t.Fatal("cached proving key differs from the one setup made")
	}
	// The cached keys prove and verify together.
	requireProveAndVerify(t, ccs, k2, 1<<10)

	var hits []string
	for _, s := range exp.GetSpans() {
		if s.Name != semconv.SpanKeyLoad {
			if !strings.HasPrefix(s.Name, "keys.") {
				t.Errorf("unexpected span %s", s.Name)
			}
			continue
		}
		for _, a := range s.Attributes {
			if a.Key == semconv.KeyKeyCacheHit {
				hits = append(hits, a.Value.Emit())
			}
		}
	}
	if strings.Join(hits, ",") != "false,true" {
		t.Errorf("keys.load cache_hit attributes %v, want [false true]", hits)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.keys"))
	if len(files) != 1 || filepath.Base(files[0]) != k1.Hash+".keys" {
		t.Errorf("cache holds %v, want one %s.keys", files, k1.Hash)
	}
}

func TestOtherCircuitHasAnotherHash(t *testing.T) {
	h1, err := Hash(compile(t, 100))
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := Hash(compile(t, 101))
	h3, _ := Hash(compile(t, 100))
	if h1 == h2 || h1 != h3 || len(h1) != 64 {
		t.Errorf("hashes %s %s %s", h1, h2, h3)
	}
}

func TestAPartialKeyFileIsRefusedNamingItNotReplaced(t *testing.T) {
	dir := t.TempDir()
	c, _ := New(dir, WithProgress(nil, false))
	ccs := compile(t, 1<<8)
	k, err := c.Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, k.Hash+".keys")
	data, _ := os.ReadFile(path)
	// A torn write (what atomic rename prevents) and a leftover temp file
	// of a killed setup.
	os.WriteFile(path, data[:len(data)/2], 0o644)
	os.WriteFile(filepath.Join(dir, ".tmp-"+k.Hash+".keys-123"), data[:10], 0o644)
	requireRefused(t, dir, ccs, path, "truncated", "")
}

// requireRefused loads ccs, with opts, through a new cache on dir whose key
// file at path was damaged (how: "truncated", ...): the load must fail with
// an error wrapping ErrCorruptKey (error.type corrupt) that names the file
// and the damage (want, when not ""), and says how to get a new key; no
// setup may run and the file must be left byte for byte as it was (a new
// setup made a new verifying key with a one-line notice).
func requireRefused(t *testing.T, dir string, ccs constraint.ConstraintSystem, path, how, want string, opts ...Option) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var notice bytes.Buffer
	c2, _ := New(dir, append([]Option{WithProgress(&notice, false)}, opts...)...)
	c2.progressAfter = time.Hour
	setups := 0
	c2.setupFn = func(context.Context, constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		setups++
		return nil, nil, errors.New("no setup may run")
	}
	k2, err := c2.Load(context.Background(), ccs)
	if err == nil {
		t.Fatalf("a %s key file was loaded (hit %v)", how, k2.CacheHit)
	}
	if !errors.Is(err, ErrCorruptKey) || semconv.ErrorType(err) != semconv.ErrorTypeCorrupt {
		t.Errorf("a %s key file: %v (error.type %s), want ErrCorruptKey, corrupt", how, err, semconv.ErrorType(err))
	}
	msg := err.Error()
	for _, w := range []string{"corrupt key file " + path + " (", "refused, not replaced", "new verifying key", "delete it to make a new key", want} {
		if !strings.Contains(msg, w) {
			t.Errorf("a %s key file: %q lacks %q", how, msg, w)
		}
	}
	if strings.Count(msg, path) != 1 || strings.Contains(msg, "\n") {
		t.Errorf("a %s key file: %q, want one line naming the file once", how, msg)
	}
	if setups != 0 {
		t.Errorf("a %s key file: %d setups ran", how, setups)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Errorf("a %s key file was changed (%d bytes, was %d)", how, len(after), len(before))
	}
	if notice.Len() > 0 {
		t.Errorf("a %s key file: notice %q besides the error", how, notice.String())
	}
}

func TestWriteAtomicLeavesNoFileWhenTheWriteFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k.keys")
	err := writeAtomic(path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("killed")
	})
	if err == nil {
		t.Fatal("want the write's error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %v behind", entries)
	}
}

func TestCacheDirFromEnvironment(t *testing.T) {
	d := filepath.Join(t.TempDir(), "x")
	t.Setenv(EnvCacheDir, d)
	got, err := DefaultDir()
	if err != nil || got != d {
		t.Fatalf("DefaultDir = %q, %v; want %q", got, err, d)
	}
	c, err := New("")
	if err != nil || c.Dir() != d {
		t.Fatalf("New(\"\") dir %q, %v", c.Dir(), err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Fatal("directory not created")
	}
	t.Setenv(EnvCacheDir, "")
	if got, _ := DefaultDir(); !strings.HasSuffix(got, filepath.Join("otelcuzk", "keys")) {
		t.Errorf("default dir %q", got)
	}
}

func TestSlowSetupShowsProgress(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	c, _ := New(dir, WithProgress(&out, true))
	c.progressAfter = time.Millisecond // the test's setup is fast
	if _, err := c.Load(context.Background(), compile(t, 1<<12)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "groth16 setup") || !strings.Contains(out.String(), "no estimate") {
		t.Errorf("no line and spinner on the progress writer: %q", out.String())
	}
	// The setup was measured: the next one, of another size, says how
	// long it should take.
	if _, ok := estimateSetup(dir, 1<<13); !ok {
		t.Fatalf("no setup recorded in %s", dir)
	}
	out.Reset()
	c2, _ := New(dir, WithProgress(&out, false)) // not a terminal
	c2.progressAfter = time.Millisecond
	if _, err := c2.Load(context.Background(), compile(t, 1<<10)); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	if strings.Count(line, "\n") != 1 || strings.ContainsAny(line, "\r\x1b") || !strings.Contains(line, "about ") ||
		!strings.Contains(line, "from the last setup measured here") {
		t.Errorf("not a terminal: want one plain line with the estimate, got %q", line)
	}
	out.Reset()
	c3, _ := New(t.TempDir(), WithProgress(&out, false)) // a setup under progressAfter says nothing
	c3.progressAfter = time.Minute                       // not 2 s: a loaded CI machine's 2^10 setup takes longer
	c3.Load(context.Background(), compile(t, 1<<10))
	if out.Len() != 0 {
		t.Errorf("a fast setup printed %q", out.String())
	}
}

// The estimate scales the last setup measured in the directory by the
// constraints; a missing or foreign file gives none.
func TestSetupEstimateScalesTheLastMeasuredSetup(t *testing.T) {
	dir := t.TempDir()
	if _, ok := estimateSetup(dir, 1024); ok {
		t.Error("an estimate from an empty directory")
	}
	recordSetup(dir, 1<<15, 26*time.Second)
	if d, ok := estimateSetup(dir, 1<<16); !ok || d != 52*time.Second {
		t.Errorf("estimate of 2^16 after 2^15 in 26 s: %v %v, want 52s", d, ok)
	}
	for _, bad := range []string{"", "x y", "0 5", "12", "-3 9"} {
		if err := os.WriteFile(filepath.Join(dir, setupRateFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := estimateSetup(dir, 1024); ok {
			t.Errorf("an estimate from %q", bad)
		}
	}
	if got := setupNotice(1<<15, 26400*time.Millisecond, true, true); !strings.Contains(got, "about 26 s in all") || strings.Contains(got, "not kept") {
		t.Errorf("notice %q", got)
	}
	if got := setupNotice(1<<15, 0, false, true); !strings.Contains(got, "cached for the next run") {
		t.Errorf("notice of a first setup %q", got)
	}
	// One constraint is singular (a new user's trial read "mulchain, 1
	// constraints"), in the setup and the compile lines alike.
	if got, want := setupNotice(1, 0, false, true), "groth16 setup: 1 constraint, no cached key; "; !strings.HasPrefix(got, want) {
		t.Errorf("notice of a setup of 1 constraint %q, want it to begin %q", got, want)
	}
	if got, want := compileNotice("mulchain", 1, 0, false), "circuit compile: mulchain, 1 constraint; the first compile of it here has no estimate"; got != want {
		t.Errorf("compile notice %q, want %q", got, want)
	}
	if got, want := compileNotice("mulchain", 2, 1500*time.Millisecond, true), "circuit compile: mulchain, 2 constraints; about 1.5 s in all, from the last compile measured here"; got != want {
		t.Errorf("compile notice %q, want %q", got, want)
	}
	// A cache that cannot store the key must not promise it for the next
	// run (a new user's trial read both lines one after the other).
	for _, known := range []bool{false, true} {
		got := setupNotice(1<<15, 26400*time.Millisecond, known, false)
		if strings.Contains(got, "cached for the next run") || !strings.Contains(got, "not kept") {
			t.Errorf("notice with an unwritable cache (estimate %v) %q", known, got)
		}
	}
}

type squareCircuit struct{ X frontend.Variable }

func (c *squareCircuit) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.X, c.X), 4)
	return nil
}

func TestOtherCurveIsRefused(t *testing.T) {
	ccs, err := frontend.Compile(ecc.BN254.ScalarField(), r1cs.NewBuilder, &squareCircuit{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(t.TempDir())
	if _, err := c.Load(context.Background(), ccs); !errors.Is(err, ErrUnsupported) {
		t.Errorf("err = %v, want ErrUnsupported", err)
	}
}

func TestAStoreThatFailsStillReturnsTheKeys(t *testing.T) {
	dir := t.TempDir()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	var progress bytes.Buffer
	c, err := New(dir, WithTracerProvider(tp), WithProgress(&progress, false))
	if err != nil {
		t.Fatal(err)
	}
	ccs := compile(t, 1<<8)
	hash, err := Hash(ccs)
	if err != nil {
		t.Fatal(err)
	}
	// A directory where the key file goes: the read finds no file, the
	// rename of the stored keys onto it fails.
	if err := os.MkdirAll(filepath.Join(c.path(hash), "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	k, err := c.Load(context.Background(), ccs)
	if err != nil {
		t.Fatalf("load with an unwritable cache: %v, want the keys setup made", err)
	}
	if k.PK == nil || k.VK == nil || k.CacheHit {
		t.Fatalf("keys %+v: want fresh keys", k)
	}
	if !strings.Contains(progress.String(), "could not store the keys in "+c.path(hash)) || strings.Count(progress.String(), "\n") < 1 {
		t.Errorf("progress %q: want one line naming the key file", progress.String())
	}
	var stored, loaded bool
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case semconv.SpanKeysStore:
			stored = s.Status.Code == codes.Error
		case semconv.SpanKeyLoad:
			loaded = s.Status.Code != codes.Error
		}
	}
	if !stored || !loaded {
		t.Errorf("keys.store failed %v, keys.load ok %v: want the failure on keys.store only", stored, loaded)
	}
	// The keys prove and verify.
	requireProveAndVerify(t, ccs, k, 1<<8)
}
