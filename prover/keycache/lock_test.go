package keycache

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"golang.org/x/sys/unix"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// holdLock takes the flock of path as another process would (another open
// file: flock locks of two opens conflict within one process too) and
// returns its release.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(release)
	return release
}

// countSetups makes c's setups count in n (gnark's groth16.Setup still
// makes the keys).
func countSetups(c *Cache, n *atomic.Int32) {
	c.setupFn = func(_ context.Context, ccs constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		n.Add(1)
		return groth16.Setup(ccs)
	}
}

// waitFor polls cond for up to a minute (a loaded machine), failing t
// with what when it never holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %s", what)
		}
	}
}

// A load that misses while another process sets up the same key (holding
// its lock) waits, saying so in one line, runs no setup, and reads the key
// the other stored: both proofs verify against the one key on disk. The
// wait is a keys.lock span under keys.load.
func TestALoadWaitsForAnotherProcessSetupAndReadsItsKey(t *testing.T) {
	ccs := compile(t, 1<<10)
	hash := mustHash(t, ccs)
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	var notice syncBuffer
	c := mustNew(t, dir, WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))), WithProgress(&notice, false))
	c.progressAfter = time.Hour
	var setups atomic.Int32
	countSetups(c, &setups)
	release := holdLock(t, c.keyLockPath(hash))

	type result struct {
		k   *Keys
		err error
	}
	done := make(chan result, 1)
	go func() { k, err := c.Load(context.Background(), ccs); done <- result{k, err} }()
	waitFor(t, "no line saying the load waits", func() bool { return strings.Contains(notice.String(), "waiting for another setup") })
	// The other process's setup: its key file, then its lock released.
	other, err := mustNew(t, t.TempDir()).Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(other.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hash+".keys"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("the load ended while the lock was held: %v", r.err)
	case <-time.After(3 * lockPoll):
	}
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.k.CacheHit || setups.Load() != 0 || !bytes.Equal(circuitstest.Bytes(t, r.k.VK), circuitstest.Bytes(t, other.VK)) {
		t.Fatalf("after the wait: hit %v, %d setups; want the other process's key read", r.k.CacheHit, setups.Load())
	}
	requireProveAndVerify(t, ccs, r.k, 1<<10)
	if lines := strings.Split(strings.TrimSpace(notice.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], c.keyLockPath(hash)) {
		t.Errorf("notice %q, want one line naming the lock", notice.String())
	}
	lock := endedSpan(t, rec, semconv.SpanKeysLock)
	if load := endedSpan(t, rec, semconv.SpanKeyLoad); lock.Parent().SpanID() != load.SpanContext().SpanID() {
		t.Error("keys.lock is not a child of keys.load")
	}
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanKeysSetup || s.Name() == semconv.SpanKeysStore {
			t.Errorf("a %s span although the other process made the key", s.Name())
		}
	}

	// An uncontended lock (its file left by the setup above): no wait, no
	// line, no keys.lock span.
	rec.Reset()
	notice.Reset()
	if _, err := c.Load(context.Background(), compile(t, 1<<9)); err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanKeysLock {
			t.Error("a keys.lock span for a lock nobody held")
		}
	}
	if strings.Contains(notice.String(), "waiting") {
		t.Errorf("an uncontended lock said %q", notice.String())
	}
}

