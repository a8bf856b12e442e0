package keycache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark"
	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

func TestBuildRevisionIsRefusedForAModifiedTreeOrNoVCSInfo(t *testing.T) {
	setting := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, c := range []struct {
		bi       *debug.BuildInfo
		rev, why string
	}{
		{setting("vcs.revision", "abc123", "vcs.modified", "false"), "abc123", ""},
		{setting("vcs.revision", "abc123", "vcs.modified", "true"), "", "modified tree"},
		{setting("vcs", "git"), "", "no VCS revision"},
		{setting(), "", "no VCS revision"},
	} {
		rev, why := revisionOf(c.bi)
		if rev != c.rev || (c.why == "") != (why == "") || !strings.Contains(why, c.why) || strings.Contains(why, "\n") {
			t.Errorf("revisionOf(%v) = %q, %q; want %q and a reason with %q", c.bi.Settings, rev, why, c.rev, c.why)
		}
	}
	// This test binary has no VCS information: the cache is off unless a
	// revision is given.
	if rev, why := BuildRevision(); rev != "" || why == "" {
		t.Errorf("BuildRevision in a test binary = %q, %q", rev, why)
	}
}

// compiler compiles mulchain at n and counts its calls.
type compiler struct {
	n     int
	calls atomic.Int32
}

func (c *compiler) compile() (constraint.ConstraintSystem, error) {
	c.calls.Add(1)
	in, err := circuits.Build("mulchain", c.n)
	if err != nil {
		return nil, err
	}
	return in.Compile()
}

func compileOutcome(t *testing.T, rec *tracetest.SpanRecorder) (outcome string, children []string) {
	t.Helper()
	var compile sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanCircuitCompile {
			compile = s
		}
	}
	if compile == nil {
		t.Fatal("no circuit.compile span")
	}
	for _, a := range compile.Attributes() {
		if a.Key == semconv.KeyCircuitCache {
			outcome = a.Value.AsString()
		}
	}
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == compile.SpanContext().SpanID() {
			children = append(children, s.Name())
		}
	}
	rec.Reset()
	return outcome, children
}

