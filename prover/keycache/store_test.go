package keycache

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/keycache/keycachetest"
)

// TestAnUnwritableCacheDirectoryAsAnotherUser runs the test below as the
// user nobody when the tests run as root (whom a directory's mode does not
// stop), so that its existing read-only directory is tried everywhere.
func TestAnUnwritableCacheDirectoryAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: TestAnUnwritableCacheDirectoryProvesUncachedWithOneLine tries mode 0555 itself")
	}
	// The test binary, where nobody may run it.
	dir := t.TempDir()
	exe := filepath.Join(dir, "keycache.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe, "-test.run=^TestAnUnwritableCacheDirectoryProvesUncachedWithOneLine$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		t.Skipf("cannot run as nobody: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAnUnwritableCacheDirectoryProvesUncachedWithOneLine/mode_0555") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// A cache directory nothing can be stored in costs a compile and a setup,
// not the proof: Compile and Load return the circuit and keys made in
// memory (no Path), one line says where and why nothing is stored, the
// store spans fail, the keys prove and verify, and Writable says why.
func TestAnUnwritableCacheDirectoryProvesUncachedWithOneLine(t *testing.T) {
	for how, dir := range keycachetest.UnwritableDirs(t) {
		t.Run(how, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			var notice bytes.Buffer
			c, err := New(dir, WithRevision("rev1"), WithProgress(&notice, false),
				WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
			if err != nil {
				t.Fatalf("New on a directory that cannot be written: %v, want a cache that stores nothing", err)
			}
			c.progressAfter = time.Hour
			if c.Writable() == nil {
				t.Fatal("Writable: nil")
			}
			comp := &compiler{n: 1 << 9}
			got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
			if err != nil {
				t.Fatalf("Compile with an unwritable cache: %v, want the circuit compiled in memory", err)
			}
			if got.Path != "" || got.CacheHit {
				t.Errorf("compiled circuit: path %q, hit %v; want in memory only", got.Path, got.CacheHit)
			}
			k, err := c.LoadHashed(context.Background(), got.CCS, got.Hash)
			if err != nil {
				t.Fatalf("LoadHashed with an unwritable cache: %v, want the keys made in memory", err)
			}
			if k.Path != "" || k.CacheHit {
				t.Errorf("keys: path %q, hit %v; want in memory only", k.Path, k.CacheHit)
			}
			requireProveAndVerify(t, got.CCS, k, 1<<9)
			lines := strings.Split(strings.TrimSpace(notice.String()), "\n")
			var store []string
			for _, l := range lines {
				if !strings.HasPrefix(l, "circuit cache: keyed") {
					store = append(store, l)
				}
			}
			if len(store) != 1 || !strings.Contains(store[0], "nothing can be stored in the cache directory "+dir+" (") ||
				!strings.Contains(store[0], "(first the compiled circuit) is used from memory and not kept") {
				t.Errorf("notice %q, want one line naming the directory and why", notice.String())
			}
			failed := map[string]bool{}
			for _, s := range rec.Ended() {
				if s.Status().Code == codes.Error {
					failed[s.Name()] = true
				}
			}
			if !failed[semconv.SpanCircuitCacheStore] || !failed[semconv.SpanKeysStore] || failed[semconv.SpanCircuitCompile] || failed[semconv.SpanKeyLoad] {
				t.Errorf("failed spans %v, want the two stores only", failed)
			}
		})
	}
}

// CheckDir says before any Cache is opened what the Cache's Writable
// would say; a Cache WithoutUnwritableNotice stores nothing there either,
// without its line (its caller said so at start: cuzk serve).
func TestCheckDirSaysWhatWritableWouldAndTheNoticeCanBeLeftOut(t *testing.T) {
	if err := CheckDir(filepath.Join(t.TempDir(), "new", "cache")); err != nil {
		t.Errorf("CheckDir of a directory it can make: %v", err)
	}
	for how, dir := range keycachetest.UnwritableDirs(t) {
		t.Run(how, func(t *testing.T) {
			err := CheckDir(dir)
			var notice bytes.Buffer
			c, cerr := New(dir, WithRevision("rev1"), WithProgress(&notice, false), WithoutUnwritableNotice())
			if cerr != nil {
				t.Fatal(cerr)
			}
			if err == nil || c.Writable() == nil || err.Error() != c.Writable().Error() {
				t.Fatalf("CheckDir: %v; Writable: %v; want the same error", err, c.Writable())
			}
			c.progressAfter = time.Hour
			comp := &compiler{n: 1 << 9}
			got, err := c.Compile(context.Background(), "mulchain", 1<<9, comp.compile)
			if err != nil || got.Path != "" {
				t.Fatalf("Compile: %v, path %q; want the circuit in memory", err, got.Path)
			}
			if strings.Contains(notice.String(), "nothing can be stored") {
				t.Errorf("notice %q: the line was said despite WithoutUnwritableNotice", notice.String())
			}
		})
	}
}

// A cache directory that holds the circuit and keys but cannot take the
// solver plan (it became read-only after they were stored): the circuit
// and keys are read from it, and the one line names the plan as what is
// not kept, not "the compiled circuit and keys in memory", which were
// not made.
func TestAReadOnlyCacheWithTheCircuitAndKeysSaysOnlyThePlanIsNotKept(t *testing.T) {
	dir := t.TempDir()
	stored := compilePlanRun(t, dir)
	if _, err := mustNew(t, dir).LoadHashed(context.Background(), stored.comp.CCS, stored.comp.Hash); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(planPath(stored.comp.Path)); err != nil {
		t.Fatal(err)
	}
	var notice bytes.Buffer
	c := mustNew(t, dir, WithRevision("rev1"), WithProgress(&notice, false))
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	} else {
		// Root writes through a mode: the refusal New or a failed
		// store would have found.
		c.unwritable = &os.PathError{Op: "open", Path: filepath.Join(dir, "probe"), Err: syscall.EACCES}
	}
	comp, err := c.Compile(context.Background(), "mulchain", 1<<10, (&compiler{n: 1 << 10}).compile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.LoadHashed(context.Background(), comp.CCS, comp.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !comp.CacheHit || !k.CacheHit {
		t.Fatalf("circuit hit %v, keys hit %v: want both read from the cache", comp.CacheHit, k.CacheHit)
	}
	requireProveAndVerify(t, comp.CCS, k, 1<<10)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(notice.String()), "\n") {
		if !strings.HasPrefix(l, "circuit cache: keyed") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "nothing can be stored in the cache directory "+dir+" (permission denied)") ||
		!strings.Contains(lines[0], "(first the solver plan)") || strings.Contains(lines[0], "keys in memory") {
		t.Errorf("said %q, want one line naming the directory, why, and the solver plan as what is not kept", notice.String())
	}
	if _, err := os.Stat(planPath(comp.Path)); err == nil {
		t.Error("a plan was stored in a directory that cannot take one")
	}
}