// Two caches on one directory (two processes, or two workers of a daemon)
// loading one key at once run one setup: the second reads the key the
// first stored, so both hold the key on disk.
func TestTwoCachesLoadingOneKeyAtOnceRunOneSetup(t *testing.T) {
	ccs := compile(t, 1<<11)
	dir := t.TempDir()
	var setups atomic.Int32
	keys := make([]*Keys, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range keys {
		c := mustNew(t, dir)
		countSetups(c, &setups)
		wg.Add(1)
		go func() { defer wg.Done(); keys[i], errs[i] = c.Load(context.Background(), ccs) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if setups.Load() != 1 {
		t.Errorf("%d setups of one key, want 1", setups.Load())
	}
	onDisk, err := mustNew(t, dir).Load(context.Background(), ccs)
	if err != nil || !onDisk.CacheHit {
		t.Fatalf("the key on disk: %v", err)
	}
	for i, k := range keys {
		if !bytes.Equal(circuitstest.Bytes(t, k.VK), circuitstest.Bytes(t, onDisk.VK)) {
			t.Errorf("load %d's verifying key is not the one on disk", i)
		}
	}
}

// A lock whose holder was killed does not block: flock is released with
// the process (here a child that inherited the locked file); the load that
// waited then sets up itself. A lock file left by a finished holder is no
// wait at all.
func TestALockWhoseHolderWasKilledDoesNotBlock(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command to hold the lock in a child process")
	}
	ccs := compile(t, 1<<9)
	hash := mustHash(t, ccs)
	dir := t.TempDir()
	var notice syncBuffer
	c := mustNew(t, dir, WithProgress(&notice, false))
	c.progressAfter = time.Hour
	// The child holds the lock through the open file description it
	// inherits; the test's own descriptor is closed once it runs.
	if err := os.MkdirAll(filepath.Dir(c.keyLockPath(hash)), 0o755); err != nil {
		t.Fatal(err)
	}
	locked, err := os.OpenFile(c.keyLockPath(hash), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(locked.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(sleep, "600")
	child.ExtraFiles = []*os.File{locked}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	locked.Close() // the child's descriptor alone holds it now
	if l2, err := os.Open(c.keyLockPath(hash)); err == nil {
		if unix.Flock(int(l2.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			t.Fatal("the child does not hold the lock")
		}
		l2.Close()
	}

	var setups atomic.Int32
	countSetups(c, &setups)
	done := make(chan error, 1)
	go func() { _, err := c.Load(context.Background(), ccs); done <- err }()
	waitFor(t, "no line saying the load waits", func() bool { return strings.Contains(notice.String(), "waiting for another setup") })
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	select {
	case err := <-done:
		if err != nil || setups.Load() != 1 {
			t.Fatalf("after the holder was killed: %v, %d setups; want this load's own setup", err, setups.Load())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the load still waits two minutes after the lock's holder was killed")
	}

	// The lock file is still there, held by nobody: no wait.
	notice.Reset()
	if _, err := mustNew(t, dir, WithProgress(&notice, false)).Load(context.Background(), compile(t, 1<<8)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(notice.String(), "waiting") {
		t.Errorf("a lock file nobody holds: %q", notice.String())
	}
}

// A load whose context ends while it waits for the lock returns ctx's
// error (no *AbandonedError: nothing of it runs on), ends its keys.lock
// span canceled, and leaves no work behind.
func TestALoadCancelledWhileWaitingForTheLockLeavesNothingRunning(t *testing.T) {
	ccs := compile(t, 1<<9)
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	var notice syncBuffer
	c := mustNew(t, dir, WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))), WithProgress(&notice, false))
	var setups atomic.Int32
	countSetups(c, &setups)
	holdLock(t, c.keyLockPath(mustHash(t, ccs)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Load(ctx, ccs); done <- err }()
	waitFor(t, "no line saying the load waits", func() bool { return strings.Contains(notice.String(), "waiting") })
	cancel()
	err := <-done
	var ab *AbandonedError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ab) {
		t.Fatalf("cancelled while waiting for the lock: %v, want context.Canceled, not abandoned work", err)
	}
	waitFor(t, "work still running after its only call left", func() bool { return c.Running() == 0 })
	if setups.Load() != 0 {
		t.Errorf("%d setups after the only call left", setups.Load())
	}
	if et := errorTypeOf(endedSpan(t, rec, semconv.SpanKeysLock)); et != semconv.ErrorTypeCanceled {
		t.Errorf("keys.lock ended with error.type %q, want canceled", et)
	}
}

// A compile that misses while another process compiles the same circuit
// and size (holding its lock) waits (circuit.cache.lock), then reads the
// circuit the other stored: a hit, no compile of its own (the other
// stored no solver plan here: this one makes and stores it).
func TestACompileWaitsForAnotherProcessCompileAndReadsIt(t *testing.T) {
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	var notice syncBuffer
	c := mustNew(t, dir, WithRevision("rev1"), WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))), WithProgress(&notice, false))
	release := holdLock(t, c.circuitLockPath("mulchain", 1<<10))
	comp := &compiler{n: 1 << 10}
	type result struct {
		got *Compiled
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
		done <- result{got, err}
	}()
	waitFor(t, "no line saying the compile waits", func() bool { return strings.Contains(notice.String(), "waiting for another compile") })
	// The other process: the same build's circuit stored, lock released.
	ccs, err := (&compiler{n: 1 << 10}).compile()
	if err != nil {
		t.Fatal(err)
	}
	want := circuitMeta{Circuit: "mulchain", Constraints: 1 << 10, Gnark: gnark.Version.String(), GnarkCrypto: gnarkCryptoVersion(), Revision: "rev1", Format: circuitFormat}
	if _, err := storeCircuit(c.circuitPath("mulchain", 1<<10), ccs, want); err != nil {
		t.Fatal(err)
	}
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.got.CacheHit || comp.calls.Load() != 0 {
		t.Fatalf("after the wait: hit %v, %d compiles; want the other's circuit read", r.got.CacheHit, comp.calls.Load())
	}
	if outcome, children := compileOutcome(t, rec); outcome != CircuitCacheHit ||
		strings.Join(children, ",") != "circuit.cache.read,circuit.cache.lock,circuit.cache.read,circuit.cache.decode,circuit.plan.read,synthesize.plan,circuit.plan.store" {
		t.Errorf("compile after the wait: %s with %v", outcome, children)
	}
}