func TestCompiledCircuitIsCachedBesideTheKeysAndReadBack(t *testing.T) {
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	comp := &compiler{n: 1 << 10}
	var notice bytes.Buffer
	c, _ := New(dir, WithRevision("rev1"), WithTracerProvider(tp), WithProgress(&notice, false))
	first, err := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
	if err != nil {
		t.Fatal(err)
	}
	if first.CacheHit || comp.calls.Load() != 1 {
		t.Fatalf("first compile: hit %v, %d compiles", first.CacheHit, comp.calls.Load())
	}
	if outcome, children := compileOutcome(t, rec); outcome != CircuitCacheMiss ||
		strings.Join(children, ",") != "circuit.cache.read,circuit.frontend,circuit.cache.store,synthesize.plan,circuit.plan.store" {
		t.Errorf("first compile: %s with %v", outcome, children)
	}
	want, err := Hash(first.CCS)
	if err != nil || first.Hash != want {
		t.Fatalf("stored hash %s, Hash says %s", first.Hash, want)
	}

	c2, _ := New(dir, WithRevision("rev1"), WithTracerProvider(tp), WithProgress(&notice, false))
	second, err := c2.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
	if err != nil {
		t.Fatal(err)
	}
	if !second.CacheHit || comp.calls.Load() != 1 {
		t.Fatalf("second compile: hit %v, %d compiles; want a hit without compiling", second.CacheHit, comp.calls.Load())
	}
	if second.Hash != want || !bytes.Equal(circuitstest.Bytes(t, second.CCS), circuitstest.Bytes(t, first.CCS)) {
		t.Fatal("cached circuit differs from the compiled one")
	}
	if outcome, children := compileOutcome(t, rec); outcome != CircuitCacheHit ||
		strings.Join(children, ",") != "circuit.cache.read,circuit.cache.decode,circuit.plan.read" {
		t.Errorf("second compile: %s with %v", outcome, children)
	}
	// The cached circuit's keys are the compiled circuit's.
	k, err := c2.LoadHashed(context.Background(), second.CCS, second.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if k2, err := c2.Load(context.Background(), first.CCS); err != nil || !k2.CacheHit || k2.Hash != k.Hash {
		t.Fatalf("keys of the compiled circuit: %v, %v", k2, err)
	}
	// The key setup above may say it runs long (it does past 2 s, as on
	// a loaded machine); the circuit cache says nothing on a clean hit.
	if strings.Contains(notice.String(), "circuit cache") {
		t.Errorf("circuit cache notices on a clean hit: %q", notice.String())
	}
}

func TestCircuitCacheIsInvalidatedByBuildSizeAndGnarkVersion(t *testing.T) {
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	comp := &compiler{n: 1 << 10}
	open := func(rev string) *Cache {
		c, _ := New(dir, WithRevision(rev), WithTracerProvider(tp))
		return c
	}
	if _, err := open("rev1").Compile(context.Background(), "mulchain", 1<<10, comp.compile); err != nil {
		t.Fatal(err)
	}
	rec.Reset()
	// Another build: compiled again, into a file of its own.
	if got, err := open("rev2").Compile(context.Background(), "mulchain", 1<<10, comp.compile); err != nil || got.CacheHit {
		t.Fatalf("another revision: hit %v, %v", got.CacheHit, err)
	}
	if outcome, _ := compileOutcome(t, rec); outcome != CircuitCacheMiss {
		t.Errorf("another revision: %s, want miss", outcome)
	}
	if got, _ := open("rev2").Compile(context.Background(), "mulchain", 1<<10, comp.compile); !got.CacheHit {
		t.Error("stored file not used by its build")
	}
	// Another size is another file.
	other := &compiler{n: 1 << 9}
	if got, _ := open("rev2").Compile(context.Background(), "mulchain", 1<<9, other.compile); got.CacheHit {
		t.Error("another size hit the cache")
	}
	if got, _ := open("rev2").Compile(context.Background(), "mulchain", 1<<10, comp.compile); !got.CacheHit {
		t.Error("one size's file replaced by another's")
	}
	// Another gnark version: the stored metadata differs.
	c := open("rev2")
	path := c.circuitPath("mulchain", 1<<10)
	ccs, _ := comp.compile()
	for _, old := range []circuitMeta{
		{Circuit: "mulchain", Constraints: 1 << 10, Gnark: "0.9.0", GnarkCrypto: gnarkCryptoVersion(), Revision: "rev2", Format: circuitFormat},
		{Circuit: "mulchain", Constraints: 1 << 10, Gnark: gnark.Version.String(), GnarkCrypto: gnarkCryptoVersion(), Revision: "rev2", Format: 1},
	} {
		if _, err := storeCircuit(path, ccs, old); err != nil {
			t.Fatal(err)
		}
		rec.Reset()
		if got, _ := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile); got.CacheHit {
			t.Errorf("a circuit stored by gnark %s in format %d was used", old.Gnark, old.Format)
		}
		if outcome, _ := compileOutcome(t, rec); outcome != CircuitCacheStale {
			t.Errorf("gnark %s, format %d: %s, want stale", old.Gnark, old.Format, outcome)
		}
	}
}

