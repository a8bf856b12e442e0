package keycache

import (
	"context"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// goRunCopy copies the test binary (a Go ELF with a build ID, as go run
// links) to a fresh directory, as go run does on each run, with a new
// modification time; change edits its bytes first.
func goRunCopy(t *testing.T, change func([]byte) []byte) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		b = change(b)
	}
	exe := filepath.Join(t.TempDir(), "go-build", "exe", "cuzk")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Duration(len(t.TempDir())) * time.Millisecond)
	os.Chtimes(exe, later, later)
	return exe
}

// buildIDOffset is where the test binary's Go build ID lies in its file.
func buildIDOffset(t *testing.T, b []byte) (int, int) {
	t.Helper()
	self, _ := os.Executable()
	ef, err := elf.Open(self)
	if err != nil {
		t.Skipf("not an ELF test binary: %v", err)
	}
	defer ef.Close()
	id := goBuildID(ef)
	sec := ef.Section(".note.go.buildid")
	if id == "" || sec == nil {
		t.Skip("the test binary has no Go build ID")
	}
	off := int(sec.Offset) + strings.Index(string(b[sec.Offset:sec.Offset+sec.Size]), id)
	return off, len(id)
}

// The bug: go run links to a new temporary path each run, so the
// memo by path, size and time never hit and every run hashed the whole
// executable. The same binary at a new path is now found by its identity
// (build ID, size, sample) without hashing, in a circuit.cache.key span
// saying so; any change of the binary is a miss: hashed, compiled again.
func TestGoRunBinaryAtANewPathHitsWithoutHashingAndAnyChangeMisses(t *testing.T) {
	dir := t.TempDir()
	hashes := 0
	hashFile = func(p string) (string, error) { hashes++; return sha256File(p) }
	defer func() { hashFile = sha256File }()
	comp := &compiler{n: 1 << 9}
	run := func(exe string) (hit bool, source string) {
		t.Helper()
		exeMu.Lock()
		clear(exeHashed) // a new process
		exeMu.Unlock()
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		c, _ := New(dir, withExecutable(exe), WithProgress(io.Discard, false), WithTracerProvider(tp))
		got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := sha256File(exe)
		if key, _ := c.Key(); key != keyExecPrefix+want {
			t.Fatalf("%s: key %q, want the bytes' SHA-256 %s", exe, key, want)
		}
		return got.CacheHit, c.keySource
	}
	if hit, src := run(goRunCopy(t, nil)); hit || src != KeySourceHash || hashes != 1 {
		t.Fatalf("first run: hit %v, source %q, %d hashes; want a miss, hashed once", hit, src, hashes)
	}
	for i := 0; i < 2; i++ {
		if hit, src := run(goRunCopy(t, nil)); !hit || src != KeySourceIdentity || hashes != 1 {
			t.Fatalf("go run %d at a new path: hit %v, source %q, %d hashes; want a hit by identity, no hash", i+2, hit, src, hashes)
		}
	}

	// The span, from a new process's first compile.
	exeMu.Lock()
	clear(exeHashed)
	exeMu.Unlock()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c, _ := New(dir, withExecutable(goRunCopy(t, nil)), WithProgress(io.Discard, false), WithTracerProvider(tp))
	if _, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile); err != nil {
		t.Fatal(err)
	}
	var keySpan, compile sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		switch s.Name() {
		case semconv.SpanCircuitCacheKey:
			keySpan = s
		case semconv.SpanCircuitCompile:
			compile = s
		}
	}
	if keySpan == nil || compile == nil || keySpan.Parent().SpanID() != compile.SpanContext().SpanID() {
		t.Fatalf("want a circuit.cache.key span under circuit.compile; got key %v, compile %v", keySpan, compile)
	}
	if got := attrString(keySpan, semconv.KeyCircuitCacheKeySource); got != KeySourceIdentity {
		t.Errorf("key_source %q, want %q", got, KeySourceIdentity)
	}

	self, _ := os.Executable()
	orig, _ := os.ReadFile(self)
	idOff, idLen := buildIDOffset(t, orig)
	compiles := comp.calls.Load()
	for name, change := range map[string]func([]byte) []byte{
		// A rebuild: the linker writes another build ID (same size here).
		"another build ID": func(b []byte) []byte {
			b[idOff+idLen-1] ^= 1
			return b
		},
		// Edited after the link, the build ID kept: a byte of a sampled piece.
		"a sampled byte": func(b []byte) []byte {
			b[(int64(len(b))-4096)*7/(exeSamples-1)+100] ^= 0x80
			return b
		},
		"a byte appended": func(b []byte) []byte { return append(b, 0) },
	} {
		before := hashes
		if hit, src := run(goRunCopy(t, change)); hit || src != KeySourceHash || hashes != before+1 {
			t.Errorf("%s: hit %v, source %q, %d hashes; want a miss, hashed", name, hit, src, hashes-before)
		}
	}
	if n := comp.calls.Load() - compiles; n != 3 {
		t.Errorf("%d compiles after the 3 changes, want 3", n)
	}
}

// The memo keeps the exeMemoMax most recently used executables (go run
// leaves a new path each run).
func TestExecutableMemoKeepsTheMostRecentlyUsed(t *testing.T) {
	memo := map[string]exeStamp{}
	for i := 0; i < exeMemoMax+10; i++ {
		memo[filepath.Join("/tmp", "go-build", string(rune('a'+i%26)), time.Duration(i).String())] = exeStamp{UsedNano: int64(i)}
	}
	pruneMemo(memo)
	if len(memo) != exeMemoMax {
		t.Fatalf("%d entries, want %d", len(memo), exeMemoMax)
	}
	for _, s := range memo {
		if s.UsedNano < 10 {
			t.Errorf("kept entry used at %d, one of the 10 oldest", s.UsedNano)
		}
	}
}

func attrString(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, a := range s.Attributes() {
		if a.Key == k {
			return a.Value.AsString()
		}
	}
	return ""
}
