package keycache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// WithEphemeralKeys: every load runs the setup (WithSetup's), nothing is
// read from or written to the directory, not even over a cached file.
func TestEphemeralKeysAreMadeEachLoadAndNeverWritten(t *testing.T) {
	dir := t.TempDir()
	ccs := compile(t, 1<<8)
	// A cached key the ephemeral cache must not read.
	if _, err := mustNew(t, dir).Load(context.Background(), ccs); err != nil {
		t.Fatal(err)
	}
	before := dirNames(t, dir)
	setups := 0
	c := mustNew(t, dir, WithEphemeralKeys(), WithSetup(func(ctx context.Context, ccs constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		setups++
		return groth16.Setup(ccs)
	}))
	for range 2 {
		k, err := c.Load(context.Background(), ccs)
		if err != nil {
			t.Fatal(err)
		}
		if k.CacheHit {
			t.Fatal("an ephemeral load read the cached key")
		}
	}
	if setups != 2 {
		t.Fatalf("%d setups for 2 ephemeral loads, want 2", setups)
	}
	if after := dirNames(t, dir); len(after) != len(before) {
		t.Fatalf("ephemeral loads changed the directory: %v, then %v", before, after)
	}
	// A failing setup is the load's error, and still writes nothing.
	boom := errors.New("device lost")
	c = mustNew(t, t.TempDir(), WithEphemeralKeys(), WithSetup(func(context.Context, constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		return nil, nil, boom
	}))
	if _, err := c.Load(context.Background(), ccs); !errors.Is(err, boom) {
		t.Fatalf("Load = %v, want the setup's error", err)
	}
	if n := dirNames(t, c.Dir()); len(n) != 0 {
		t.Fatalf("a failed ephemeral setup left %v", n)
	}
}