// Builds that alternate on one cache (go run and an installed cuzk) each
// keep their entry of a circuit and size and both hit; a fourth build's
// entry evicts the least recently used (a hit renews an entry), and a file
// of the layout before build tags goes with the first store.
func TestAlternatingBuildsBothHitAndTheLeastRecentlyUsedEntryIsEvicted(t *testing.T) {
	dir := t.TempDir()
	comp := &compiler{n: 1 << 9}
	compile := func(rev string) *Compiled {
		t.Helper()
		c, _ := New(dir, WithRevision(rev), WithProgress(io.Discard, false))
		got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	path := func(rev string) string {
		c, _ := New(dir, WithRevision(rev))
		return c.CircuitPath("mulchain", 1<<9)
	}
	legacy := filepath.Join(dir, "circuit-mulchain-512.ccs")
	if err := os.WriteFile(legacy, []byte("a file of the layout before build tags"), 0o644); err != nil {
		t.Fatal(err)
	}
	compile("rev1")
	if _, err := os.Stat(legacy); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file of the older layout is still there after a store: %v", err)
	}
	compile("rev2")
	for i := 0; i < 2; i++ {
		for _, rev := range []string{"rev1", "rev2"} {
			if got := compile(rev); !got.CacheHit || got.Path != path(rev) {
				t.Fatalf("round %d, %s: hit %v at %q; want its own entry %s", i, rev, got.CacheHit, got.Path, path(rev))
			}
		}
	}
	if n := comp.calls.Load(); n != 2 {
		t.Fatalf("%d compiles for two builds alternating, want 2", n)
	}
	// rev1 stored earliest, rev2 later, then rev1 used last: rev2 is the
	// least recently used when rev3 and rev4 are stored (times set, so
	// that a coarse file-system clock cannot tie them).
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path("rev1"), old, old)
	os.Chtimes(path("rev2"), old.Add(time.Minute), old.Add(time.Minute))
	compile("rev1")
	compile("rev3")
	compile("rev4")
	for rev, kept := range map[string]bool{"rev1": true, "rev2": false, "rev3": true, "rev4": true} {
		if _, err := os.Stat(path(rev)); (err == nil) != kept {
			t.Errorf("%s's entry: %v, want kept %v", rev, err, kept)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "circuit-mulchain-512.*.ccs")); len(files) != circuitEntriesMax {
		t.Errorf("entries %v, want %d", files, circuitEntriesMax)
	}
	// Each entry kept has its solver plan; the evicted one's went with it.
	for rev, kept := range map[string]bool{"rev1": true, "rev2": false, "rev3": true, "rev4": true} {
		if _, err := os.Stat(planPath(path(rev))); (err == nil) != kept {
			t.Errorf("%s's plan: %v, want kept %v", rev, err, kept)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "circuit-mulchain-512.*")); len(files) != 2*circuitEntriesMax {
		t.Errorf("files %v, want %d entries of a circuit and a plan", files, circuitEntriesMax)
	}
	if compile("rev2").CacheHit {
		t.Error("the evicted entry hit")
	}
}

func TestCircuitCacheIsOffWithAnEmptyRevisionAndSaysSoOnce(t *testing.T) {
	dir := t.TempDir()
	var notice bytes.Buffer
	c, _ := New(dir, WithRevision(""), WithProgress(&notice, false))
	comp := &compiler{n: 1 << 9}
	for i := 0; i < 2; i++ {
		got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
		if err != nil || got.CacheHit || got.Hash != "" {
			t.Fatalf("compile %d: %+v, %v", i, got, err)
		}
	}
	if comp.calls.Load() != 2 {
		t.Errorf("%d compiles, want 2 (nothing reused)", comp.calls.Load())
	}
	if _, err := os.Stat(c.circuitPath("mulchain", 1<<9)); !os.IsNotExist(err) {
		t.Error("a circuit was stored with the cache off")
	}
	if lines := strings.Split(strings.TrimSpace(notice.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "circuit cache: off") {
		t.Errorf("notice %q, want one line saying why the cache is off", notice.String())
	}
}

// A test binary carries no VCS revision, as go run's and -buildvcs=false's
// do: its circuit cache is keyed by its executable, and a second cache
// (a second run) reuses the compiled circuit.
func TestCircuitCacheOfABinaryWithoutARevisionIsKeyedByItsExecutable(t *testing.T) {
	dir := t.TempDir()
	comp := &compiler{n: 1 << 9}
	var notice bytes.Buffer
	for i := 0; i < 2; i++ {
		c, _ := New(dir, WithProgress(&notice, false))
		key, _ := c.Key()
		if !strings.HasPrefix(key, keyExecPrefix) || len(key) != len(keyExecPrefix)+64 {
			t.Fatalf("key %q, want the executable's SHA-256", key)
		}
		got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
		if err != nil || got.CacheHit != (i == 1) || got.Hash == "" {
			t.Fatalf("run %d: hit %v, hash %q, %v", i, got.CacheHit, got.Hash, err)
		}
	}
	if comp.calls.Load() != 1 {
		t.Errorf("%d compiles, want 1", comp.calls.Load())
	}
	if lines := strings.Split(strings.TrimSpace(notice.String()), "\n"); len(lines) != 2 ||
		!strings.Contains(lines[0], "keyed by the executable's SHA-256") || !strings.Contains(lines[0], "no VCS revision") {
		t.Errorf("notice %q, want one line per run naming the key", notice.String())
	}
	// No bracket inside a bracket ("(the binary carries no VCS revision
	// (go run, go test or -buildvcs=false))").
	depth := 0
	for _, r := range notice.String() {
		switch r {
		case '(':
			if depth++; depth > 1 {
				t.Fatalf("notice %q nests brackets", notice.String())
			}
		case ')':
			depth--
		}
	}
}

// Any change of the binary is another key: the cached circuit is stale
// and compiled again; the same binary is hashed once, then known by path,
// size and modification time from the memo file, also in a new process.
func TestCircuitCacheMissesAfterTheExecutableChanges(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(t.TempDir(), "cuzk")
	os.WriteFile(exe, []byte("binary one"), 0o755)
	hashes := 0
	hashFile = func(p string) (string, error) { hashes++; return sha256File(p) }
	defer func() { hashFile = sha256File }()
	forget := func() { exeMu.Lock(); clear(exeHashed); exeMu.Unlock() } // a new process
	comp := &compiler{n: 1 << 9}
	compile := func() *Compiled {
		t.Helper()
		c, _ := New(dir, withExecutable(exe), WithProgress(io.Discard, false))
		got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if compile().CacheHit {
		t.Fatal("first run hit")
	}
	forget()
	if !compile().CacheHit {
		t.Fatal("same binary, second run: miss")
	}
	if hashes != 1 {
		t.Errorf("%d hashes of an unchanged binary, want 1 (then the memo)", hashes)
	}
	st, _ := os.Stat(exe)
	for i, change := range []func(){
		// Same size, other bytes, a later time (as a rebuild writes it).
		func() {
			os.WriteFile(exe, []byte("binary two"), 0o755)
			os.Chtimes(exe, st.ModTime(), st.ModTime().Add(time.Second))
		},
		func() { os.WriteFile(exe, []byte("binary three, longer"), 0o755) },
	} {
		change()
		forget()
		c, _ := New(dir, withExecutable(exe))
		key, _ := c.Key()
		want, _ := sha256File(exe)
		if key != keyExecPrefix+want {
			t.Fatalf("change %d: key %q, want the new bytes' hash", i, key)
		}
		got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
		if err != nil || got.CacheHit {
			t.Fatalf("change %d: hit %v, %v; want a compile", i, got.CacheHit, err)
		}
	}
	if comp.calls.Load() != 3 {
		t.Errorf("%d compiles, want 3 (first run, after each change)", comp.calls.Load())
	}
	if _, _, err := ExecutableKey(filepath.Join(dir, "nosuch"), dir); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing executable: %v, want a one-line error", err)
	}
}

func TestCorruptCachedCircuitIsRebuiltWithAOneLineWarning(t *testing.T) {
	dir := t.TempDir()
	comp := &compiler{n: 1 << 10}
	c, _ := New(dir, WithRevision("rev1"))
	first, err := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
	if err != nil {
		t.Fatal(err)
	}
	path := c.circuitPath("mulchain", 1<<10)
	data, _ := os.ReadFile(path)
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { b[len(b)/3] ^= 0x40; return b },       // a flipped bit
		func(b []byte) []byte { return b[:len(b)/2] },                 // cut short
		func(b []byte) []byte { return []byte("not a circuit file") }, // something else
	} {
		os.WriteFile(path, damage(bytes.Clone(data)), 0o644)
		var notice bytes.Buffer
		c2, _ := New(dir, WithRevision("rev1"), WithProgress(&notice, false))
		got, err := c2.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
		if err != nil {
			t.Fatal(err)
		}
		if got.CacheHit || got.Hash != first.Hash {
			t.Fatalf("damaged file: hit %v, hash %s", got.CacheHit, got.Hash)
		}
		if lines := strings.Split(strings.TrimSpace(notice.String()), "\n"); len(lines) != 1 ||
			!strings.Contains(lines[0], "unreadable") || !strings.Contains(lines[0], "compiling again") {
			t.Errorf("notice %q, want one line", notice.String())
		}
		if again, _ := c2.Compile(context.Background(), "mulchain", 1<<10, comp.compile); !again.CacheHit {
			t.Error("damaged file not rebuilt")
		}
	}
}