func mustNew(t *testing.T, dir string, opts ...Option) *Cache {
	t.Helper()
	c, err := New(dir, append([]Option{WithProgress(nil, false)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

// WithEphemeralKeys stores no compiled circuit (issue 24: at porep 2^26 the
// store was 78.4 s of a 102.2 s compile) and hashes nothing, but reads a
// circuit already cached; a stale or damaged file is left as it was.
// HasCircuit, which the memory check counts the compile by, agrees with
// what Compile does.
func TestEphemeralKeysCompileWithoutStoringButReadACachedCircuit(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	comp := &compiler{n: 1 << 10}
	var notice bytes.Buffer
	eph := mustNew(t, dir, WithRevision("rev1"), WithEphemeralKeys(), WithTracerProvider(tp), WithProgress(&notice, false))
	if eph.HasCircuit(ctx, "mulchain", 1<<10) {
		t.Fatal("empty cache: HasCircuit true")
	}
	got, err := eph.Compile(ctx, "mulchain", 1<<10, comp.compile)
	if err != nil {
		t.Fatal(err)
	}
	if got.CacheHit || got.Hash != "" || comp.calls.Load() != 1 {
		t.Fatalf("ephemeral compile: hit %v, hash %q, %d compiles; want a compile, no hash", got.CacheHit, got.Hash, comp.calls.Load())
	}
	if outcome, children := compileOutcome(t, rec); outcome != CircuitCacheNoStore ||
		strings.Join(children, ",") != "circuit.cache.read,circuit.frontend" {
		t.Errorf("ephemeral compile: %s with %v, want no_store with the read and the frontend only", outcome, children)
	}
	path := eph.CircuitPath("mulchain", 1<<10)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an ephemeral compile stored the circuit (%s: %v)", path, err)
	}
	for _, n := range dirNames(t, dir) {
		if strings.HasPrefix(n, "circuit-") || strings.HasPrefix(n, ".") {
			t.Errorf("an ephemeral compile left %s in the cache", n)
		}
	}
	if !strings.Contains(notice.String(), "read only") {
		t.Errorf("the cache's line does not say it is read only: %q", notice.String())
	}
	if eph.HasCircuit(ctx, "mulchain", 1<<10) {
		t.Fatal("after an ephemeral compile: HasCircuit true, so the next memory check would not count the compile")
	}
	// The keys of that system: set up, not hashed (no keys.hash span).
	k, err := eph.LoadHashed(ctx, got.CCS, got.Hash)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanKeysHash {
			t.Error("an ephemeral load hashed the constraint system")
		}
		if s.Name() == semconv.SpanKeyLoad && attrString(s, semconv.KeyKeyHashSource) != "ephemeral" {
			t.Errorf("keys.load hash_source %q, want ephemeral", attrString(s, semconv.KeyKeyHashSource))
		}
	}
	k2, err := eph.LoadHashed(ctx, got.CCS, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Hash, EphemeralPrefix) || !strings.HasPrefix(k2.Hash, EphemeralPrefix) || k.Hash == k2.Hash {
		t.Fatalf("ephemeral key IDs %q and %q: want two different IDs of the prefix %q", k.Hash, k2.Hash, EphemeralPrefix)
	}
	requireProveAndVerify(t, got.CCS, k, 1<<10)

	// Without the option the same compile is stored; then the ephemeral
	// cache reads it and writes nothing.
	if _, err := mustNew(t, dir, WithRevision("rev1"), WithTracerProvider(tp)).Compile(ctx, "mulchain", 1<<10, comp.compile); err != nil {
		t.Fatal(err)
	}
	if _, children := compileOutcome(t, rec); !strings.Contains(strings.Join(children, ","), semconv.SpanCircuitCacheStore) {
		t.Fatalf("a compile without ephemeral keys did not store: %v", children)
	}
	before := fileState(t, path)
	if !eph.HasCircuit(ctx, "mulchain", 1<<10) {
		t.Fatal("cached circuit: ephemeral HasCircuit false, so the memory check would count a compile that will not run")
	}
	hit, err := eph.Compile(ctx, "mulchain", 1<<10, comp.compile)
	if err != nil || !hit.CacheHit || comp.calls.Load() != 2 {
		t.Fatalf("ephemeral compile of a cached circuit: %v, hit %v, %d compiles; want a hit", err, hit != nil && hit.CacheHit, comp.calls.Load())
	}
	if outcome, _ := compileOutcome(t, rec); outcome != CircuitCacheHit {
		t.Errorf("ephemeral read of the cached circuit: %s, want hit", outcome)
	}

	// Another build's file: compiled, not replaced.
	stale := mustNew(t, dir, WithRevision("rev2"), WithEphemeralKeys(), WithTracerProvider(tp))
	if _, err := stale.Compile(ctx, "mulchain", 1<<10, comp.compile); err != nil || comp.calls.Load() != 3 {
		t.Fatalf("ephemeral compile over another build's file: %v, %d compiles", err, comp.calls.Load())
	}
	if outcome, children := compileOutcome(t, rec); outcome != CircuitCacheNoStore || strings.Contains(strings.Join(children, ","), "store") {
		t.Errorf("over another build's file: %s with %v", outcome, children)
	}
	if after := fileState(t, path); after != before {
		t.Fatalf("an ephemeral compile replaced another build's circuit file")
	}

	// A damaged file: compiled, warned about, left as it is.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	notice.Reset()
	if _, err := eph.Compile(ctx, "mulchain", 1<<10, comp.compile); err != nil || comp.calls.Load() != 4 {
		t.Fatalf("ephemeral compile over a damaged file: %v, %d compiles", err, comp.calls.Load())
	}
	if outcome, _ := compileOutcome(t, rec); outcome != CircuitCacheNoStore || !strings.Contains(notice.String(), "unreadable") {
		t.Errorf("over a damaged file: %s, notice %q; want no_store and the warning", outcome, notice.String())
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, data) {
		t.Fatalf("an ephemeral compile changed the damaged file (%v)", err)
	}
}

// A compile abandoned by its caller (ctx ended) stores nothing when it
// ends, in a cache of ephemeral keys.
func TestAnAbandonedEphemeralCompileStoresNothingWhenItEnds(t *testing.T) {
	dir := t.TempDir()
	c := mustNew(t, dir, WithRevision("rev1"), WithEphemeralKeys())
	release := make(chan struct{})
	comp := &compiler{n: 1 << 10}
	// started: the compile runs (a call that ends before, while its work
	// takes the lock, leaves nothing running and returns ctx's error).
	started := make(chan struct{})
	var once sync.Once
	slow := func() (constraint.ConstraintSystem, error) {
		once.Do(func() { close(started) })
		<-release
		return comp.compile()
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Compile(ctx, "mulchain", 1<<10, slow); errc <- err }()
	<-started
	cancel()
	var ab *AbandonedError
	if err := <-errc; !errors.As(err, &ab) {
		t.Fatalf("cancelled Compile: %v, want an *AbandonedError", err)
	}
	close(release)
	select {
	case <-ab.AbandonedDone():
	case <-time.After(2 * time.Minute):
		t.Fatal("the abandoned compile never ended")
	}
	c.background.Wait()
	if comp.calls.Load() != 1 {
		t.Fatalf("%d compiles, want 1", comp.calls.Load())
	}
	if _, err := os.Stat(c.CircuitPath("mulchain", 1<<10)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the abandoned ephemeral compile stored its circuit: %v", err)
	}
}

// fileState is what a replacement of the file at path would change.
func fileState(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d %v %x", fi.Size(), fi.ModTime().UnixNano(), sha256.Sum256(data))
}