// A compile that runs past progressAfter says so in one line (the first
// of a circuit here with no estimate; the next, of another size, with one
// from the last compile measured), on a log a line only; on a terminal
// (forced here) a bar follows. The first go run's compile of a large size
// printed nothing for seconds.
func TestALongCompileSaysSoWithAnEstimateFromTheLastOne(t *testing.T) {
	dir := t.TempDir()
	slow := func(n int) func() (constraint.ConstraintSystem, error) {
		return func() (constraint.ConstraintSystem, error) {
			time.Sleep(300 * time.Millisecond)
			return (&compiler{n: n}).compile()
		}
	}
	var out syncBuffer
	c, _ := New(dir, WithRevision("rev1"), WithProgress(&out, false))
	c.progressAfter = 10 * time.Millisecond
	if _, err := c.Compile(context.Background(), "mulchain", 1<<10, slow(1<<10)); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "circuit compile: mulchain, 1024 constraints; the first compile of it here has no estimate\n" {
		t.Errorf("first long compile, not a terminal: %q", got)
	}
	out.Reset()
	c2, _ := New(dir, WithRevision("rev1"), WithProgress(&out, true))
	c2.progressAfter = 10 * time.Millisecond
	if _, err := c2.Compile(context.Background(), "mulchain", 1<<11, slow(1<<11)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "circuit compile: mulchain, 2048 constraints; about ") || !strings.Contains(got, " in all, from the last compile measured here\n") ||
		!strings.Contains(got, "circuit compile, mulchain/2048") {
		t.Errorf("second long compile, forced bar: %q, want the line with an estimate, then the bar", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// OnStoredHash hears a cached circuit's hash and size before its decode
// begins (and nothing on a miss); LoadCached reads the keys filed under
// it, and says fs.ErrNotExist, running no setup, where there are none.
func TestStoredHashIsHeardBeforeTheDecodeAndNamesTheKeys(t *testing.T) {
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	comp := &compiler{n: 1 << 10}
	type heard struct {
		hash string
		n    int
		at   time.Time
	}
	var got []heard
	hear := OnStoredHash(context.Background(), func(h string, n int) { got = append(got, heard{h, n, time.Now()}) })
	c, _ := New(dir, WithRevision("rev1"), WithTracerProvider(tp))
	first, err := c.Compile(hear, "mulchain", 1<<10, comp.compile)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("a compile (cache miss) reported stored hashes %v", got)
	}
	if _, err := c.LoadCached(context.Background(), first.Hash, 1<<10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadCached before any setup: %v, want fs.ErrNotExist", err)
	}
	if _, err := c.LoadHashed(context.Background(), first.CCS, first.Hash); err != nil {
		t.Fatal(err)
	}
	c2, _ := New(dir, WithRevision("rev1"), WithTracerProvider(tp))
	second, err := c2.Compile(hear, "mulchain", 1<<10, comp.compile)
	if err != nil || !second.CacheHit {
		t.Fatalf("second compile: %v, hit %v", err, second != nil && second.CacheHit)
	}
	if len(got) != 1 || got[0].hash != second.Hash || got[0].n != second.CCS.GetNbConstraints() {
		t.Fatalf("heard %+v, want the hash %s and %d constraints once", got, second.Hash, second.CCS.GetNbConstraints())
	}
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanCircuitCacheDecode && s.StartTime().Before(got[0].at) {
			t.Errorf("circuit.cache.decode began %v before the hash was heard", got[0].at.Sub(s.StartTime()))
		}
	}
	k, err := c2.LoadCached(context.Background(), got[0].hash, got[0].n)
	if err != nil || !k.CacheHit || k.Hash != second.Hash || k.PK == nil {
		t.Fatalf("LoadCached: %+v, %v", k, err)
	}
}
